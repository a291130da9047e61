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
// dimension of the matrix products, moved there and back by kMove layers. RMSNorm is a layernorm
// layer with `rms` set (the vector unit's RMSNORM: x / sqrt(mean(x^2) + eps) * gamma). SwiGLU is
// silu(gate) * up with silu = x * sigmoid(x). Rotary positions are x * cos + rotate_half(x) * sin
// with constant tables (affine layers) and a kMove.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "arch/hw_config.hpp"
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

// Megatron-style tensor parallelism of a decode step (docs/llm.md "Tensor parallelism"): core c
// owns query heads [q_begin, q_end), the KV heads they read [kv_begin, kv_end) (whole KV groups
// when there are at least as many KV heads as cores; else each core computes, and caches, the KV
// heads of its queries, a KV head shared by cores computed on each) and FFN columns [ffn_begin,
// ffn_end). It computes its heads' attention, its rows of the output projection (a partial sum),
// its columns of the up / gate projections and its rows of the down projection (another partial
// sum). Core 0 adds the partials to the residual (the all-reduce's reduction; a partial on another
// core comes over the interconnect) and every core's norm reads the sum (the broadcast, over the
// interconnect too). Norms run on every core; the output projection splits by vocabulary columns.
struct DecoderShard {
  int q_begin = 0, q_end = 0, kv_begin = 0, kv_end = 0, ffn_begin = 0, ffn_end = 0;
};
// min(cores, heads) shards, as even as the heads (or KV groups) and FFN columns allow.
std::vector<DecoderShard> decoder_shards(const DecoderConfig& config, int cores);

// `shards` null or one: one core, the layers as documented above. Several: the graph of the split
// step, each core's layers named "h{i}.c{core}.*", its cache rows output as "k{i}.c{core}" and
// "v{i}.c{core}" [B, (kv_end - kv_begin) * head_dim]; `core_of` gets each layer's core
// (-1: the output projection, split over every core by its columns).
// The prefill split the same way: each core's cache "k{i}.c{core}", "v{i}.c{core}" [kv_end -
// kv_begin, P, head_dim] per sequence.
//
// `hw` (null: no limit) bounds what one row of a layer may hold, so that long prompts compile
// (docs/llm.md "Long prompts"): when a layer whose constants repeat with the positions (the
// causal mask, the rotary tables, learned positions) would not tile on `hw` with P positions in
// one row, that part of the graph runs in blocks of positions (prefill_blocks): the attention per
// block of query rows (scores, mask, softmax and context of those rows against all P keys), the
// keys' rotation and the learned positions per block of positions. An elementwise affine layer
// whose row of P positions would not tile is viewed as several rows. Where
// everything tiles, the graph is the unblocked one described above.
Graph build_prefill_graph(const DecoderConfig& config, const DecoderWeights* weights, int prompt,
                          int batch, DataType dtype,
                          const std::vector<DecoderShard>* shards = nullptr,
                          std::map<std::string, int>* core_of = nullptr,
                          const HwConfig* hw = nullptr);

// The prefill's blocks: rows per block of the `prompt` positions for the attention (a block's
// causal mask is [heads, rows x prompt]), the keys' rotation ([kv heads, rows x head_dim]) and
// learned positions ([1, rows x hidden]): all of them when that layer tiles on `hw` (null: no
// limit), else the largest power of two of rows that does; the heads those of the largest shard
// (`shards` null: one core). Throws UserError when a single row does not tile (a prompt too long
// for that buffer): called before a run starts, it refuses the run then.
struct PrefillBlocks {
  int attention_rows = 0, key_rows = 0, position_rows = 0;
};
PrefillBlocks prefill_blocks(const DecoderConfig& config, int prompt, DataType dtype,
                             const std::vector<DecoderShard>* shards, const HwConfig* hw);
Graph build_decode_graph(const DecoderConfig& config, const DecoderWeights* weights,
                         const KvCache* cache, int past, int batch,
                         const std::vector<DecoderShard>* shards = nullptr,
                         std::map<std::string, int>* core_of = nullptr);

}  // namespace npusim
