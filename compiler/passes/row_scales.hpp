// Per-row (per-token) activation scales (docs/quantization.md "Per-row scales"): the rule that
// gives a tensor a scale per row where one per-tensor scale would round a row far below the
// tensor's largest to a handful of codes (ViT's class token: docs/onnx.md).
//
// Contract: a tensor gets row scales only when (1) its producer can requantize each row on its own
// scale: a depthwise 1x1 convolution over one pixel (an elementwise affine with a multiplier per
// element, onnx_affine.cpp: free), or an add of two same-shape tensors (a ratio per row and
// operand: one vector instruction per run of rows on the same ratios); no activation; (2) every
// layer that reads it, followed through reshapes, works row by row: a layer norm over the last
// axis (at least one), or an add of two same-shape tensors; it is not a graph output; (3) on the
// calibration batch some row's magnitude is below 1/kSmallRowRatio of the tensor's. Then each such
// small row gets its own scale and the other rows keep the tensor's, bit for bit, so a graph where
// no tensor qualifies quantizes as before.
#pragma once

#include <vector>

#include "compiler/ir/graph.hpp"
#include "compiler/passes/quantize.hpp"
#include "compiler/passes/tensor_index.hpp"

namespace npusim {

// A row is small when its calibrated magnitude times this is below the tensor's.
inline constexpr float kSmallRowRatio = 8.0f;
// A small row's scale is at least the tensor's over this (a row of zeros needs no finer one).
inline constexpr float kSmallestRowScaleRatio = 256.0f;

// The row length of the row-wise readers of `layer`'s output ((2) above), or 0 when some reader
// is not row-wise, the tensor is a graph output, no layer norm reads it, or `layer` is not a
// producer of kind (1).
int row_scale_candidate(const Graph& g, const TensorIndex& index, const Layer& layer);

// Rule (3) on the real output values `real` (samples x elements per sample, row-major) of a
// tensor of scale `tensor_scale` in rows of `row_length`: one scale per row of a sample, or empty
// when no row is small.
std::vector<float> choose_row_scales(const std::vector<float>& real, uint64_t sample_elements,
                                     int row_length, float tensor_scale,
                                     const CalibrationOptions& options);

}  // namespace npusim
