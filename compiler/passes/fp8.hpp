// The fp8 path (--dtype fp8-e4m3 / fp8-e5m2, docs/quantization.md "fp8"), after prepare_bf16: the
// graph stays a bf16 graph (every tensor stored as bf16, the vector unit in fp32), and the matrix
// inputs of each convolution and dense layer become fp8, with one power-of-two scale per tensor
// (a per-tensor exponent bias):
// - weights: the scale maps the layer's largest |w| into (max / 2, max] of the format; each weight
//   is rounded from its real value to fp8 (nearest even, saturating) and kept, scaled back, in
//   bf16_weights (exact); the lowering stores them one byte each off chip.
// - inputs: the scale maps the largest |x| the layer's input takes on `calibration` (the run's
//   batch, run through the bf16 reference with the fp8 weights) into (max / 2, max]; the array
//   rounds each input to fp8 with it. Without a calibration batch (timing only) the exponent is
//   0: timing does not depend on it.
// Matmuls of two activations (attention's), embeddings and layers pinned to the host stay bf16,
// as Transformer Engine's fp8 recipe leaves attention's batched matmuls in bf16.
#pragma once

#include "compiler/ir/graph.hpp"
#include "compiler/reference/reference_bf16.hpp"

namespace npusim {

// `weights` as prepare_bf16's (false: timing only, weights left undrawn).
void prepare_fp8(Graph& graph, Fp8Format format, bool weights, const TensorF* calibration);

}  // namespace npusim
