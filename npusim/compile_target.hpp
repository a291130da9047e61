// From a Target (npusim/npusim.hpp) to a compiled program: the hardware loaded, the workload
// loaded with its parameters and input, quantized (calibrated on the run's input or a separate
// batch) or prepared for bf16, fused and compiled. A network that does not fit is an InputError.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "arch/hw_config.hpp"
#include "arch/program.hpp"
#include "compiler/ir/graph.hpp"
#include "compiler/lowering/tensor_parallel.hpp"
#include "compiler/passes/pruning.hpp"
#include "compiler/passes/quantize.hpp"
#include "npusim/npusim.hpp"

namespace npusim {

struct Compiled {
  HwConfig hw;
  Graph graph;
  Program program;
  std::vector<uint8_t> input;        // stored bytes of the input batch (int8 or bf16)
  std::vector<float> input_real;     // its real values, channels last (the float32 reference's)
  std::string calibration = "none";  // what int8 scales were calibrated on (stats.json)
  int calibration_samples = 0;
  CalibrationOptions calibration_options;
  // int8 calibrated on the run's own input: every tensor of the reference on `input`, from the
  // calibration, so the check need not run the reference again.
  std::map<std::string, Tensor8> reference;
  // The pruning asked for (--prune, or "none") and the sparsity of every layer whose weights are
  // stored, after it.
  std::string prune = "none";
  std::vector<WeightSparsity> weight_sparsity;
  // --weight-dtype: "int4", or "" (the run's data type).
  std::string weight_dtype;
};

// `keep_real_weights`: keep the float weights of an int8 graph for the float32 reference.
// `values` false: a timing-only run's compilation (quantize_graph_for_timing, no reference).
Compiled load_and_compile(const Target& target, bool keep_real_weights = false, bool values = true);

// A graph built in memory (npusim generate's prefill and decode steps) compiled on `hw` as
// load_and_compile compiles a loaded workload: parameters it lacks drawn from target.seed (on
// demand), its input given, quantized on that input (int8 with values), prepared for bf16, or
// quantized for timing; fused and compiled with target.parallel. The dtype is target.dtype or
// the hardware's. `cores`: the builder placed the layers on cores (compile_placed; no fusion
// across cores) instead of target.parallel.
Compiled compile_graph(const HwConfig& hw, Graph graph, std::vector<uint8_t> input,
                       std::vector<float> input_real, const Target& target, bool values,
                       const LayerCores* cores = nullptr);

// The hardware of a target: its file or preset, or its description.
HwConfig target_hardware(const Target& target);

}  // namespace npusim
