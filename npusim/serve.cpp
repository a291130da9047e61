// npusim serve (npusim/npusim.hpp, docs/serving.md): a request trace replayed through the
// continuous-batching scheduler of serving/, each step priced by the decoder's simulated prefill
// and decode-step programs (timing only), compiled once per shape on a grid and interpolated
// between grid points.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>

#include "compiler/frontend/llm/decoder_config.hpp"
#include "compiler/frontend/llm/decoder_graph.hpp"
#include "npusim/compile_target.hpp"
#include "npusim/npusim.hpp"
#include "npusim/prompt_ids.hpp"
#include "npusim/simulate.hpp"
#include "serving/html_report.hpp"
#include "serving/metrics.hpp"
#include "serving/request_trace.hpp"
#include "serving/scheduler.hpp"
#include "serving/trace_json.hpp"
#include "support/error.hpp"

namespace npusim {

namespace {

using serving::StepCost;
using serving::StepShape;

// The step costs of a decoder on a chip, from simulated programs. A prefill of P tokens is
// simulated at grid points (1, grid, 2 grid, 4 grid, ... up to the context) and interpolated
// linearly between them; a decode step of B sequences at mean context L at (B a power of two, L
// a grid point) and interpolated bilinearly. Each program is compiled and simulated once.
class SimulatedStepCost : public serving::StepCostModel {
 public:
  SimulatedStepCost(const HwConfig& hw, const DecoderConfig& cfg, DataType dtype,
                    const ServeOptions& o, int grid)
      : hw_(hw), cfg_(cfg), dtype_(dtype), o_(o), grid_(grid) {}

  StepCost cost(const StepShape& shape) override {
    StepCost c;
    // Prefill chunks: a chunk of T tokens after C cached ones costs what the prefill of C + T
    // tokens costs beyond that of C (its attention reads the cached positions), and at least
    // what a prefill of T tokens costs (its weights are streamed again).
    for (const auto& chunk : shape.prefill) {
      const StepCost whole = prefill(chunk.context_before + chunk.tokens);
      const StepCost alone = prefill(chunk.tokens);
      StepCost extra = whole;
      if (chunk.context_before > 0) {
        const StepCost before = prefill(chunk.context_before);
        extra.seconds -= before.seconds;
        extra.energy_j -= before.energy_j;
      }
      c.seconds += std::max(extra.seconds, alone.seconds);
      c.energy_j += std::max(extra.energy_j, alone.energy_j);
    }
    if (!shape.decode_contexts.empty()) {
      const auto b = int64_t(shape.decode_contexts.size());
      double mean = 0;
      for (int64_t ctx : shape.decode_contexts) mean += double(ctx);
      mean /= double(b);
      const StepCost d = decode(b, mean);
      c.seconds += d.seconds;
      c.energy_j += d.energy_j;
    }
    return c;
  }

  // The longest prefill program simulated for prefills of up to `tokens` tokens.
  int64_t longest_prefill(int64_t tokens) const { return around(double(tokens)).second; }

  int programs() const { return int(cache_.size()); }
  double idle_w() const { return idle_w_; }
  double simulated_seconds() const { return simulated_s_; }

