// The programs of a decoder's generation as IR graphs (docs/llm.md "How generation runs"):
//
// - prefill: batch B sequences of P prompt ids -> the logits of each sequence's last position
//   ("logits", [1, vocab]) and every layer's keys and values ("k{i}", "v{i}", [kv_heads, P,
//   head_dim], keys after their rotary rotation);
// - decode step at past length L: one id per sequence (the graph's sample is [B] ids, batch 1) ->
//   "logits" [B, vocab] and the step's new key and value rows "k{i}", "v{i}" [B, kv_heads *
//   head_dim]. Its attention reads the KV cache of length L from off-chip memory: the cache of
//   sequence b and KV head g is the weight operand of two matrix products (q K^T over L
//   positions, probabilities x V), so every step loads L rows per head, and the G query heads that
//   share a KV head (grouped-query attention) read its cache once, as G rows of one product.
//
// Attention is the standard one: scores = q k^T / sqrt(head_dim) (the scale folded into the query
// projection), a causal mask in prefill, softmax, probabilities x v; heads are a leading batch
// dimension of the matrix products, moved there and back by kMove layers. RMSNorm is composed of
// IR operators: LayerNorm over [x, -x] has mean 0 and variance mean(x^2), so its first half is
// x / sqrt(mean(x^2) + eps) * gamma. SwiGLU is silu(gate) * up with silu = x * sigmoid(x). Rotary
// positions are x * cos + rotate_half(x) * sin with constant tables (affine layers) and a kMove.
#pragma once

#include <vector>

#include "arch/types.hpp"
#include "compiler/frontend/llm/decoder_config.hpp"
#include "compiler/frontend/llm/decoder_weights.hpp"
#include "compiler/ir/graph.hpp"

namespace npusim {

// The KV cache's values: keys[layer][b * kv_heads + g] holds `length` rows of head_dim values of
// sequence b's KV head g (rows in position order), values likewise.
struct KvCache {
  int length = 0;
  std::vector<std::vector<std::vector<float>>> keys, values;
};

// `weights` null: timing only; the parameters (and the cache) are drawn by materialize_parameters
// instead (none of them changes a cycle). `dtype` chooses the causal mask's fill.
Graph build_prefill_graph(const DecoderConfig& config, const DecoderWeights* weights, int prompt,
                          int batch, DataType dtype);
Graph build_decode_graph(const DecoderConfig& config, const DecoderWeights* weights,
                         const KvCache* cache, int past, int batch);

}  // namespace npusim
