#include "sim/simulate.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "models/soc.hpp"
#include "compiler/reference.hpp"
#include "compiler/reference_bf16.hpp"
#include "sim/tensor_io.hpp"
#include "support/error.hpp"

namespace npusim {

namespace {

using Interval = std::pair<uint64_t, uint64_t>;  // [first, end)

// Sorts and merges overlapping intervals in place.
void merge(std::vector<Interval>& v) {
  std::sort(v.begin(), v.end());
  size_t out = 0;
  for (const Interval& x : v) {
    if (x.first >= x.second) continue;
    if (out > 0 && x.first <= v[out - 1].second) {
      v[out - 1].second = std::max(v[out - 1].second, x.second);
    } else {
      v[out++] = x;
    }
  }
  v.resize(out);
}

uint64_t length(const std::vector<Interval>& v) {
  uint64_t n = 0;
  for (const Interval& x : v) n += x.second - x.first;
  return n;
}

// Length of the intersection of two merged interval lists.
uint64_t overlap(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  uint64_t n = 0;
  for (size_t i = 0, j = 0; i < a.size() && j < b.size();) {
    const uint64_t lo = std::max(a[i].first, b[j].first), hi = std::min(a[i].second, b[j].second);
    if (lo < hi) n += hi - lo;
    (a[i].second < b[j].second) ? ++i : ++j;
  }
  return n;
}

// DMA and compute (matrix, vector) activity of instructions [first, end): cycles with a DMA
// instruction in flight, with a compute instruction in flight, and with both.
void activity(const Program& program, const std::vector<InstructionTiming>& timings,
              uint32_t first, uint32_t end, uint64_t* dma, uint64_t* compute, uint64_t* both) {
  std::vector<Interval> d, c;
  for (uint32_t i = first; i < end; ++i) {
    const UnitKind u = program.instructions[i].unit;
    const Interval x{timings[i].start_cycle, timings[i].end_cycle};
    if (u == UnitKind::kDmaLoad || u == UnitKind::kDmaStore) {
      d.push_back(x);
    } else {
      c.push_back(x);
    }
  }
  merge(d);
  merge(c);
  *dma = length(d);
  *compute = length(c);
  *both = overlap(d, c);
}

// The off-chip memory model's figures for stats.json "memory"; brings a DRAM model to the end.
nlohmann::json memory_figures(const HwConfig& hw, Soc& soc, uint64_t total_cycles) {
  nlohmann::json j{{"model", hw.memory.model}};
  if (!soc.dram_memory) {
    j["bandwidth_gbps"] = hw.memory.bandwidth_gbps;
    j["latency_ns"] = hw.memory.latency_ns;
    j["busy_cycles"] = soc.simple_memory->busy_cycles();
    return j;
  }
  const dram::MemoryStats s = soc.dram_memory->finish(total_cycles);
  const dram::MemoryConfig& cfg = *soc.dram_config;
  j["preset"] = hw.memory.preset;
  j["channels"] = cfg.org.channels;
  j["burst_bytes"] = cfg.org.access_bytes();
  j["tck_ns"] = cfg.timing.tck_ns;
  j["memory_cycles"] = s.cycles;
  j["read_bursts"] = s.reads;
  j["write_bursts"] = s.writes;
  j["row_hit_rate"] = s.row_hit_rate;
  j["act_commands"] = s.acts;
  j["pre_commands"] = s.pres;
  j["ref_commands"] = s.refs;
  j["bandwidth_gbps"] = s.bandwidth_gbps;
  j["peak_bandwidth_gbps"] = cfg.peak_bandwidth_gbps();
  j["avg_read_latency_cycles"] = s.avg_read_latency_cycles;
  j["p99_read_latency_cycles"] = s.p99_read_latency_cycles;
  j["energy_pj"] = s.total_energy_pj;
  j["energy_pj_per_bit"] = s.energy_pj_per_bit;
  j["average_power_mw"] = s.average_power_mw;
  nlohmann::json per_channel = nlohmann::json::array();
  for (int c = 0; c < soc.dram_memory->memory().channels(); ++c) {
    const dram::ChannelStats& cs = soc.dram_memory->memory().channel(c).stats();
    per_channel.push_back(cs.reads + cs.writes);
  }
  j["channel_bursts"] = per_channel;  // how the address mapping spread the traffic
  // The preset as resolved (channels applied), so the run can be reproduced from stats.json.
  j["config"] = nlohmann::json::parse(dram::memory_config_to_json_text(cfg));
  return j;
}

void check_outputs(const Program& program, const Graph& graph, const std::vector<uint8_t>& input,
                   SimulationResult& r) {
  FunctionalCheck& c = r.check;
  c.bit_exact = true;
  if (graph.dtype == DataType::kInt8) {
    const auto reference = run_reference(graph, Tensor8(input.begin(), input.end()));
    for (size_t o = 0; o < program.outputs.size(); ++o) {
      const Tensor8& ref = reference.at(program.outputs[o].name);
      const std::vector<uint8_t>& sim = r.outputs[o];
      NPUSIM_CHECK(ref.size() == sim.size(), "output {}: {} simulated values, {} reference values",
                   program.outputs[o].name, sim.size(), ref.size());
      for (size_t i = 0; i < sim.size(); ++i) {
        const int err = std::abs(int(static_cast<int8_t>(sim[i])) - int(ref[i]));
        c.max_abs_error = std::max(c.max_abs_error, double(err));
        c.mismatches += err != 0;
      }
      c.compared += sim.size();
    }
    c.bit_exact = c.mismatches == 0;
    c.within_tolerance = c.bit_exact;
    c.max_relative_error = 0.0;
    return;
  }
  c.tolerance = kBf16Tolerance;
  const auto reference = run_reference_bf16(graph, decode_tensor(input, 2, 1.0f));
  for (size_t o = 0; o < program.outputs.size(); ++o) {
    const TensorF& ref = reference.at(program.outputs[o].name);
    const std::vector<float> sim = decode_tensor(r.outputs[o], 2, 1.0f);
    NPUSIM_CHECK(ref.size() == sim.size(), "output {}: {} simulated values, {} reference values",
                 program.outputs[o].name, sim.size(), ref.size());
    double range = 0.0, worst = 0.0;
    for (size_t i = 0; i < sim.size(); ++i) {
      range = std::max(range, std::fabs(double(ref[i])));
      const double err = std::fabs(double(sim[i]) - double(ref[i]));
      worst = std::max(worst, err);
      c.mismatches += sim[i] != ref[i];
    }
    c.max_abs_error = std::max(c.max_abs_error, worst);
    c.max_relative_error = std::max(c.max_relative_error, range > 0.0 ? worst / range : worst);
    c.compared += sim.size();
  }
  c.bit_exact = c.mismatches == 0;
  c.within_tolerance = c.max_relative_error <= c.tolerance;
}

}  // namespace

SimulationResult simulate(const HwConfig& hw, const Program& program, const Graph& graph,
                          const std::vector<uint8_t>& input, systolic::Fidelity fidelity,
                          bool all_tensors) {
  const auto wall_start = std::chrono::steady_clock::now();
  NPUSIM_CHECK(input.size() == program.input.bytes(), "input has {} bytes, the program expects {}",
               input.size(), program.input.bytes());
  Soc soc("soc", hw, program, fidelity);
  std::memcpy(soc.memory_contents().data() + program.input.dram_addr, input.data(), input.size());

  sc_core::sc_start();
  if (auto failure = ExecutionUnit::failure()) std::rethrow_exception(failure);
  NPUSIM_CHECK(soc.scoreboard.all_done(),
               "simulation ended with {} of {} instructions completed: a dependency was never met",
               soc.scoreboard.completed(), program.instructions.size());

  SimulationResult r;
  r.instructions = program.instructions.size();
  const auto& timings = soc.scoreboard.timings();
  for (const auto& t : timings) r.total_cycles = std::max(r.total_cycles, t.end_cycle);
  for (const auto& mxu : soc.matrix_units) {
    r.macs += mxu->macs();
    r.mxu_busy_cycles += mxu->stats().busy_cycles;
  }
  NPUSIM_CHECK(r.macs == program.total_macs, "the matrix units executed {} MACs, the graph has {}",
               r.macs, program.total_macs);
  r.vpu_busy_cycles = soc.vector_unit.stats().busy_cycles;
  for (const DmaEngine* q : soc.load_queues) r.dma_load_busy_cycles += q->stats().busy_cycles;
  for (const DmaEngine* q : soc.store_queues) r.dma_store_busy_cycles += q->stats().busy_cycles;
  std::vector<const DmaEngine*> queues(soc.load_queues.begin(), soc.load_queues.end());
  queues.insert(queues.end(), soc.store_queues.begin(), soc.store_queues.end());
  r.dram_read_bytes = soc.memory_bytes_read();
  r.dram_write_bytes = soc.memory_bytes_written();
  r.memory = memory_figures(hw, soc, r.total_cycles);
  for (const DmaEngine* q : queues) {
    r.dma_bursts += q->bursts();
    r.dma_bank_conflict_cycles += q->bank_conflict_cycles();
    r.dma_window_full_cycles += q->window_full_cycles();
  }
  activity(program, timings, 0, uint32_t(program.instructions.size()), &r.dma_active_cycles,
           &r.compute_active_cycles, &r.dma_compute_overlap_cycles);

  for (size_t li = 0; li < program.layers.size(); ++li) {
    const LayerRecord& rec = program.layers[li];
    LayerStats s;
    s.name = rec.name;
    s.op = rec.op;
    s.fused = rec.fused;
    s.macs = rec.macs;
    s.tiling = rec.tiling;
    s.dram_read_bytes = rec.dram_read_bytes;
    s.dram_write_bytes = rec.dram_write_bytes;
    s.dram_bytes_lower_bound = rec.dram_bytes_lower_bound;
    if (rec.end_instruction > rec.first_instruction) {
      s.start_cycle = UINT64_MAX;
      for (uint32_t i = rec.first_instruction; i < rec.end_instruction; ++i) {
        s.start_cycle = std::min(s.start_cycle, timings[i].start_cycle);
        s.end_cycle = std::max(s.end_cycle, timings[i].end_cycle);
      }
    } else if (li > 0) {
      s.start_cycle = s.end_cycle = r.layers.back().end_cycle;
    }
    for (const auto& mxu : soc.matrix_units) {
      s.mxu_busy_cycles += mxu->layer_busy_cycles()[li];
      s.mxu_stall_cycles += mxu->layer_stall_cycles()[li];
    }
    s.vpu_busy_cycles = soc.vector_unit.layer_busy_cycles()[li];
    for (const DmaEngine* q : queues) {
      s.dma_busy_cycles += q->layer_busy_cycles()[li];
      s.bank_conflict_cycles += q->layer_bank_conflict_cycles()[li];
    }
    activity(program, timings, rec.first_instruction, rec.end_instruction, &s.dma_active_cycles,
             &s.compute_active_cycles, &s.dma_compute_overlap_cycles);
    s.dma_exposed_cycles = s.dma_active_cycles - s.dma_compute_overlap_cycles;
    r.layers.push_back(std::move(s));
  }

  // Outputs from simulated off-chip memory, against the reference.
  for (const auto& out : program.outputs) {
    const uint8_t* base = soc.memory_contents().data() + out.dram_addr;
    r.outputs.emplace_back(base, base + out.bytes());
  }
  check_outputs(program, graph, input, r);
  for (size_t i = 0; all_tensors && i < program.tensors.size(); ++i) {
    const TensorPlacement& t = program.tensors[i];
    const uint8_t* base = soc.memory_contents().data() + t.dram_addr;
    r.tensors.emplace_back(base, base + t.bytes());
  }
  r.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return r;
}

namespace {
double latency_s(const HwConfig& hw, const SimulationResult& r) {
  return static_cast<double>(r.total_cycles) / (hw.clock_mhz * 1e6);
}
double utilization(const HwConfig& hw, const SimulationResult& r) {
  return r.total_cycles == 0 ? 0.0 : r.macs / (hw.peak_macs_per_cycle() * r.total_cycles);
}
}  // namespace

nlohmann::json stats_json(const HwConfig& hw, const Program& program, const SimulationResult& r,
                          const RunDescription& run) {
  using nlohmann::json;
  const double latency = latency_s(hw, r);
  json layers = json::array();
  for (const auto& l : r.layers) {
    layers.push_back({{"name", l.name},
                      {"op", l.op},
                      {"fused", l.fused},
                      {"cycles", l.cycles()},
                      {"start_cycle", l.start_cycle},
                      {"end_cycle", l.end_cycle},
                      {"macs", l.macs},
                      {"mxu_utilization",
                       l.cycles() == 0 ? 0.0 : l.macs / (hw.peak_macs_per_cycle() * l.cycles())},
                      {"mxu_busy_cycles", l.mxu_busy_cycles},
                      {"mxu_stall_cycles", l.mxu_stall_cycles},
                      {"vpu_busy_cycles", l.vpu_busy_cycles},
                      {"dma_busy_cycles", l.dma_busy_cycles},
                      {"dma_active_cycles", l.dma_active_cycles},
                      {"compute_active_cycles", l.compute_active_cycles},
                      {"dma_compute_overlap_cycles", l.dma_compute_overlap_cycles},
                      {"dma_exposed_cycles", l.dma_exposed_cycles},
                      {"bank_conflict_cycles", l.bank_conflict_cycles},
                      {"dram_read_bytes", l.dram_read_bytes},
                      {"dram_write_bytes", l.dram_write_bytes},
                      {"dram_bytes_lower_bound", l.dram_bytes_lower_bound},
                      {"tiling", l.tiling}});
  }
  return json{
      {"npusim_stats_version", 1},
      {"hardware", run.hw_name},
      {"workload", run.workload_name},
      {"batch", program.batch},
      {"seed", run.seed},
      {"fidelity", run.fidelity},
      {"clock_mhz", hw.clock_mhz},
      {"total_cycles", r.total_cycles},
      {"latency_s", latency},
      {"inferences_per_s", latency > 0 ? program.batch / latency : 0.0},
      {"macs", r.macs},
      {"ops_per_s", latency > 0 ? 2.0 * r.macs / latency : 0.0},
      {"mxu_utilization", utilization(hw, r)},
      {"instructions", r.instructions},
      {"units",
       {{"mxu_busy_cycles", r.mxu_busy_cycles},
        {"vpu_busy_cycles", r.vpu_busy_cycles},
        {"dma_load_busy_cycles", r.dma_load_busy_cycles},
        {"dma_store_busy_cycles", r.dma_store_busy_cycles}}},
      {"dram", {{"read_bytes", r.dram_read_bytes}, {"write_bytes", r.dram_write_bytes}}},
      {"memory", r.memory},
      {"dma",
       {{"bursts", r.dma_bursts},
        {"bank_conflict_cycles", r.dma_bank_conflict_cycles},
        {"window_full_cycles", r.dma_window_full_cycles},
        {"active_cycles", r.dma_active_cycles},
        {"compute_active_cycles", r.compute_active_cycles},
        {"compute_overlap_cycles", r.dma_compute_overlap_cycles},
        {"exposed_cycles", r.dma_active_cycles - r.dma_compute_overlap_cycles}}},
      {"dtype", to_string(program.dtype)},
      {"functional_check",
       {{"bit_exact", r.check.bit_exact},
        {"within_tolerance", r.check.within_tolerance},
        {"tolerance", r.check.tolerance},
        {"max_abs_error", r.check.max_abs_error},
        {"max_relative_error", r.check.max_relative_error},
        {"mismatches", r.check.mismatches},
        {"compared_values", r.check.compared}}},
      {"layers", layers},
      {"simulation", {{"wall_seconds", r.wall_seconds}}},
  };
}

std::string text_report(const HwConfig& hw, const Program& program, const SimulationResult& r,
                        const RunDescription& run, bool per_layer) {
  const double latency = latency_s(hw, r);
  std::string out = fmt::format(
      "npusim: {} on {} (batch {}, {}, seed {}, fidelity {})\n"
      "  total cycles       {}\n"
      "  latency            {:.3f} us at {} MHz\n"
      "  throughput         {:.1f} inferences/s\n"
      "  MACs               {}\n"
      "  MXU utilization    {:.2f} %\n"
      "  off-chip traffic   {} B read, {} B written\n"
      "  functional check   {}\n",
      run.workload_name, run.hw_name, program.batch, to_string(program.dtype), run.seed,
      run.fidelity, r.total_cycles,
      latency * 1e6, hw.clock_mhz, latency > 0 ? program.batch / latency : 0.0, r.macs,
      100.0 * utilization(hw, r), r.dram_read_bytes, r.dram_write_bytes,
      r.check.bit_exact
          ? fmt::format("outputs match the reference bit for bit ({} values)", r.check.compared)
      : r.check.within_tolerance
          ? fmt::format("outputs match the reference within {:g} of their range (max relative "
                        "error {:.2g}, {} values; bf16 sums in a different order)",
                        r.check.tolerance, r.check.max_relative_error, r.check.compared)
          : fmt::format("MISMATCH: {} of {} values differ from the reference, max abs error {:g}",
                        r.check.mismatches, r.check.compared, r.check.max_abs_error));
  if (r.memory.value("model", "") == "dram") {
    out += fmt::format(
        "  off-chip memory    {} ({} channels): {:.1f} of {:.1f} GB/s, row hits {:.1f} %, {} ACT, "
        "{} REF, {:.2f} pJ/bit\n",
        r.memory["preset"].get<std::string>(), r.memory["channels"].get<int>(),
        r.memory["bandwidth_gbps"].get<double>(), r.memory["peak_bandwidth_gbps"].get<double>(),
        100.0 * r.memory["row_hit_rate"].get<double>(), r.memory["act_commands"].get<uint64_t>(),
        r.memory["ref_commands"].get<uint64_t>(), r.memory["energy_pj_per_bit"].get<double>());
  }
  out += fmt::format("  DMA / compute      {} DMA cycles, {} overlapped with compute, {} exposed\n",
                     r.dma_active_cycles, r.dma_compute_overlap_cycles,
                     r.dma_active_cycles - r.dma_compute_overlap_cycles);
  if (per_layer) {
    out += fmt::format("\n  {:<16} {:<8} {:>12} {:>14} {:>8} {:>12} {:>12} {:>12}\n", "layer",
                       "op", "cycles", "MACs", "util %", "mxu stall", "dma exposed", "dram bytes");
    for (const auto& l : r.layers) {
      double util = l.cycles() == 0 ? 0.0 : 100.0 * l.macs / (hw.peak_macs_per_cycle() * l.cycles());
      out += fmt::format("  {:<16} {:<8} {:>12} {:>14} {:>8.2f} {:>12} {:>12} {:>12}\n", l.name,
                         l.op, l.cycles(), l.macs, util, l.mxu_stall_cycles, l.dma_exposed_cycles,
                         l.dram_read_bytes + l.dram_write_bytes);
    }
  }
  out += fmt::format("  simulated in {:.3f} s wall\n", r.wall_seconds);
  return out;
}

}  // namespace npusim
