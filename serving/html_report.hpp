// The self-contained HTML report of a replayed trace (`npusim serve --html`, docs/serving.md): one
// page of plain JS and SVG (traces/html/serving.html, compiled into the binary) with the data
// inlined as JSON, no network. Sections: the summary and latency percentiles (stats.json's
// "serving"), the distributions of TTFT, TPOT and end-to-end latency against the targets, a track
// per request (wait + prefill, decode, preemptions), and the steps over time: KV blocks held
// against the capacity, running and waiting requests, prefill and decode tokens, power.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "serving/request_trace.hpp"
#include "serving/scheduler.hpp"

namespace npusim::serving {

// Requests drawn as tracks (the distributions use every request).
inline constexpr int64_t kHtmlMaxRequestTracks = 2000;
// Above this many steps, consecutive steps are drawn merged (see html_report.cpp).
inline constexpr size_t kHtmlMaxSteps = 3000;

// `stats`: the run's stats.json (its "serving" section and the hardware, workload and dtype).
std::string serving_html_report(const std::vector<Request>& requests, const ServingResult& result,
                                const nlohmann::json& stats);

}  // namespace npusim::serving
