// Quantization, after fusion (compiler/passes/fusion.hpp):
//   quantize_graph: int8 with per-output-channel weight scales, int32 biases, and activation
//     scales calibrated on a calibration batch (the run's input) or given by the workload.
// docs/quantization.md states the rules.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compiler/ir/graph.hpp"
#include "compiler/reference/reference.hpp"

namespace npusim {

// `tensors`, if given, receives every tensor of the calibration batch by name: the quantized
// graph's reference values (run_reference on calibration_input gives the same).
void quantize_graph(Graph& graph, const std::vector<int8_t>& calibration_input,
                    std::map<std::string, Tensor8>* tensors = nullptr);
// For timing-only runs (npusim run --values off): the same layers, tables and instruction shapes
// without running the reference, every scale chosen as for a tensor of zeros and every int8
// weight zero. Timing never depends on values (docs/performance.md).
void quantize_graph_for_timing(Graph& graph);
// The bf16 path instead of int8: weights rounded to bf16 (nearest even), biases and the vector
// unit's arithmetic in fp32, every tensor stored as bf16; no scales (all 1).
void prepare_bf16(Graph& graph);

}  // namespace npusim
