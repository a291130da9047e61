#include "serving/html_report.hpp"

#include <algorithm>

#include "serving/metrics.hpp"
#include "support/error.hpp"
#include "support/text_escape.hpp"

namespace npusim::serving {

namespace {

using nlohmann::json;

// The steps as drawn: every step, or above kHtmlMaxSteps groups of consecutive steps, each
// spanning its first step's start to its last step's end, with the largest KV blocks held,
// running and waiting requests of the group, its mean tokens per step and its total energy (so
// that energy over the span is the group's average power).
json step_rows(const std::vector<StepRecord>& steps) {
  const size_t group = std::max<size_t>(1, (steps.size() + kHtmlMaxSteps - 1) / kHtmlMaxSteps);
  json out = json::array();
  for (size_t i = 0; i < steps.size(); i += group) {
    const size_t end = std::min(steps.size(), i + group);
    int64_t kv = 0, running = 0, waiting = 0, prefill = 0, decode = 0;
    double energy = 0;
    for (size_t k = i; k < end; ++k) {
      kv = std::max(kv, steps[k].kv_blocks_used);
      running = std::max(running, steps[k].running);
      waiting = std::max(waiting, steps[k].waiting);
      prefill += steps[k].prefill_tokens;
      decode += steps[k].decode_tokens;
      energy += steps[k].energy_j;
    }
    const double n = double(end - i);
    out.push_back({{"start_s", steps[i].start_s},
                   {"end_s", steps[end - 1].end_s},
                   {"kv_blocks", kv},
                   {"running", running},
                   {"waiting", waiting},
                   {"prefill_tokens", double(prefill) / n},
                   {"decode_tokens", double(decode) / n},
                   {"energy_j", energy}});
  }
  return out;
}

}  // namespace

std::string serving_html_report(const std::vector<Request>& requests, const ServingResult& result,
                                const nlohmann::json& stats) {
  NPUSIM_CHECK(requests.size() == result.requests.size(), "serve html: {} requests but {} outcomes",
               requests.size(), result.requests.size());
  json data;
  for (const char* key : {"hardware", "workload", "dtype", "serving"}) data[key] = stats.at(key);
  data["max_request_tracks"] = kHtmlMaxRequestTracks;
  json rows = json::array();
  for (size_t i = 0; i < requests.size(); ++i) {
    const Request& r = requests[i];
    const RequestOutcome& o = result.requests[i];
    rows.push_back({{"id", printable_text(r.id)},
                    {"arrival_s", r.arrival_s},
                    {"first_token_s", o.first_token_s},
                    {"finish_s", o.finish_s},
                    {"tpot_s", r.output_tokens > 1 ? json(tpot(r, o)) : json(nullptr)},
                    {"prompt_tokens", r.prompt_tokens},
                    {"output_tokens", o.tokens},
                    {"preemptions", o.preemptions}});
  }
  data["requests"] = std::move(rows);
  data["steps"] = step_rows(result.steps);

  return html_page_with_data("serving", data);
}

}  // namespace npusim::serving
