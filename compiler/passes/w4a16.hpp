// W4A16, weight-only int4 with bf16 activations (--dtype bf16 --weight-dtype int4
// [--weight-group G], docs/compression.md "W4A16"), after prepare_bf16: the graph stays a bf16
// graph, and each convolution and dense layer marked int4_weights has its weights quantized
// symmetrically to int4 with a bf16 scale per output channel, or per group of G consecutive
// weights along the reduction axis and output channel (as GPTQ and AWQ deploy them):
// - the scale s is the group's largest |w| / 7 rounded to bf16 (nearest even; 0 for a group of
//   zeros);
// - z = w / s (fp32) rounded half away from zero and clamped to [-7, 7] (0 where s is 0);
// - the weight the matrix unit gets is int4_bf16_weight(z, s) (arch/compressed_weights.hpp): z x s
//   rounded to bf16, which is what the DMA's decompressor writes and what bf16_weights hold, so the
//   bf16 reference computes with the same weights.
// The scales go to int4_scales; the lowering stores z and s off chip (int4-bf16 format).
#pragma once

#include "compiler/ir/graph.hpp"

namespace npusim {

// `weights` as prepare_bf16's (false: timing only, weights left undrawn and nothing computed).
void prepare_w4a16(Graph& graph, bool weights);

}  // namespace npusim
