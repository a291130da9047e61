// npusim generate (npusim/npusim.hpp): a decoder's prefill and decode-step programs run one after
// the other, each compiled and simulated as a run of its own; the KV cache carried between them
// (docs/llm.md "How generation runs").
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <numeric>
#include <optional>

#include "compiler/frontend/llm/decoder_config.hpp"
#include "compiler/frontend/llm/decoder_graph.hpp"
#include "compiler/frontend/llm/decoder_weights.hpp"
#include "compiler/reference/reference_bf16.hpp"
#include "npusim/compile_target.hpp"
#include "npusim/generation_trace.hpp"
#include "npusim/npusim.hpp"
#include "npusim/prompt_ids.hpp"
#include "npusim/run_traces.hpp"
#include "npusim/simulate.hpp"
#include "npusim/tensor_io.hpp"
#include "support/error.hpp"
#include "support/npy.hpp"
#include "traces/generation_report.hpp"

namespace npusim {

namespace {

// A figure of a run's stats.json by its dotted path ("dram.read_bytes").
double stat(const nlohmann::json& stats, const std::string& path) {
  const nlohmann::json* j = &stats;
  size_t begin = 0;
  while (begin <= path.size()) {
    const size_t end = std::min(path.find('.', begin), path.size());
    const std::string key = path.substr(begin, end - begin);
    NPUSIM_CHECK(j->is_object() && j->contains(key), "stats.json has no '{}'", path);
    j = &(*j)[key];
    begin = end + 1;
  }
  return j->get<double>();
}

// A figure of stats.json, or 0 when the run has none (interconnect.* on a chip of one core).
double stat_or_zero(const nlohmann::json& stats, const std::string& path) {
  const nlohmann::json* j = &stats;
  size_t begin = 0;
  while (begin <= path.size()) {
    const size_t end = std::min(path.find('.', begin), path.size());
    const std::string key = path.substr(begin, end - begin);
    if (!j->is_object() || !j->contains(key)) return 0.0;
    j = &(*j)[key];
    begin = end + 1;
  }
  return j->get<double>();
}

// The first index of the largest value (numpy.argmax).
int32_t argmax(const float* v, size_t n) { return int32_t(std::max_element(v, v + n) - v); }

struct StepOutcome {
  nlohmann::json stats;
  std::map<std::string, Tensor> outputs;
  std::vector<int32_t> reference_ids;  // the reference's greedy id per sequence (values on)
  std::string mismatch;
};

// Where a step's program goes in the generation's trace: its step number (0 the prefill), label
// and first cycle; `trace` null when the generation records none.
struct StepTrace {
  GenerationTrace* trace = nullptr;
  int step = 0;
  std::string label;
  uint64_t start_cycle = 0;
};

// Compiles and simulates one program; `ids` is its input (one sample of the graph's batch after
// another).
StepOutcome run_step(const HwConfig& hw, Graph graph, const std::vector<int32_t>& ids,
                     const GenerateOptions& o, systolic::Fidelity fidelity, int sequences,
                     const LayerCores* cores, const StepTrace& where) {
  std::vector<uint8_t> bytes(ids.size() * 4);
  std::memcpy(bytes.data(), ids.data(), bytes.size());
  const std::string name = graph.name;
  Compiled c = compile_graph(hw, std::move(graph), std::move(bytes),
                             std::vector<float>(ids.begin(), ids.end()), o, o.values, cores);
  RunDescription run{c.hw.name, name, o.fidelity, o.seed, o.values};
  run.calibration = c.calibration;
  run.calibration_samples = c.calibration_samples;
  run.prune = c.prune;
  run.weight_sparsity = c.weight_sparsity;
  run.weight_dtype = c.weight_dtype;
  if (c.graph.dtype == DataType::kInt8 && o.values) run.calibration_method = "max";
  std::unique_ptr<timeline::Timeline> timeline;
  if (where.trace && where.trace->records(where.step)) {
    timeline = where.trace->timeline_for(c.hw, c.program);
  }
  SimulationResult r = simulate(c.hw, c.program, c.graph, c.input, fidelity, run, false,
                                {timeline.get(), ""}, c.reference.empty() ? nullptr : &c.reference);
  if (timeline) {
    where.trace->add(where.step, where.label, c.hw, c.program, *timeline, r.stats,
                     where.start_cycle);
  }
  StepOutcome s;
  s.stats = std::move(r.stats);
  if (!o.values) return s;
  s.outputs = program_outputs(c.graph, c.program, r);
  s.mismatch = functional_mismatch(r, name);
  // The reference's logits: int8's whole-graph reference (the calibration computed it), or the
  // bf16 reference run on this program's input.
  const int vocab = c.graph.shape_of("logits").last();
  if (c.graph.dtype == DataType::kInt8) {
    const Tensor8& ref = c.reference.at("logits");
    for (int b = 0; b < sequences; ++b) {
      const int8_t* v = ref.data() + size_t(b) * size_t(vocab);
      s.reference_ids.push_back(int32_t(std::max_element(v, v + vocab) - v));
    }
  } else {
    const std::map<std::string, TensorF> ref =
        run_reference_bf16(c.graph, TensorF(ids.begin(), ids.end()));
    const TensorF& logits = ref.at("logits");
    for (int b = 0; b < sequences; ++b)
      s.reference_ids.push_back(argmax(logits.data() + size_t(b) * size_t(vocab), size_t(vocab)));
  }
  return s;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  // Nearest rank.
  const size_t rank = size_t(std::ceil(p / 100.0 * double(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

std::vector<int32_t> read_prompt(const std::string& path, int vocab, int& batch, int& prompt) {
  NpyArray a;
  try {
    a = read_npy(path);
  } catch (const UserError& e) {
    throw UserError(fmt::format("--input {}", e.what()));
  }
  if (a.shape.size() == 1) a.shape.insert(a.shape.begin(), 1);
  if (a.shape.size() != 2 || a.shape[0] < 1 || a.shape[1] < 1) {
    throw UserError(fmt::format("--input {}: expected prompt ids of shape [batch, tokens]", path));
  }
  if (a.dtype != "int32" && a.dtype != "int64") {
    throw UserError(
        fmt::format("--input {}: expected int32 or int64 token ids, got {}", path, a.dtype));
  }
  if (prompt != 0 && prompt != a.shape[1]) {
    throw UserError(
        fmt::format("--input {}: holds {} tokens per sequence, but --prompt-tokens is {}", path,
                    a.shape[1], prompt));
  }
  if (batch != 0 && batch != a.shape[0]) {
    throw UserError(
        fmt::format("--input {}: holds {} sequences, but --batch is {}", path, a.shape[0], batch));
  }
  batch = int(a.shape[0]);
  prompt = int(a.shape[1]);
  std::vector<int32_t> ids(a.elements());
  for (size_t i = 0; i < ids.size(); ++i) {
    const int64_t v = npy_integer_at(a, i);
    if (v < 0 || v >= vocab) {
      throw UserError(
          fmt::format("--input {}: token id {} at [{}, {}] is outside the vocabulary "
                      "[0, {})",
                      path, v, i / size_t(prompt), i % size_t(prompt), vocab));
    }
    ids[i] = int32_t(v);
  }
  return ids;
}

}  // namespace

std::vector<int32_t> seeded_prompt_ids(uint64_t seed, size_t count, int vocab) {
  uint64_t state = seed ^ 0x70726f6d7074ull;
  std::vector<int32_t> ids(count);
  for (int32_t& id : ids) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    id = int32_t((z ^ (z >> 31)) % uint64_t(vocab));
  }
  return ids;
}

GenerateResult generate(const GenerateOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  if (o.fidelity != "fast" && o.fidelity != "pe") {
    throw UserError(fmt::format("--fidelity '{}': expected fast or pe", o.fidelity));
  }
  const systolic::Fidelity fidelity =
      o.fidelity == "pe" ? systolic::Fidelity::kPe : systolic::Fidelity::kFast;
  const DecoderConfig cfg = load_decoder_config(o.workload);
  int batch = o.batch.value_or(0), prompt = o.prompt_tokens;
  if (o.batch && (*o.batch < 1 || *o.batch > 4096)) {
    throw UserError(fmt::format("--batch {}: expected 1 to 4096 sequences", *o.batch));
  }
  if (prompt < 0) throw UserError(fmt::format("--prompt-tokens {}: expected at least 1", prompt));
  if (o.new_tokens < 1) {
    throw UserError(fmt::format("--new-tokens {}: expected at least 1", o.new_tokens));
  }
  GenerateResult result;
  if (!o.input_npy.empty()) {
    result.prompt = read_prompt(o.input_npy, cfg.vocab, batch, prompt);
  } else {
    if (batch == 0) batch = 1;
    if (prompt == 0) prompt = 16;
    result.prompt = seeded_prompt_ids(o.seed, size_t(batch) * size_t(prompt), cfg.vocab);
  }
  if (int64_t(prompt) + o.new_tokens > cfg.max_context) {
    throw UserError(
        fmt::format("--prompt-tokens {} + --new-tokens {}: more than {}'s context of {} positions",
                    prompt, o.new_tokens, cfg.name, cfg.max_context));
  }
  const bool fp8 = o.dtype == "fp8-e4m3" || o.dtype == "fp8-e5m2";  // bf16 steps, fp8 matrices
  if (!o.dtype.empty() && o.dtype != "int8" && o.dtype != "bf16" && !fp8) {
    throw UserError(
        fmt::format("--dtype '{}': expected int8, bf16, fp8-e4m3 or fp8-e5m2", o.dtype));
  }
  const HwConfig hw = target_hardware(o);
  const DataType dtype = o.dtype.empty() ? hw.data_types.activation
                         : fp8           ? DataType::kBf16
                                         : parse_data_type(o.dtype).value_or(DataType::kInt8);
  std::optional<DecoderWeights> weights;
  if (!o.weights.empty()) {
    weights = read_decoder_safetensors(o.weights, cfg);
  } else if (o.values) {
    weights = seeded_decoder_weights(cfg, o.seed);
  }
  const DecoderWeights* w = o.values ? &*weights : nullptr;
  result.batch = batch;
  result.prompt_tokens = prompt;
  result.new_tokens = o.new_tokens;
  result.vocab = cfg.vocab;
  result.tokens.assign(size_t(batch) * size_t(o.new_tokens), 0);
  std::optional<GenerationTrace> trace;
  if (o.record_trace) {
    trace.emplace(o.trace_filter, parse_trace_steps(o.trace_steps, o.new_tokens - 1));
  }
  GenerationTrace* const tr = trace ? &*trace : nullptr;

  const int d = cfg.head_dim(), KV = cfg.kv_heads;
  // Tensor parallelism of the decode steps (decoder_graph.hpp, DecoderShard): on a chip of
  // several cores with --parallel tensor or auto.
  std::vector<DecoderShard> shards;
  if (hw.cores > 1 && (o.parallel == "tensor" || o.parallel == "auto")) {
    shards = decoder_shards(cfg, hw.cores);
  }
  const bool split = shards.size() > 1;
  const std::string megatron =
      split ? fmt::format(
                  "tensor parallel (Megatron, {}): attention by heads and the FFN by columns then "
                  "rows over {} cores, two all-reduces per layer over the interconnect, the output "
                  "projection by vocabulary columns",
                  o.parallel, shards.size())
            : "";
  const int element_bytes = dtype == DataType::kBf16 ? 2 : 1;
  KvCache cache;
  if (o.values) {
    cache.keys.assign(size_t(cfg.layers), std::vector<std::vector<float>>(size_t(batch * KV)));
    cache.values = cache.keys;
  }
  nlohmann::json steps = nlohmann::json::array();
  std::vector<double> decode_seconds;
  uint64_t prefill_cycles = 0, decode_cycles = 0;
  double prefill_s = 0, decode_s = 0, prefill_j = 0, decode_j = 0;
  double prefill_bytes = 0, decode_bytes = 0, decode_link_bytes = 0;
  bool ids_match = true;
  nlohmann::json prefill_stats, last_decode_stats;
  std::vector<int32_t> next(size_t(batch), 0);

  auto record = [&](const StepOutcome& s, const std::string& phase, int position, int context,
                    const std::vector<int32_t>& sampled) {
    const nlohmann::json& st = s.stats;
    nlohmann::json r;
    r["phase"] = phase;
    r["position"] = position;
    r["context"] = context;
    r["cycles"] = st.at("total_cycles");
    r["latency_s"] = st.at("latency_s");
    r["dram_read_bytes"] = stat(st, "dram.read_bytes");
    r["dram_write_bytes"] = stat(st, "dram.write_bytes");
    r["energy_j"] = stat(st, "energy.total_j");
    r["link_bytes"] = stat_or_zero(st, "interconnect.bytes");
    if (st.contains("chip") && st.at("chip").contains("parallel"))
      r["parallel"] = st.at("chip").at("parallel");
    // The cache this program's attention read from off-chip memory (decode), or wrote (prefill).
    r["kv_cache_bytes"] = uint64_t(cfg.layers) * 2 * uint64_t(batch) * uint64_t(KV) *
                          uint64_t(phase == "prefill" ? prompt : context - 1) * uint64_t(d) *
                          uint64_t(element_bytes);
    if (o.values) {
      r["tokens"] = sampled;
      r["reference_tokens"] = s.reference_ids;
      r["functional_check"] = s.mismatch.empty() ? "ok" : "failed";
      if (s.reference_ids != sampled) ids_match = false;
    }
    steps.push_back(r);
    if (result.mismatch.empty() && !s.mismatch.empty()) result.mismatch = s.mismatch;
  };

  // With values: the step's logits, the id each sequence samples from them, and the step's keys
  // and values appended to the cache: `positions` rows per (sequence, KV head), [batch, KV,
  // positions, d] (a decode step's one row per sequence is [batch, KV * d], the same order).
  auto take_values = [&](const StepOutcome& s, int positions) {
    const Tensor& logits = s.outputs.at("logits");
    result.logits.insert(result.logits.end(), logits.values.begin(), logits.values.end());
    for (int b = 0; b < batch; ++b) {
      next[size_t(b)] =
          argmax(logits.values.data() + size_t(b) * size_t(cfg.vocab), size_t(cfg.vocab));
    }
    const size_t per_head = size_t(positions) * size_t(d);
    if (split) {
      // A split program: each core's rows of its KV heads, [batch, its KV heads, positions, d];
      // a KV head shared by cores (fewer KV heads than cores) is the same on each, taken from the
      // first.
      for (int i = 0; i < cfg.layers; ++i) {
        for (const bool key : {true, false}) {
          auto& dst = key ? cache.keys[size_t(i)] : cache.values[size_t(i)];
          std::vector<bool> taken(size_t(batch * KV), false);
          for (size_t c = 0; c < shards.size(); ++c) {
            const DecoderShard& sh = shards[c];
            const int kvc = sh.kv_end - sh.kv_begin;
            const Tensor& t = s.outputs.at(fmt::format("{}{}.c{}", key ? 'k' : 'v', i, c));
            for (int b = 0; b < batch; ++b) {
              for (int g = sh.kv_begin; g < sh.kv_end; ++g) {
                const size_t bh = size_t(b * KV + g);
                if (taken[bh]) continue;
                taken[bh] = true;
                const auto from =
                    t.values.begin() +
                    long((size_t(b) * size_t(kvc) + size_t(g - sh.kv_begin)) * per_head);
                dst[bh].insert(dst[bh].end(), from, from + long(per_head));
              }
            }
          }
        }
      }
      return;
    }
    for (int i = 0; i < cfg.layers; ++i) {
      for (const bool key : {true, false}) {
        const Tensor& t = s.outputs.at(fmt::format("{}{}", key ? 'k' : 'v', i));
        auto& dst = key ? cache.keys[size_t(i)] : cache.values[size_t(i)];
        for (size_t bh = 0; bh < size_t(batch * KV); ++bh) {
          const auto from = t.values.begin() + long(bh * per_head);
          dst[bh].insert(dst[bh].end(), from, from + long(per_head));
        }
      }
    }
  };

  // Prefill: the prompt, then the first new token of each sequence.
  {
    LayerCores placed;
    Graph g = build_prefill_graph(cfg, w, prompt, batch, dtype, split ? &shards : nullptr,
                                  split ? &placed.core_of : nullptr, &hw);
    placed.summary = megatron;
    StepOutcome s = run_step(hw, std::move(g), result.prompt, o, fidelity, batch,
                             split ? &placed : nullptr, {tr, 0, "prefill", 0});
    if (o.values) take_values(s, prompt);
    for (int b = 0; b < batch; ++b)
      result.tokens[size_t(b) * size_t(o.new_tokens)] = next[size_t(b)];
    record(s, "prefill", 0, prompt, next);
    prefill_cycles = s.stats.at("total_cycles").get<uint64_t>();
    prefill_s = s.stats.at("latency_s").get<double>();
    prefill_j = stat(s.stats, "energy.total_j");
    prefill_bytes = stat(s.stats, "dram.read_bytes") + stat(s.stats, "dram.write_bytes");
    prefill_stats = std::move(s.stats);
  }
  cache.length = prompt;
  // Decode steps: the last sampled id of each sequence at position L = the cache's length.
  for (int t = 1; t < o.new_tokens; ++t) {
    const int L = prompt + t - 1;
    LayerCores placed;
    Graph g = build_decode_graph(cfg, w, o.values ? &cache : nullptr, L, batch,
                                 split ? &shards : nullptr, split ? &placed.core_of : nullptr);
    placed.summary = megatron;
    StepOutcome s = run_step(hw, std::move(g), next, o, fidelity, batch, split ? &placed : nullptr,
                             {tr, t, fmt::format("decode {}", t), prefill_cycles + decode_cycles});
    if (o.values) {
      take_values(s, 1);
      cache.length = L + 1;
    }
    for (int b = 0; b < batch; ++b) {
      result.tokens[size_t(b) * size_t(o.new_tokens) + size_t(t)] = next[size_t(b)];
    }
    record(s, "decode", L, L + 1, next);
    decode_cycles += s.stats.at("total_cycles").get<uint64_t>();
    decode_seconds.push_back(s.stats.at("latency_s").get<double>());
    decode_s += decode_seconds.back();
    decode_j += stat(s.stats, "energy.total_j");
    decode_bytes += stat(s.stats, "dram.read_bytes") + stat(s.stats, "dram.write_bytes");
    decode_link_bytes += stat_or_zero(s.stats, "interconnect.bytes");
    last_decode_stats = std::move(s.stats);
  }
  if (result.mismatch.empty() && !ids_match) {
    result.mismatch =
        "GENERATION MISMATCH: a sampled id differs from the reference's greedy id (steps[]."
        "tokens against steps[].reference_tokens in stats.json). This is a bug in npusim.";
  }

  nlohmann::json gen;
  const double total_s = prefill_s + decode_s;
  const double generated = double(batch) * o.new_tokens;
  gen["workload"] = cfg.name;
  gen["parameters"] = cfg.parameters();
  gen["weights"] = o.weights.empty() ? fmt::format("seed {}", o.seed) : o.weights;
  gen["batch"] = batch;
  gen["prompt_tokens"] = prompt;
  gen["new_tokens"] = o.new_tokens;
  gen["decode_steps"] = o.new_tokens - 1;
  gen["ttft_s"] = prefill_s;
  gen["tpot_s"] = {
      {"mean", decode_seconds.empty() ? 0.0 : decode_s / double(decode_seconds.size())},
      {"p50", percentile(decode_seconds, 50)},
      {"p99", percentile(decode_seconds, 99)}};
  gen["tokens_per_s"] = total_s > 0 ? generated / total_s : 0.0;
  gen["decode_tokens_per_s"] =
      decode_s > 0 ? double(batch) * double(decode_seconds.size()) / decode_s : 0.0;
  gen["prefill_cycles"] = prefill_cycles;
  gen["decode_cycles"] = decode_cycles;
  gen["kv_cache_bytes"] = uint64_t(cfg.layers) * 2 * uint64_t(batch) * uint64_t(KV) *
                          uint64_t(prompt + o.new_tokens - 1) * uint64_t(d) *
                          uint64_t(element_bytes);
  gen["energy_j"] = prefill_j + decode_j;
  gen["energy_per_token_j"] = generated > 0 ? (prefill_j + decode_j) / generated : 0.0;
  gen["prefill_energy_j"] = prefill_j;
  gen["decode_energy_per_token_j"] =
      decode_seconds.empty() ? 0.0 : decode_j / (double(batch) * double(decode_seconds.size()));
  gen["prefill_dram_bytes_per_s"] = prefill_s > 0 ? prefill_bytes / prefill_s : 0.0;
  gen["decode_dram_bytes_per_s"] = decode_s > 0 ? decode_bytes / decode_s : 0.0;
  gen["decode_link_bytes_per_step"] =
      decode_seconds.empty() ? 0.0 : decode_link_bytes / double(decode_seconds.size());
  gen["decode_cores"] = split ? int(shards.size()) : 1;
  gen["sampling"] = "greedy (argmax of the logits, computed by the driver: docs/llm.md)";
  if (o.values) gen["ids_equal_reference"] = ids_match;
  result.stats["npusim_stats_version"] = 1;
  result.stats["hardware"] = hw.name;
  result.stats["workload"] = cfg.name;
  result.stats["dtype"] = to_string(dtype);
  result.stats["values"] = o.values ? "on" : "off";
  result.stats["seed"] = o.seed;
  result.stats["fidelity"] = o.fidelity;
  if (hw.memory.model == MemoryModel::kDram) {
    result.stats["memory_fidelity"] = to_string(hw.memory.fidelity);
  }
  result.stats["clock_mhz"] = hw.clock_mhz;
  result.stats["generation"] = gen;
  result.stats["steps"] = steps;
  result.stats["prefill"] = std::move(prefill_stats);
  // The last decode step's per-layer figures: where a step's time goes (docs/llm.md).
  if (!last_decode_stats.is_null()) result.stats["decode"] = std::move(last_decode_stats);
  if (trace) result.trace_json = trace->json(hw.name, cfg.name, hw.clock_mhz);
  result.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return result;
}

std::string GenerateResult::report() const {
  const nlohmann::json& g = stats.at("generation");
  std::string out = fmt::format(
      "npusim generate: {} on {} ({}, values {})\n"
      "  batch {}, prompt {} tokens, {} new tokens ({} decode steps)\n"
      "  time to first token   {:.6g} s ({} cycles)\n"
      "  time per output token mean {:.6g} s, p50 {:.6g} s, p99 {:.6g} s ({} decode cycles)\n"
      "  tokens/s              {:.6g} overall, {:.6g} in decode\n"
      "  KV cache              {} bytes at the end\n"
      "  energy                {:.6g} J, {:.6g} J per token\n"
      "  off-chip traffic      prefill {:.4g} GB/s, decode {:.4g} GB/s\n",
      stats.at("workload").get<std::string>(), stats.at("hardware").get<std::string>(),
      stats.at("dtype").get<std::string>(), stats.at("values").get<std::string>(),
      g.at("batch").get<int>(), g.at("prompt_tokens").get<int>(), g.at("new_tokens").get<int>(),
      g.at("decode_steps").get<int>(), g.at("ttft_s").get<double>(),
      g.at("prefill_cycles").get<uint64_t>(), g.at("tpot_s").at("mean").get<double>(),
      g.at("tpot_s").at("p50").get<double>(), g.at("tpot_s").at("p99").get<double>(),
      g.at("decode_cycles").get<uint64_t>(), g.at("tokens_per_s").get<double>(),
      g.at("decode_tokens_per_s").get<double>(), g.at("kv_cache_bytes").get<uint64_t>(),
      g.at("energy_j").get<double>(), g.at("energy_per_token_j").get<double>(),
      g.at("prefill_dram_bytes_per_s").get<double>() / 1e9,
      g.at("decode_dram_bytes_per_s").get<double>() / 1e9);
  if (g.at("decode_cores").get<int>() > 1) {
    out += fmt::format("  decode on {} cores     {:.6g} bytes over the interconnect per step\n",
                       g.at("decode_cores").get<int>(),
                       g.at("decode_link_bytes_per_step").get<double>());
  }
  if (g.contains("ids_equal_reference")) {
    out += fmt::format("  generated ids         {} the reference's greedy ids\n",
                       g.at("ids_equal_reference").get<bool>() ? "equal" : "DIFFER FROM");
  }
  out += fmt::format("\n  {:<8} {:>8} {:>8} {:>12} {:>12} {:>14} {:>12}  {}\n", "step", "position",
                     "context", "cycles", "latency s", "DRAM bytes", "energy J", "tokens");
  const nlohmann::json& steps = stats.at("steps");
  for (size_t i = 0; i < steps.size(); ++i) {
    const nlohmann::json& s = steps[i];
    std::string ids;
    if (s.contains("tokens")) {
      for (const auto& t : s.at("tokens")) ids += fmt::format("{} ", t.get<int>());
    }
    out += fmt::format(
        "  {:<8} {:>8} {:>8} {:>12} {:>12.6g} {:>14} {:>12.4g}  {}\n",
        i == 0 ? std::string("prefill") : fmt::format("decode{}", i), s.at("position").get<int>(),
        s.at("context").get<int>(), s.at("cycles").get<uint64_t>(), s.at("latency_s").get<double>(),
        uint64_t(s.at("dram_read_bytes").get<double>() + s.at("dram_write_bytes").get<double>()),
        s.at("energy_j").get<double>(), ids);
  }
  return out;
}

std::string GenerateResult::html() const { return generation_html_report(stats); }

void GenerateResult::write_trace_json(const std::string& path) const {
  if (trace_json.empty()) {
    throw UserError(fmt::format("trace '{}': the generation recorded no trace", path));
  }
  write_atomically("--trace", path, trace_json);
}

void GenerateResult::write_html(const std::string& path) const {
  write_atomically("--html", path, html());
}

std::vector<DecoderEntry> decoders() {
  std::vector<DecoderEntry> out;
  for (const std::string& name : decoder_names()) {
    const DecoderConfig c = load_decoder_config(name);
    out.push_back({c.name, c.description, c.layers, c.hidden, c.heads, c.kv_heads, c.ffn, c.vocab,
                   c.max_context, c.parameters()});
  }
  return out;
}

}  // namespace npusim
