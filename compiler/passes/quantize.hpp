// Quantization, after fusion (compiler/passes/fusion.hpp):
//   quantize_graph: int8 with per-output-channel weight scales, int32 biases, and activation
//     scales calibrated on a calibration batch (the run's input) or given by the workload.
// docs/quantization.md states the rules.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/ir/graph.hpp"

namespace npusim {

void quantize_graph(Graph& graph, const std::vector<int8_t>& calibration_input);
// The bf16 path instead of int8: weights rounded to bf16 (nearest even), biases and the vector
// unit's arithmetic in fp32, every tensor stored as bf16; no scales (all 1).
void prepare_bf16(Graph& graph);

}  // namespace npusim
