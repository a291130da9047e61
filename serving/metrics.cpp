#include "serving/metrics.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "support/error.hpp"
#include "support/text_escape.hpp"

namespace npusim::serving {

namespace {

double percentile(const std::vector<double>& sorted, double q) {
  const double pos = q * double(sorted.size() - 1);
  const auto lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - double(lo));
}

}  // namespace

double tpot(const Request& r, const RequestOutcome& o) {
  return (o.finish_s - o.first_token_s) / double(r.output_tokens - 1);
}

Distribution distribution(std::vector<double> values) {
  Distribution d;
  if (values.empty()) return d;
  std::sort(values.begin(), values.end());
  d.count = static_cast<int64_t>(values.size());
  d.mean = std::accumulate(values.begin(), values.end(), 0.0) / double(values.size());
  d.p50 = percentile(values, 0.50);
  d.p90 = percentile(values, 0.90);
  d.p99 = percentile(values, 0.99);
  d.max = values.back();
  return d;
}

ServingSummary summarize(const std::vector<Request>& requests, const ServingResult& result,
                         double slo_ttft_s, double slo_tpot_s) {
  NPUSIM_CHECK(requests.size() == result.requests.size(), "serving: {} requests, {} outcomes",
               requests.size(), result.requests.size());
  ServingSummary s;
  std::vector<double> ttft, tp, e2e;
  double first_arrival = requests.empty() ? 0 : requests[0].arrival_s, last_finish = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    const Request& r = requests[i];
    const RequestOutcome& o = result.requests[i];
    NPUSIM_CHECK(
        o.tokens == r.output_tokens && o.first_token_s >= r.arrival_s &&
            o.finish_s >= o.first_token_s,
        "serving: request '{}' generated {} of {} tokens (arrival {}, first {}, finish {})", r.id,
        o.tokens, r.output_tokens, r.arrival_s, o.first_token_s, o.finish_s);
    first_arrival = std::min(first_arrival, r.arrival_s);
    last_finish = std::max(last_finish, o.finish_s);
    ttft.push_back(o.first_token_s - r.arrival_s);
    e2e.push_back(o.finish_s - r.arrival_s);
    bool ok = slo_ttft_s <= 0 || ttft.back() <= slo_ttft_s;
    if (r.output_tokens > 1) {
      tp.push_back(tpot(r, o));
      ok = ok && (slo_tpot_s <= 0 || tp.back() <= slo_tpot_s);
    }
    s.requests_within_slo += ok;
    s.prompt_tokens += r.prompt_tokens;
    s.generated_tokens += o.tokens;
  }
  s.requests = static_cast<int64_t>(requests.size());
  s.ttft_s = distribution(ttft);
  s.tpot_s = distribution(tp);
  s.e2e_s = distribution(e2e);
  s.makespan_s = last_finish - first_arrival;
  if (s.makespan_s > 0) {
    s.tokens_per_s = double(s.generated_tokens) / s.makespan_s;
    s.requests_per_s = double(s.requests) / s.makespan_s;
    s.goodput_requests_per_s = double(s.requests_within_slo) / s.makespan_s;
  }
  s.steps = static_cast<int64_t>(result.steps.size());
  s.preemptions = result.preemptions;
  double block_seconds = 0;
  for (const auto& st : result.steps) {
    s.energy_j += st.energy_j;
    block_seconds += double(st.kv_blocks_used) * (st.end_s - st.start_s);
  }
  if (s.generated_tokens > 0) s.energy_per_token_j = s.energy_j / double(s.generated_tokens);
  s.peak_kv_blocks = result.peak_kv_blocks;
  if (s.makespan_s > 0) s.mean_kv_blocks = block_seconds / s.makespan_s;
  return s;
}

std::string requests_csv(const std::vector<Request>& requests, const ServingResult& result) {
  std::string out =
      "id,arrival_s,first_token_s,finish_s,ttft_s,tpot_s,e2e_s,prompt_tokens,output_tokens,"
      "preemptions\n";
  for (size_t i = 0; i < requests.size(); ++i) {
    const Request& r = requests[i];
    const RequestOutcome& o = result.requests[i];
    const std::string tp = r.output_tokens > 1 ? fmt::format("{:.9g}", tpot(r, o)) : "";
    // An id is written as it was read (it held no comma and no line break, or the reader would
    // have split it); bytes that are not printable UTF-8 are escaped.
    out += fmt::format("{},{:.9g},{:.9g},{:.9g},{:.9g},{},{:.9g},{},{},{}\n", printable_text(r.id),
                       r.arrival_s, o.first_token_s, o.finish_s, o.first_token_s - r.arrival_s, tp,
                       o.finish_s - r.arrival_s, r.prompt_tokens, o.tokens, o.preemptions);
  }
  return out;
}

}  // namespace npusim::serving
