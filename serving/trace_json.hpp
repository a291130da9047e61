// A replayed trace as a Chrome / Perfetto trace (docs/serving.md "Trace"): a track per request
// with its wait-and-prefill span (arrival to first token) and its decode span (first token to
// finish), and counter tracks of the steps (KV blocks held, running and waiting requests, tokens
// per step).
#pragma once

#include <string>
#include <vector>

#include "serving/request_trace.hpp"
#include "serving/scheduler.hpp"

namespace npusim::serving {

std::string serving_trace_json(const std::vector<Request>& requests, const ServingResult& result,
                               const std::string& title);

}  // namespace npusim::serving
