// Quantization, after fusion (compiler/passes/fusion.hpp):
//   quantize_graph: int8 with per-output-channel weight scales, int32 biases, and activation
//     scales calibrated on a calibration batch (the run's input, or a separate batch) or given by
//     the workload.
// docs/quantization.md states the rules.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compiler/ir/graph.hpp"
#include "compiler/reference/reference.hpp"

namespace npusim {

// How an activation scale is chosen from the real values a tensor takes on the calibration batch:
// the scale maps calibration_magnitude(values) to 127.
//   kMax: the largest |x|;
//   kPercentile: the `percentile`-th percentile of |x| (nearest rank: the ceil(P / 100 * n)-th
//     smallest of the n magnitudes), so rare outliers saturate instead of widening every step.
enum class CalibrationMethod { kMax, kPercentile };
struct CalibrationOptions {
  CalibrationMethod method = CalibrationMethod::kMax;
  double percentile = 99.99;  // kPercentile only, in (0, 100]
};
const char* to_string(CalibrationMethod method);
float calibration_magnitude(const std::vector<float>& values, const CalibrationOptions& options);

// The calibration batch: `samples` inputs (samples x input elements, int8 on graph.input_scale),
// which need not be the batch the graph runs on.
// `tensors`, if given, receives every tensor of the calibration batch by name: the quantized
// graph's reference values on it (run_reference on the same batch gives the same).
void quantize_graph(Graph& graph, const std::vector<int8_t>& calibration_batch, int samples,
                    const CalibrationOptions& options,
                    std::map<std::string, Tensor8>* tensors = nullptr);
// Calibrates on the run's own input (graph.batch samples), with the largest magnitude.
void quantize_graph(Graph& graph, const std::vector<int8_t>& calibration_input);
// For timing-only runs (npusim run --values off): the same layers, tables and instruction shapes
// without running the reference, every scale chosen as for a tensor of zeros; the matrix layers'
// int8 weights are left empty (the program gets their size, no contents). Timing never depends on
// values (docs/performance.md).
void quantize_graph_for_timing(Graph& graph);
// The bf16 path instead of int8: weights rounded to bf16 (nearest even), biases and the vector
// unit's arithmetic in fp32, every tensor stored as bf16; no scales (all 1). Layers marked
// int4_weights are left to prepare_w4a16 (compiler/passes/w4a16.hpp).
// weights false (timing only): the matrix layers' weights are neither drawn nor rounded and stay
// empty, as quantize_graph_for_timing leaves the int8 ones.
void prepare_bf16(Graph& graph, bool weights = true);

}  // namespace npusim