 private:
  // One program, timing only: its latency and energy.
  StepCost simulate_program(bool is_prefill, int64_t batch, int64_t tokens) {
    const auto key = std::make_tuple(is_prefill, batch, tokens);
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    const auto t0 = std::chrono::steady_clock::now();
    Graph g = is_prefill ? build_prefill_graph(cfg_, nullptr, int(tokens), 1, dtype_, nullptr,
                                               nullptr, &hw_)
                         : build_decode_graph(cfg_, nullptr, nullptr, int(tokens), int(batch));
    // A prefill reads the prompt npusim generate draws from the seed; a decode step, with no
    // values, id 0 per sequence (as generate's timing-only decode steps).
    const std::vector<int32_t> ids = is_prefill
                                         ? seeded_prompt_ids(o_.seed, size_t(tokens), cfg_.vocab)
                                         : std::vector<int32_t>(size_t(batch), 0);
    std::vector<uint8_t> bytes(ids.size() * 4);
    std::memcpy(bytes.data(), ids.data(), bytes.size());
    Compiled c = compile_graph(hw_, std::move(g), std::move(bytes),
                               std::vector<float>(ids.begin(), ids.end()), o_, false);
    RunDescription run{c.hw.name, c.graph.name, o_.fidelity, o_.seed, false};
    const SimulationResult r =
        simulate(c.hw, c.program, c.graph, c.input,
                 o_.fidelity == "pe" ? systolic::Fidelity::kPe : systolic::Fidelity::kFast, run);
    StepCost s;
    s.seconds = r.stats.at("latency_s").get<double>();
    s.energy_j = r.stats.at("energy").at("total_j").get<double>();
    idle_w_ = r.stats.at("power").at("idle_w").get<double>();
    simulated_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    cache_.emplace(key, s);
    return s;
  }

  // The grid points around x: 1, grid, 2 grid, 4 grid, ... and the context. Between them a
  // program's cost is close to linear: a decode step's is affine in its context (the weights,
  // then one cache row per position), a prefill's in its tokens but for attention's square.
  std::pair<int64_t, int64_t> around(double x) const {
    const int64_t top = cfg_.max_context;
    if (x <= 1) return {1, 1};
    int64_t lo = 1, hi = std::min<int64_t>(grid_, top);
    while (double(hi) < x && hi < top) {
      lo = hi;
      hi = std::min<int64_t>(hi * 2, top);
    }
    if (double(hi) == x) lo = hi;
    return {lo, hi};
  }

  static StepCost mix(const StepCost& a, const StepCost& b, double t) {
    return {a.seconds + (b.seconds - a.seconds) * t, a.energy_j + (b.energy_j - a.energy_j) * t};
  }
  static double fraction(double x, int64_t lo, int64_t hi) {
    return hi == lo ? 0.0 : (x - double(lo)) / double(hi - lo);
  }

  StepCost prefill(int64_t tokens) {
    const auto [lo, hi] = around(double(tokens));
    return mix(simulate_program(true, 1, lo), simulate_program(true, 1, hi),
               fraction(double(tokens), lo, hi));
  }

  // Decode of `batch` sequences whose contexts average `context` positions (the cached ones and
  // the new token): the decode-step program at past length context - 1.
  // Above the largest simulated batch M, the cost goes on along the line through M / 2 and M:
  // a memory-bound decode step's cost grows by a constant per sequence (its cache rows and its
  // share of the compute) until the compute bound, which this extrapolation does not see.
  StepCost decode(int64_t batch, double context) {
    const int64_t most = std::max(2, o_.max_simulated_batch);
    int64_t top = 1;
    while (top * 2 <= most) top *= 2;
    int64_t blo = 1;
    while (blo * 2 <= std::min(batch, top)) blo *= 2;
    int64_t bhi = blo == batch ? blo : blo * 2;
    if (batch > top) {
      blo = top / 2;
      bhi = top;
    }
    const double past = std::max(1.0, context - 1);
    // Named copies, not a structured binding: C++17 lambdas may not capture bindings (clang).
    const auto around_past = around(past);
    const int64_t llo = around_past.first, lhi = around_past.second;
    auto at_batch = [&](int64_t b) {
      return mix(simulate_program(false, b, llo), simulate_program(false, b, lhi),
                 fraction(past, llo, lhi));
    };
    return mix(at_batch(blo), at_batch(bhi), fraction(double(batch), blo, bhi));
  }

