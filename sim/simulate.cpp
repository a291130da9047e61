#include "sim/simulate.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "models/soc.hpp"
#include "compiler/reference.hpp"
#include "support/error.hpp"

namespace npusim {

SimulationResult simulate(const HwConfig& hw, const Program& program, const Graph& graph,
                          const std::vector<int8_t>& input, systolic::Fidelity fidelity,
                          bool all_tensors) {
  const auto wall_start = std::chrono::steady_clock::now();
  NPUSIM_CHECK(input.size() == program.input.bytes(), "input has {} bytes, the program expects {}",
               input.size(), program.input.bytes());
  Soc soc("soc", hw, program, fidelity);
  std::memcpy(soc.memory.contents().data() + program.input.dram_addr, input.data(), input.size());

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
  r.dma_load_busy_cycles = soc.dma_load.stats().busy_cycles;
  r.dma_store_busy_cycles = soc.dma_store.stats().busy_cycles;
  r.dram_read_bytes = soc.memory.bytes_read();
  r.dram_write_bytes = soc.memory.bytes_written();

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
    s.dma_busy_cycles =
        soc.dma_load.layer_busy_cycles()[li] + soc.dma_store.layer_busy_cycles()[li];
    r.layers.push_back(std::move(s));
  }

  // Outputs from simulated off-chip memory, against the reference.
  const auto reference = run_reference(graph, input);
  bool exact = true;
  for (const auto& out : program.outputs) {
    const uint8_t* base = soc.memory.contents().data() + out.dram_addr;
    std::vector<int8_t> sim(out.bytes());
    std::memcpy(sim.data(), base, sim.size());
    const auto& ref = reference.at(out.name);
    NPUSIM_CHECK(ref.size() == sim.size(), "output {}: {} simulated values, {} reference values",
                 out.name, sim.size(), ref.size());
    for (size_t i = 0; i < sim.size(); ++i) {
      int err = std::abs(int(sim[i]) - int(ref[i]));
      r.check.max_abs_error = std::max(r.check.max_abs_error, err);
      if (err != 0) {
        ++r.check.mismatches;
        exact = false;
      }
    }
    r.check.compared += sim.size();
    r.outputs.push_back(std::move(sim));
  }
  r.check.bit_exact = exact;
  for (size_t i = 0; all_tensors && i < program.tensors.size(); ++i) {
    const TensorPlacement& t = program.tensors[i];
    const uint8_t* base = soc.memory.contents().data() + t.dram_addr;
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
      {"functional_check",
       {{"bit_exact", r.check.bit_exact},
        {"max_abs_error", r.check.max_abs_error},
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
      "npusim: {} on {} (batch {}, seed {}, fidelity {})\n"
      "  total cycles       {}\n"
      "  latency            {:.3f} us at {} MHz\n"
      "  throughput         {:.1f} inferences/s\n"
      "  MACs               {}\n"
      "  MXU utilization    {:.2f} %\n"
      "  off-chip traffic   {} B read, {} B written\n"
      "  functional check   {}\n",
      run.workload_name, run.hw_name, program.batch, run.seed, run.fidelity, r.total_cycles,
      latency * 1e6, hw.clock_mhz, latency > 0 ? program.batch / latency : 0.0, r.macs,
      100.0 * utilization(hw, r), r.dram_read_bytes, r.dram_write_bytes,
      r.check.bit_exact
          ? fmt::format("outputs match the reference bit for bit ({} values)", r.check.compared)
          : fmt::format("MISMATCH: {} of {} values differ from the reference, max abs error {}",
                        r.check.mismatches, r.check.compared, r.check.max_abs_error));
  if (per_layer) {
    out += fmt::format("\n  {:<16} {:<8} {:>12} {:>14} {:>8} {:>12} {:>12}\n", "layer", "op",
                       "cycles", "MACs", "util %", "mxu stall", "dram bytes");
    for (const auto& l : r.layers) {
      double util = l.cycles() == 0 ? 0.0 : 100.0 * l.macs / (hw.peak_macs_per_cycle() * l.cycles());
      out += fmt::format("  {:<16} {:<8} {:>12} {:>14} {:>8.2f} {:>12} {:>12}\n", l.name, l.op,
                         l.cycles(), l.macs, util, l.mxu_stall_cycles,
                         l.dram_read_bytes + l.dram_write_bytes);
    }
  }
  out += fmt::format("  simulated in {:.3f} s wall\n", r.wall_seconds);
  return out;
}

}  // namespace npusim
