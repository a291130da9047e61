// Runs a compiled program on the SystemC model of the hardware and checks its outputs against the
// functional reference. One simulation per process (SystemC elaborates one design per process).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "arch/hw_config.hpp"
#include "arch/program.hpp"
#include "compiler/ir/graph.hpp"
#include "compiler/passes/pruning.hpp"
#include "compiler/reference/reference.hpp"
#include "models/systolic/array_model.hpp"
#include "support/stats.hpp"
#include "support/timeline.hpp"

namespace npusim {

// What one layer's instructions did: its span and each unit's share (stats.json "layers").
struct LayerStats {
  uint64_t start_cycle = 0, end_cycle = 0;  // first instruction start, last completion
  uint64_t mxu_busy_cycles = 0, vpu_busy_cycles = 0, dma_busy_cycles = 0;
  uint64_t mxu_stall_cycles = 0;  // matrix units waiting for operands (mostly DMA)
  // Cycles of the layer's span with a DMA instruction in flight, with a compute (matrix or
  // vector) instruction in flight, with both, and with DMA alone (the DMA time compute did not
  // hide); bank-conflict cycles of its loads.
  uint64_t dma_active_cycles = 0, compute_active_cycles = 0, dma_compute_overlap_cycles = 0,
           dma_exposed_cycles = 0, bank_conflict_cycles = 0;
  uint64_t cycles() const { return end_cycle - start_cycle; }
};

// Every layer's output tensor is compared with the reference (npusim/tensor_check.hpp). int8: bit
// for bit with the whole-graph reference (errors in int8 steps). bf16: each layer against the
// reference applied to the simulator's own inputs of that layer, within the bound derived from its
// arithmetic (compiler/reference/reference_bf16_layer.hpp); the whole-graph comparison (errors in
// real values) is information.
struct FunctionalCheck {
  bool checked = false;  // false with --values off: nothing was computed, nothing compared
  bool bit_exact = false;
  bool within_tolerance = false;    // the verdict
  double max_abs_error = 0.0;       // against the whole-graph reference
  double max_relative_error = 0.0;  // max_abs_error / range, worst tensor
  uint64_t mismatches = 0;          // values that differ from the whole-graph reference
  uint64_t compared = 0;
  uint64_t tensors = 0;
  uint64_t bound_exceeded = 0;   // bf16: values outside their layer's bound (int8: mismatches)
  double max_bound_ratio = 0.0;  // bf16: worst |sim - layer reference| / allowed difference
  std::string first_mismatch;    // layer whose output first fails, in program order
};

struct RunDescription {
  std::string hw_name, workload_name, fidelity;
  uint64_t seed = 0;
  // false (npusim run --values off): the units compute no values and the reference check is
  // skipped; the timing is the same (docs/performance.md).
  bool values = true;
  // What int8 activation scales were calibrated on (stats.json quantization): "input" (the run's
  // own batch), "file:<path>" (--calibration), or "none" (bf16); samples, method ("max",
  // "percentile", or "none") and percentile (0 unless the method is percentile).
  std::string calibration = "none";
  int calibration_samples = 0;
  std::string calibration_method = "none";
  double calibration_percentile = 0.0;
  // Weight pruning (docs/compression.md): what was asked for, and every counted layer's sparsity.
  std::string prune = "none";
  std::vector<WeightSparsity> weight_sparsity{};
  // The weights of convolutions and dense layers: "int4" (--weight-dtype), or "" for the
  // program's data type.
  std::string weight_dtype{};
};

struct SimulationResult {
  uint64_t total_cycles = 0;
  uint64_t macs = 0;
  std::vector<std::vector<uint8_t>> outputs;  // stored bytes, per Program::outputs
  std::vector<std::vector<uint8_t>> tensors;  // per Program::tensors, when asked for
  FunctionalCheck check;
  double wall_seconds = 0.0;
  double hazard_check_seconds = 0.0;
  double functional_check_seconds = 0.0;
  // stats.json, formatted from the stats registry, and what each of its figures is.
  nlohmann::json stats;
  std::vector<stats::Descriptor> descriptors;
  // Why the --vcd file could not be written ("" when it was, or none was asked for).
  std::string vcd_error;
};

// What a run records besides its results (nothing by default): the timeline for the trace writers
// (traces/), and waveforms written by SystemC's VCD tracing to `vcd_path` (via a temporary file
// renamed once the simulation finished).
struct Recording {
  timeline::Timeline* timeline = nullptr;
  std::string vcd_path;
};

// `all_tensors`: also read every layer's output back from simulated memory. `reference`: the
// int8 reference's tensors of this input if the caller has them (quantize_graph's calibration on
// the same input computes them), else the check runs the reference.
SimulationResult simulate(const HwConfig& hw, const Program& program, const Graph& graph,
                          const std::vector<uint8_t>& input, systolic::Fidelity fidelity,
                          const RunDescription& run, bool all_tensors = false,
                          const Recording& recording = {},
                          const std::map<std::string, Tensor8>* reference = nullptr);

// The human summary (also report.txt), from a run's stats.json: no host figure, so the same input
// gives the same text.
std::string text_report(const nlohmann::json& stats, bool per_layer);

}  // namespace npusim