  const HwConfig& hw_;
  const DecoderConfig& cfg_;
  DataType dtype_;
  const ServeOptions& o_;
  int grid_;
  std::map<std::tuple<bool, int64_t, int64_t>, StepCost> cache_;
  double simulated_s_ = 0;
  double idle_w_ = 0;  // what the chip draws doing nothing (the same in every program)
};

nlohmann::json distribution_json(const serving::Distribution& d) {
  return {{"count", d.count}, {"mean", d.mean}, {"p50", d.p50},
          {"p90", d.p90},     {"p99", d.p99},   {"max", d.max}};
}

}  // namespace

ServeResult serve(const ServeOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  if (o.fidelity != "fast" && o.fidelity != "pe") {
    throw UserError(fmt::format("--fidelity '{}': expected fast or pe", o.fidelity));
  }
  if (o.values) {
    throw UserError(
        "npusim serve runs timing only (--values off): a trace's steps are priced by "
        "simulated programs, not computed; npusim generate checks values");
  }
  if (!o.dtype.empty() && o.dtype != "int8" && o.dtype != "bf16") {
    throw UserError(fmt::format("--dtype '{}': expected int8 or bf16", o.dtype));
  }
  if (o.max_simulated_batch < 2 || o.max_simulated_batch > 4096) {
    throw UserError(
        fmt::format("--max-simulated-batch {}: expected 2 to 4096", o.max_simulated_batch));
  }
  if (o.grid_tokens < 1 || o.grid_tokens > 4096) {
    throw UserError(fmt::format("--grid-tokens {}: expected 1 to 4096", o.grid_tokens));
  }
  const DecoderConfig cfg = load_decoder_config(o.workload);
  const HwConfig hw = target_hardware(o);
  const DataType dtype = o.dtype.empty() ? hw.data_types.activation
                                         : parse_data_type(o.dtype).value_or(DataType::kInt8);
  const std::vector<serving::Request> requests = serving::read_request_trace(o.trace);

  // The KV cache: layers x (K and V) x KV heads x head_dim values per token.
  const uint64_t element_bytes = dtype == DataType::kBf16 ? 2 : 1;
  const uint64_t kv_bytes_per_token =
      uint64_t(cfg.layers) * 2 * uint64_t(cfg.kv_heads) * uint64_t(cfg.head_dim()) * element_bytes;
  const uint64_t weight_bytes = cfg.parameters() * element_bytes;
  const uint64_t capacity = hw.memory.capacity_bytes;
  uint64_t kv_bytes = 0;
  if (o.kv_cache_bytes) {
    kv_bytes = *o.kv_cache_bytes;
  } else if (capacity > weight_bytes) {
    // What vLLM does with gpu_memory_utilization 0.9: 90 % of the memory for weights and cache.
    kv_bytes = uint64_t(double(capacity) * 0.9) > weight_bytes
                   ? uint64_t(double(capacity) * 0.9) - weight_bytes
                   : 0;
  }
  serving::ServingConfig sc;
  sc.max_batch = o.max_batch;
  sc.kv_block_tokens = o.kv_block_tokens;
  sc.max_step_tokens = o.max_step_tokens;
  sc.max_context = cfg.max_context;
  if (sc.kv_block_tokens < 1) {
    throw UserError(fmt::format("--kv-block-tokens {}: expected at least 1", sc.kv_block_tokens));
  }
  sc.kv_capacity_blocks = int64_t(kv_bytes / (kv_bytes_per_token * uint64_t(sc.kv_block_tokens)));
  if (sc.kv_capacity_blocks < 1) {
    throw UserError(fmt::format(
        "{} on {}: no room for a KV-cache block of {} tokens ({} bytes): {} bytes of off-chip "
        "memory, {} bytes of weights{}",
        cfg.name, hw.name, sc.kv_block_tokens, kv_bytes_per_token * uint64_t(sc.kv_block_tokens),
        capacity, weight_bytes, o.kv_cache_bytes ? ", --kv-cache-bytes given" : ""));
  }

  SimulatedStepCost cost(hw, cfg, dtype, o, o.grid_tokens);
  // A prompt too long for the unified buffer is refused now, not at its first prefill: the
  // longest prefill is a request's prompt and all but its last token (a recompute).
  int64_t longest = 1;
  for (const serving::Request& q : requests)
    longest = std::max(longest,
                       std::min<int64_t>(q.prompt_tokens + q.output_tokens - 1, cfg.max_context));
  prefill_blocks(cfg, int(cost.longest_prefill(longest)), dtype, nullptr, &hw);
  const serving::ServingResult r = serving::simulate_serving(requests, sc, cost, o.trace);
  const serving::ServingSummary s = serving::summarize(requests, r, o.slo_ttft_s, o.slo_tpot_s);

  ServeResult result;
  nlohmann::json& j = result.stats;
  j["npusim_stats_version"] = 1;
  j["hardware"] = hw.name;
  j["workload"] = cfg.name;
  j["dtype"] = to_string(dtype);
  j["trace"] = o.trace;
  nlohmann::json& v = j["serving"];
  v["requests"] = s.requests;
  v["prompt_tokens"] = s.prompt_tokens;
  v["generated_tokens"] = s.generated_tokens;
  v["steps"] = s.steps;
  v["makespan_s"] = s.makespan_s;
  v["ttft_s"] = distribution_json(s.ttft_s);
  v["tpot_s"] = distribution_json(s.tpot_s);
  v["e2e_s"] = distribution_json(s.e2e_s);
  v["tokens_per_s"] = s.tokens_per_s;
  v["requests_per_s"] = s.requests_per_s;
  v["slo_ttft_s"] = o.slo_ttft_s;
  v["slo_tpot_s"] = o.slo_tpot_s;
  v["requests_within_slo"] = s.requests_within_slo;
  v["goodput_requests_per_s"] = s.goodput_requests_per_s;
  // Between steps the chip idles: clock, leakage and the DRAM's background power.
  double busy_s = 0;
  for (const auto& st : r.steps) busy_s += st.end_s - st.start_s;
  const double idle_s = std::max(0.0, s.makespan_s - busy_s);
  const double energy = s.energy_j + idle_s * cost.idle_w();
  v["busy_s"] = busy_s;
  v["idle_s"] = idle_s;
  v["step_energy_j"] = s.energy_j;
  v["idle_energy_j"] = idle_s * cost.idle_w();
  v["energy_j"] = energy;
  v["energy_per_token_j"] = s.generated_tokens ? energy / double(s.generated_tokens) : 0.0;
  v["average_power_w"] = s.makespan_s > 0 ? energy / s.makespan_s : 0.0;
  v["preemptions"] = s.preemptions;
  v["max_batch"] = sc.max_batch;
  v["max_step_tokens"] = sc.max_step_tokens;
  nlohmann::json& kv = v["kv_cache"];
  kv["block_tokens"] = sc.kv_block_tokens;
  kv["bytes_per_token"] = kv_bytes_per_token;
  kv["capacity_blocks"] = sc.kv_capacity_blocks;
  kv["capacity_bytes"] =
      uint64_t(sc.kv_capacity_blocks) * uint64_t(sc.kv_block_tokens) * kv_bytes_per_token;
  kv["peak_blocks"] = s.peak_kv_blocks;
  kv["mean_blocks"] = s.mean_kv_blocks;
  kv["peak_occupancy"] = double(s.peak_kv_blocks) / double(sc.kv_capacity_blocks);
  nlohmann::json& p = v["programs"];
  p["simulated"] = cost.programs();
  p["grid_tokens"] = o.grid_tokens;
  p["max_simulated_batch"] = o.max_simulated_batch;
  // The host's wall time goes under "host", as in every stats.json (docs/stats.md): the same
  // trace gives the same bytes everywhere else.
  j["host"]["simulation_wall_s"] = cost.simulated_seconds();

  result.requests_csv = serving::requests_csv(requests, r);
  result.trace_json = serving::serving_trace_json(
      requests, r, fmt::format("npusim serve: {} on {}", cfg.name, hw.name));
  result.html = serving::serving_html_report(requests, r, j);
  result.steps_csv =
      "start_s,end_s,prefill_tokens,decode_tokens,running,waiting,kv_blocks_used,"
      "energy_j\n";
  for (const auto& st : r.steps) {
    result.steps_csv += fmt::format("{:.9g},{:.9g},{},{},{},{},{},{:.9g}\n", st.start_s, st.end_s,
                                    st.prefill_tokens, st.decode_tokens, st.running, st.waiting,
                                    st.kv_blocks_used, st.energy_j);
  }
  result.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return result;
}

std::string ServeResult::report() const {
  const nlohmann::json& v = stats.at("serving");
  auto dist = [&](const char* key, double scale, const char* unit) {
    const auto& d = v.at(key);
    return fmt::format("mean {:.4g} {u}, p50 {:.4g} {u}, p90 {:.4g} {u}, p99 {:.4g} {u}",
                       d.at("mean").get<double>() * scale, d.at("p50").get<double>() * scale,
                       d.at("p90").get<double>() * scale, d.at("p99").get<double>() * scale,
                       fmt::arg("u", unit));
  };
  std::string out = fmt::format(
      "npusim serve: {} on {} ({}), trace {}\n"
      "  requests         {} ({} prompt tokens, {} generated), {} steps, {} preemptions\n"
      "  makespan         {:.4g} s: {:.4g} tokens/s, {:.4g} requests/s\n"
      "  TTFT             {}\n"
      "  TPOT             {}\n"
      "  end to end       {}\n",
      stats.at("workload").get<std::string>(), stats.at("hardware").get<std::string>(),
      stats.at("dtype").get<std::string>(), stats.at("trace").get<std::string>(),
      v.at("requests").get<int64_t>(), v.at("prompt_tokens").get<int64_t>(),
      v.at("generated_tokens").get<int64_t>(), v.at("steps").get<int64_t>(),
      v.at("preemptions").get<int64_t>(), v.at("makespan_s").get<double>(),
      v.at("tokens_per_s").get<double>(), v.at("requests_per_s").get<double>(),
      dist("ttft_s", 1e3, "ms"), dist("tpot_s", 1e3, "ms"), dist("e2e_s", 1.0, "s"));
  if (v.at("slo_ttft_s").get<double>() > 0 || v.at("slo_tpot_s").get<double>() > 0) {
    out += fmt::format(
        "  goodput          {:.4g} requests/s ({} of {} within TTFT <= {} s, "
        "TPOT <= {} s; 0: no target)\n",
        v.at("goodput_requests_per_s").get<double>(), v.at("requests_within_slo").get<int64_t>(),
        v.at("requests").get<int64_t>(), v.at("slo_ttft_s").get<double>(),
        v.at("slo_tpot_s").get<double>());
  }
  const auto& kv = v.at("kv_cache");
  out += fmt::format(
      "  energy           {:.4g} J, {:.4g} mJ per token, {:.4g} W average\n"
      "  KV cache         {} blocks of {} tokens ({:.4g} GB), peak {} ({:.1f} %), mean {:.1f}\n"
      "  programs         {} simulated (grid {} tokens)\n",
      v.at("energy_j").get<double>(), v.at("energy_per_token_j").get<double>() * 1e3,
      v.at("average_power_w").get<double>(), kv.at("capacity_blocks").get<int64_t>(),
      kv.at("block_tokens").get<int64_t>(), kv.at("capacity_bytes").get<double>() / 1e9,
      kv.at("peak_blocks").get<int64_t>(), kv.at("peak_occupancy").get<double>() * 100,
      kv.at("mean_blocks").get<double>(), v.at("programs").at("simulated").get<int64_t>(),
      v.at("programs").at("grid_tokens").get<int64_t>());
  return out;
}

}  // namespace npusim
