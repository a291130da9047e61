// Runs a compiled program on the SystemC model of the hardware and checks its outputs against the
// functional reference. One simulation per process (SystemC elaborates one design per process).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "arch/hw_config.hpp"
#include "arch/program.hpp"
#include "compiler/graph.hpp"
#include "models/systolic/array_model.hpp"

namespace npusim {

struct LayerStats {
  std::string name, op, fused;
  uint64_t macs = 0;
  uint64_t start_cycle = 0, end_cycle = 0;  // first instruction start, last completion
  uint64_t mxu_busy_cycles = 0, vpu_busy_cycles = 0, dma_busy_cycles = 0;
  uint64_t mxu_stall_cycles = 0;  // matrix units waiting for operands (mostly DMA)
  uint64_t dram_read_bytes = 0, dram_write_bytes = 0, dram_bytes_lower_bound = 0;
  std::string tiling;
  uint64_t cycles() const { return end_cycle - start_cycle; }
};

struct FunctionalCheck {
  bool bit_exact = false;
  int max_abs_error = 0;
  uint64_t mismatches = 0;
  uint64_t compared = 0;
};

struct SimulationResult {
  uint64_t total_cycles = 0;
  uint64_t instructions = 0;
  uint64_t macs = 0;
  uint64_t mxu_busy_cycles = 0, vpu_busy_cycles = 0, dma_load_busy_cycles = 0,
           dma_store_busy_cycles = 0;
  uint64_t dram_read_bytes = 0, dram_write_bytes = 0;
  std::vector<LayerStats> layers;
  std::vector<std::vector<int8_t>> outputs;  // per Program::outputs
  std::vector<std::vector<int8_t>> tensors;  // per Program::tensors, when asked for
  FunctionalCheck check;
  double wall_seconds = 0.0;
};

// `all_tensors`: also read every layer's output back from simulated memory.
SimulationResult simulate(const HwConfig& hw, const Program& program, const Graph& graph,
                          const std::vector<int8_t>& input, systolic::Fidelity fidelity,
                          bool all_tensors = false);

struct RunDescription {
  std::string hw_name, workload_name, fidelity;
  uint64_t seed = 0;
};

// stats.json: the one machine-readable result (docs/stats.md lists every key).
nlohmann::json stats_json(const HwConfig& hw, const Program& program, const SimulationResult& r,
                          const RunDescription& run);
// The human summary (also report.txt).
std::string text_report(const HwConfig& hw, const Program& program, const SimulationResult& r,
                        const RunDescription& run, bool per_layer);

}  // namespace npusim
