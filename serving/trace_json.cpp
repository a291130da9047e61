#include "serving/trace_json.hpp"

#include <nlohmann/json.hpp>

#include "support/text_escape.hpp"

namespace npusim::serving {

namespace {

double us(double seconds) { return seconds * 1e6; }

}  // namespace

std::string serving_trace_json(const std::vector<Request>& requests, const ServingResult& result,
                               const std::string& title) {
  using nlohmann::json;
  json events = json::array();
  events.push_back(
      {{"name", "process_name"}, {"ph", "M"}, {"pid", 1}, {"args", {{"name", title}}}});
  events.push_back(
      {{"name", "process_name"}, {"ph", "M"}, {"pid", 2}, {"args", {{"name", "scheduler steps"}}}});
  for (size_t i = 0; i < requests.size(); ++i) {
    const Request& r = requests[i];
    const RequestOutcome& o = result.requests[i];
    const int tid = static_cast<int>(i) + 1;
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", 1},
                      {"tid", tid},
                      {"args", {{"name", r.id}}}});
    events.push_back({{"name", "wait + prefill"},
                      {"ph", "X"},
                      {"pid", 1},
                      {"tid", tid},
                      {"ts", us(r.arrival_s)},
                      {"dur", us(o.first_token_s - r.arrival_s)},
                      {"args",
                       {{"prompt_tokens", r.prompt_tokens},
                        {"ttft_s", o.first_token_s - r.arrival_s},
                        {"preemptions", o.preemptions}}}});
    if (o.finish_s > o.first_token_s) {
      events.push_back({{"name", "decode"},
                        {"ph", "X"},
                        {"pid", 1},
                        {"tid", tid},
                        {"ts", us(o.first_token_s)},
                        {"dur", us(o.finish_s - o.first_token_s)},
                        {"args", {{"output_tokens", o.tokens}}}});
    }
  }
  for (const StepRecord& s : result.steps) {
    events.push_back({{"name", "KV blocks held"},
                      {"ph", "C"},
                      {"pid", 2},
                      {"ts", us(s.start_s)},
                      {"args", {{"blocks", s.kv_blocks_used}}}});
    events.push_back({{"name", "requests"},
                      {"ph", "C"},
                      {"pid", 2},
                      {"ts", us(s.start_s)},
                      {"args", {{"running", s.running}, {"waiting", s.waiting}}}});
    events.push_back({{"name", "tokens per step"},
                      {"ph", "C"},
                      {"pid", 2},
                      {"ts", us(s.start_s)},
                      {"args", {{"prefill", s.prefill_tokens}, {"decode", s.decode_tokens}}}});
  }
  // Ids are bytes (docs/reliability.md): dump_json escapes what is not UTF-8.
  return dump_json(json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}) + "\n";
}

}  // namespace npusim::serving
