// What a replayed trace means for its users: latency distributions (time to first token, time per
// output token, end to end), throughput, goodput under latency targets, energy per token and the
// KV cache's occupancy (docs/serving.md defines each).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "serving/request_trace.hpp"
#include "serving/scheduler.hpp"

namespace npusim::serving {

// Percentiles by linear interpolation between order statistics (numpy's default).
struct Distribution {
  int64_t count = 0;
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
};
Distribution distribution(std::vector<double> values);

struct ServingSummary {
  Distribution ttft_s, tpot_s, e2e_s;  // tpot over requests with more than one output token
  double makespan_s = 0;               // first arrival to last finish
  int64_t requests = 0, prompt_tokens = 0, generated_tokens = 0, steps = 0, preemptions = 0;
  double tokens_per_s = 0, requests_per_s = 0;
  // Requests that met every given target (a target of 0 is not set), and their rate.
  int64_t requests_within_slo = 0;
  double goodput_requests_per_s = 0;
  double energy_j = 0, energy_per_token_j = 0;
  int64_t peak_kv_blocks = 0;
  double mean_kv_blocks = 0;  // time-weighted over the steps
};

// A request's time per output token: its decode span over its tokens after the first (the
// request must have more than one).
double tpot(const Request& r, const RequestOutcome& o);

ServingSummary summarize(const std::vector<Request>& requests, const ServingResult& result,
                         double slo_ttft_s = 0, double slo_tpot_s = 0);

// Per request, in trace order: id, arrival, first token, finish, TTFT, TPOT, end to end, tokens,
// preemptions (docs/serving.md); `tpot_s` is empty for a single-token request.
std::string requests_csv(const std::vector<Request>& requests, const ServingResult& result);

}  // namespace npusim::serving
