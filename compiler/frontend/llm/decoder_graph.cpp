#include "compiler/frontend/llm/decoder_graph.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "arch/hw_config.hpp"
#include "compiler/ir/shape_inference.hpp"
#include "support/error.hpp"

namespace npusim {

namespace {

// Whether one row of `pixels` x `channels` of an affine layer (a depthwise 1x1 convolution) tiles
// on `hw` with every operand off chip, as compiler/lowering/tiling.cpp decides for a block of one
// output row: two input rows, two output rows of min(channels, cols) channels and the bias in the
// unified buffer (64-byte aligned), the row's 32-bit sums in one unit's half of the accumulators.
// The frontend does not call the tiler (compiler_layering_test); this is its rule for that case.
bool affine_row_fits(const HwConfig& hw, int pixels, int channels, int element_bytes) {
  auto align = [](uint64_t x) { return (x + 63) / 64 * 64; };
  const uint64_t n_tile = uint64_t(std::min(channels, hw.matrix_unit.cols));
  const uint64_t es = uint64_t(element_bytes), w = uint64_t(pixels), c = uint64_t(channels);
  const uint64_t scratch = 2 * align(w * c * es) + 2 * align(w * n_tile * es) + align(4 * c);
  const uint64_t acc_half = hw.accumulators.capacity_bytes / uint64_t(hw.matrix_unit.count) / 8 * 4;
  return scratch <= hw.unified_buffer.capacity_bytes && w * n_tile * 4 <= acc_half;
}

// Adds layers to a graph; each layer's output tensor is named after the layer.
class Builder {
 public:
  Builder(const DecoderConfig& c, const DecoderWeights* w) : c_(c), w_(w) {}

  // Affine layers whose row would not tile on `hw` are viewed as several rows (affine()).
  void limit_affine_rows(const HwConfig* hw, int element_bytes) {
    hw_ = hw;
    element_bytes_ = element_bytes;
  }

  Graph& graph() { return g_; }

  Layer& add(OpKind kind, const std::string& name, std::vector<std::string> inputs) {
    Layer l;
    l.name = name;
    l.kind = kind;
    l.inputs = std::move(inputs);
    l.output = name;
    g_.layers.push_back(std::move(l));
    return g_.layers.back();
  }

  // A weight tensor by key (empty when timing only), times `scale`.
  std::vector<float> param(const std::string& key, float scale = 1.0f) const {
    if (!w_) return {};
    std::vector<float> v = w_->at(key);
    if (scale != 1.0f)
      for (float& x : v) x *= scale;
    return v;
  }

  // y = x W (+ b); W [in][units] from `key`.w, b from `key`.b when the model has biases.
  std::string dense(const std::string& name, const std::string& x, const std::string& key,
                    int units, float scale = 1.0f, Activation act = Activation::kNone) {
    Layer& l = add(OpKind::kDense, name, {x});
    l.filters = units;
    l.activation = act;
    l.use_bias = c_.bias;
    l.weights = param(key + ".w", scale);
    if (c_.bias) l.bias = param(key + ".b", scale);
    return name;
  }

  // Columns [begin, end) of dense `key` (W [in][units]); the whole layer when they are all.
  std::string dense_part(const std::string& name, const std::string& x, const std::string& key,
                         int units, int begin, int end, float scale = 1.0f,
                         Activation act = Activation::kNone) {
    if (begin == 0 && end == units) return dense(name, x, key, units, scale, act);
    Layer& l = add(OpKind::kDense, name, {x});
    l.filters = end - begin;
    l.activation = act;
    l.use_bias = c_.bias;
    if (!w_) return name;
    const std::vector<float> wt = param(key + ".w", scale);
    const size_t in = wt.size() / size_t(units);
    for (size_t r = 0; r < in; ++r)
      l.weights.insert(l.weights.end(), wt.begin() + long(r * size_t(units) + size_t(begin)),
                       wt.begin() + long(r * size_t(units) + size_t(end)));
    if (c_.bias) {
      const std::vector<float> bias = param(key + ".b", scale);
      l.bias.assign(bias.begin() + begin, bias.begin() + end);
    }
    return name;
  }

  // Rows [begin, end) of dense `key` (its inputs [begin, end)): a partial sum of its output; the
  // bias with `bias` only (one of the partials carries it).
  std::string dense_rows(const std::string& name, const std::string& x, const std::string& key,
                         int units, int begin, int end, int rows, bool bias) {
    if (begin == 0 && end == rows && bias) return dense(name, x, key, units);
    Layer& l = add(OpKind::kDense, name, {x});
    l.filters = units;
    l.use_bias = c_.bias && bias;
    if (!w_) return name;
    const std::vector<float> wt = param(key + ".w");
    l.weights.assign(wt.begin() + long(size_t(begin) * size_t(units)),
                     wt.begin() + long(size_t(end) * size_t(units)));
    if (l.use_bias) l.bias = param(key + ".b");
    return name;
  }

  // x + partials[0] + partials[1] + ..., one add after another; the last one named `name`.
  std::string reduce(const std::string& name, const std::string& x,
                     const std::vector<std::string>& partials) {
    std::string sum = x;
    for (size_t k = 0; k < partials.size(); ++k) {
      const std::string to = k + 1 == partials.size() ? name : fmt::format("{}{}", name, k);
      add(OpKind::kAdd, to, {sum, partials[k]});
      sum = to;
    }
    return sum;
  }

  // A dense layer with weights given (the KV cache; the tied output projection), no bias.
  std::string dense_with(const std::string& name, const std::string& x, int units,
                         std::vector<float> weights) {
    Layer& l = add(OpKind::kDense, name, {x});
    l.filters = units;
    l.use_bias = false;
    l.weights = std::move(weights);
    if (!l.weights.empty()) l.bias.assign(size_t(units), 0.0f);
    return name;
  }

  // y = x * scale + shift elementwise, the constants repeating with period `period` over x's
  // `elements` values: a depthwise 1x1 convolution with one channel per position of the period,
  // on x viewed as [1, elements / period, period].
  std::string affine(const std::string& name, const std::string& x, const std::vector<int>& dims,
                     std::vector<float> scale, std::vector<float> shift) {
    const int period = int(scale.size());
    uint64_t elements = 1;
    for (int d : dims) elements *= uint64_t(d);
    NPUSIM_CHECK(period > 0 && elements % uint64_t(period) == 0 && shift.size() == scale.size(),
                 "affine {}: period {} of {} elements", name, period, elements);
    const std::string map = name + "_as_map", conv = name + "_affine";
    // One row of `pixels` positions of the period, unless it outgrows the limits: then rows of
    // the largest divisor of them that fits.
    int rows = 1, pixels = int(elements / uint64_t(period));
    auto fits = [&](int k) { return affine_row_fits(*hw_, k, period, element_bytes_); };
    if (hw_ && !fits(pixels)) {
      int k = pixels;
      while (k > 1 && (pixels % k != 0 || !fits(k))) --k;
      rows = pixels / k;
      pixels = k;
    }
    add(OpKind::kReshape, map, {x}).reshape_to = {rows, pixels, period};
    Layer& l = add(OpKind::kConv, conv, {map});
    l.filters = period;
    l.groups = period;
    l.use_bias = true;
    l.weights = std::move(scale);
    l.bias = std::move(shift);
    add(OpKind::kReshape, name, {conv}).reshape_to = dims;
    return name;
  }

  // out[o] = in[source(o)] of one input, the output of shape `dims`.
  template <class F>
  std::string move(const std::string& name, std::vector<std::string> inputs,
                   const std::vector<int>& dims, const std::string& op, F source) {
    Layer& l = add(OpKind::kMove, name, std::move(inputs));
    l.reshape_to = dims;
    l.move_op = op;
    uint64_t n = 1;
    for (int d : dims) n *= uint64_t(d);
    for (uint64_t o = 0; o < n; ++o) l.move_from.push_back(source(o));
    return name;
  }

  // LayerNorm, or RMSNorm (the vector unit's RMSNORM: a layer norm without the mean).
  std::string norm(const std::string& name, const std::string& x, const std::string& key) {
    Layer& l = add(OpKind::kLayerNorm, name, {x});
    l.epsilon = c_.norm_epsilon;
    l.rms = c_.rms_norm;
    l.gamma = param(key + ".g");
    if (!c_.rms_norm) {
      l.beta = param(key + ".b");
    } else if (w_) {
      l.beta.assign(size_t(c_.hidden), 0.0f);
    }
    return name;
  }

  // The rotary tables for x viewed as rows of `width` values, each row at position pos(row),
  // the head of size d repeating along the row: x * cos + rotate_half(x) * sin'.
  template <class Pos>
  std::string rope(const std::string& name, const std::string& x, const std::vector<int>& dims,
                   int rows_per_period, int width, Pos pos) {
    const int d = c_.head_dim(), half = d / 2;
    std::vector<float> cosv, sinv;
    for (int r = 0; r < rows_per_period; ++r) {
      const double p = pos(r);
      for (int j = 0; j < width; ++j) {
        const int jj = j % d, k = jj % half;
        const double freq = std::pow(double(c_.rope_theta), -2.0 * k / d);
        cosv.push_back(float(std::cos(p * freq)));
        sinv.push_back(float((jj < half ? -1.0 : 1.0) * std::sin(p * freq)));
      }
    }
    const std::string a = affine(name + "_cos", x, dims, cosv, std::vector<float>(cosv.size()));
    const std::string rot = move(name + "_rotate", {x}, dims, "RotateHalf", [&](uint64_t o) {
      const uint64_t j = o % uint64_t(d), base = o - j;
      return MoveSource{0, int32_t(base + (j + uint64_t(half)) % uint64_t(d))};
    });
    const std::string b = affine(name + "_sin", rot, dims, sinv, std::vector<float>(sinv.size()));
    add(OpKind::kAdd, name, {a, b});
    return name;
  }

  // The FFN of layer `p` on x [rows, hidden]: its hidden columns [begin, end) (all of them on
  // one core), named with prefix `pc`; the down projection's bias with `bias`.
  std::string ffn(const std::string& pc, const std::string& p, const std::string& x, int begin,
                  int end, bool bias) {
    const int f = c_.ffn;
    if (!c_.swiglu) {
      const std::string up = dense_part(pc + "ffn_up", x, p + "up", f, begin, end, 1.0f,
                                        c_.gelu_tanh ? Activation::kGeluTanh : Activation::kGelu);
      return dense_rows(pc + "ffn_down", up, p + "down", c_.hidden, begin, end, f, bias);
    }
    const std::string gate = dense_part(pc + "ffn_gate", x, p + "gate", f, begin, end);
    const std::string up = dense_part(pc + "ffn_up", x, p + "up", f, begin, end);
    add(OpKind::kActivation, pc + "ffn_gate_sigmoid", {gate}).activation = Activation::kSigmoid;
    add(OpKind::kMul, pc + "ffn_silu", {gate, pc + "ffn_gate_sigmoid"});
    add(OpKind::kMul, pc + "ffn_swiglu", {pc + "ffn_silu", up});
    return dense_rows(pc + "ffn_down", pc + "ffn_swiglu", p + "down", c_.hidden, begin, end, f,
                      bias);
  }

  // The output projection: the token embedding transposed when tied.
  std::vector<float> lm_head() const {
    if (!w_) return {};
    if (!c_.tied_embeddings) return w_->at("lm_head");
    const std::vector<float>& e = w_->at("wte");
    const size_t v = size_t(c_.vocab), h = size_t(c_.hidden);
    std::vector<float> t(v * h);
    for (size_t r = 0; r < v; ++r)
      for (size_t j = 0; j < h; ++j) t[j * v + r] = e[r * h + j];
    return t;
  }

  void finish(const std::vector<std::string>& outputs) {
    g_.outputs = outputs;
    GraphDiagnostics diag(g_.name);
    std::vector<std::string> where;
    for (const Layer& l : g_.layers) where.push_back("layer '" + l.name + "'");
    finalize_graph(g_, diag, where);
  }

 private:
  const DecoderConfig& c_;
  const DecoderWeights* w_;
  Graph g_;
  const HwConfig* hw_ = nullptr;
  int element_bytes_ = 1;
};

void start(Builder& b, const DecoderConfig& c, const std::string& phase, int ids) {
  Graph& g = b.graph();
  g.name = fmt::format("{}-{}", c.name, phase);
  g.description = c.description;
  g.input_name = "ids";
  g.input_shape.dims = {ids};
  g.input_ids = true;
  Layer& e = b.add(OpKind::kEmbedding, "embed", {"ids"});
  e.filters = c.hidden;
  e.weights = b.param("wte");
  if (e.weights.empty()) e.weights.assign(size_t(c.vocab) * size_t(c.hidden), 0.0f);
}

// Marks the layers added since `first` as placed on `core` (no placement map: one core).
void place_layers(Builder& b, std::map<std::string, int>* core_of, size_t first, int core) {
  if (!core_of) return;
  for (size_t i = first; i < b.graph().layers.size(); ++i) {
    (*core_of)[b.graph().layers[i].name] = core;
  }
}

// After attention's partial sums: their all-reduce into the residual `x`, then the FFN split by
// columns (up / gate) and rows (down) over the shards, its partials all-reduced into the residual
// again (core 0 adds each partial brought over the interconnect; every core reads the sum back).
// `rows`: the positions each core's norm covers. Returns the layer's output.
std::string ffn_after_attention(Builder& b, const std::vector<DecoderShard>& parts,
                                const std::string& p, const std::string& x,
                                std::vector<std::string>& partials, int rows,
                                std::map<std::string, int>* core_of) {
  const std::string attn = b.reduce(p + "attn_residual", x, partials);
  partials.clear();
  const int N = static_cast<int>(parts.size());
  for (int core = 0; core < N; ++core) {
    const DecoderShard& sh = parts[size_t(core)];
    const size_t first = b.graph().layers.size();
    const std::string pc = N == 1 ? p : fmt::format("{}c{}.", p, core);
    const std::string n2 = b.norm(pc + "norm2", attn, p + "ln2");
    partials.push_back(b.ffn(pc, p, n2, sh.ffn_begin, sh.ffn_end, core == 0));
    place_layers(b, core_of, first, core);
  }
  return b.reduce(p + "ffn_residual", attn, partials);
}

}  // namespace

namespace {

// Rows per block of P positions for an affine layer of `pixels` x (rows x `width`) per row
// (PrefillBlocks): P when that fits, else the largest power of two that does.
int block_rows(const HwConfig* hw, int P, int pixels, int width, int es) {
  auto fits = [&](int rows) { return affine_row_fits(*hw, pixels, rows * width, es); };
  if (!hw || fits(P)) return P;
  if (!fits(1)) {
    throw UserError(fmt::format(
        "a prefill of {} tokens does not fit: the causal mask of one query row ({} heads x {} "
        "positions) does not tile in {}'s unified buffer of {} bytes; use a shorter prompt or "
        "a larger buffers.unified_buffer.capacity_bytes",
        P, pixels, width, hw->name, hw->unified_buffer.capacity_bytes));
  }
  int rows = 1;
  while (rows * 2 < P && fits(rows * 2)) rows *= 2;
  return rows;
}

}  // namespace

PrefillBlocks prefill_blocks(const DecoderConfig& c, int P, DataType dtype,
                             const std::vector<DecoderShard>* shards, const HwConfig* hw) {
  const int es = size_bytes(dtype), d = c.head_dim();
  int heads = c.heads, kv_heads = c.kv_heads;
  if (shards) {
    heads = kv_heads = 0;
    for (const DecoderShard& sh : *shards) {
      heads = std::max(heads, sh.q_end - sh.q_begin);
      kv_heads = std::max(kv_heads, sh.kv_end - sh.kv_begin);
    }
  }
  PrefillBlocks b;
  // A block's mask is [heads, rows x P] and its queries' rotation [heads, rows x d].
  b.attention_rows = block_rows(hw, P, heads, std::max(P, d), es);
  b.key_rows = block_rows(hw, P, kv_heads, d, es);
  b.position_rows = c.rotary ? P : block_rows(hw, P, 1, c.hidden, es);
  return b;
}

Graph build_prefill_graph(const DecoderConfig& c, const DecoderWeights* w, int P, int batch,
                          DataType dtype, const std::vector<DecoderShard>* shards,
                          std::map<std::string, int>* core_of, const HwConfig* hw) {
  const std::vector<DecoderShard> whole{DecoderShard{0, c.heads, 0, c.kv_heads, 0, c.ffn}};
  const std::vector<DecoderShard>& parts = shards ? *shards : whole;
  const int N = int(parts.size());
  NPUSIM_CHECK(N == 1 || core_of, "a prefill split over {} cores needs its placement", N);
  Builder b(c, w);
  start(b, c, "prefill", P);
  b.graph().batch = batch;
  const int h = c.hidden, d = c.head_dim(), H = c.heads, G = c.group();
  const float scale = 1.0f / std::sqrt(float(d));
  auto place = [&](size_t first, int core) { place_layers(b, core_of, first, core); };
  const PrefillBlocks blocks = prefill_blocks(c, P, dtype, &parts, hw);
  if (hw) b.limit_affine_rows(hw, size_bytes(dtype));
  const int attention_rows = blocks.attention_rows, key_rows = blocks.key_rows,
            position_rows = blocks.position_rows;
  // Blocks [r0, r0 + rows) of the P positions.
  auto blocks_of = [P](int rows) {
    std::vector<std::pair<int, int>> out;
    for (int r0 = 0; r0 < P; r0 += rows) out.emplace_back(r0, std::min(rows, P - r0));
    return out;
  };
  // [outer, P, width] (`dims`, that or [P, width]) from blocks [outer, rows of the block, width]
  // along the position axis: a Concat move.
  auto concat_rows = [&](const std::string& name, const std::vector<std::string>& parts_of,
                         int rows, const std::vector<int>& dims) {
    const int width = dims.back();
    return b.move(name, parts_of, dims, "Concat", [&](uint64_t o) {
      const uint64_t j = o % uint64_t(width), pos = o / uint64_t(width) % uint64_t(P),
                     a = o / (uint64_t(width) * uint64_t(P)), bi = pos / uint64_t(rows);
      const uint64_t rb = std::min<uint64_t>(uint64_t(rows), uint64_t(P) - bi * uint64_t(rows));
      return MoveSource{int32_t(bi),
                        int32_t((a * rb + pos - bi * uint64_t(rows)) * uint64_t(width) + j)};
    });
  };
  std::string x = "embed";
  if (!c.rotary) {
    std::vector<float> pos = b.param("wpe");
    pos.resize(size_t(P) * size_t(h));
    if (position_rows >= P) {
      x = b.affine("positions", x, {P, h}, std::vector<float>(pos.size(), 1.0f), pos);
    } else {
      std::vector<std::string> pieces;
      for (const auto& [r0, rb] : blocks_of(position_rows)) {
        const std::string piece = fmt::format("positions{}", r0 / position_rows);
        b.move(piece + "_rows", {x}, {rb, h}, "Slice", [&, r0 = r0](uint64_t o) {
          return MoveSource{0, int32_t(uint64_t(r0) * uint64_t(h) + o)};
        });
        std::vector<float> shift_rows;
        if (!pos.empty())
          shift_rows.assign(pos.begin() + long(r0) * h, pos.begin() + long(r0 + rb) * h);
        else
          shift_rows.assign(size_t(rb) * size_t(h), 0.0f);
        pieces.push_back(b.affine(piece, piece + "_rows", {rb, h},
                                  std::vector<float>(size_t(rb) * size_t(h), 1.0f), shift_rows));
      }
      x = concat_rows("positions", pieces, position_rows, {P, h});
    }
  }
  // Masked scores: bf16 takes -1e4 (exp underflows to 0); int8 a fill the scores' scale can
  // still resolve (docs/llm.md "Limitations"). The mask of query rows [r0, r0 + rows).
  const float fill = dtype == DataType::kBf16 ? -1e4f : -32.0f;
  auto mask = [&](int r0, int rows) {
    std::vector<float> keep(size_t(rows) * size_t(P)), shift(keep.size());
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < P; ++j) {
        const size_t at = size_t(i) * size_t(P) + size_t(j);
        keep[at] = j <= r0 + i ? 1.0f : 0.0f;
        shift[at] = j <= r0 + i ? 0.0f : fill;
      }
    return std::pair(std::move(keep), std::move(shift));
  };
  std::vector<std::string> outputs{"logits"};
  // [P, n * d] rows [r0, r0 + rows) -> [n, rows, d].
  auto to_heads = [&](const std::string& name, const std::string& src, int n, int r0, int rows) {
    const int width = n * d;
    return b.move(name, {src}, {n, rows, d}, "Transpose", [&](uint64_t o) {
      const uint64_t j = o % uint64_t(d), p = o / uint64_t(d) % uint64_t(rows) + uint64_t(r0),
                     hh = o / (uint64_t(d) * uint64_t(rows));
      return MoveSource{0, int32_t(p * uint64_t(width) + hh * uint64_t(d) + j)};
    });
  };
  auto position = [](int r) { return r; };
  for (int i = 0; i < c.layers; ++i) {
    const std::string p = fmt::format("h{}.", i);
    std::vector<std::string> partials;
    for (int core = 0; core < N; ++core) {
      const DecoderShard& sh = parts[size_t(core)];
      const size_t first = b.graph().layers.size();
      const std::string pc = N == 1 ? p : fmt::format("{}c{}.", p, core);
      const std::string suffix = N == 1 ? "" : fmt::format(".c{}", core);
      const int Hc = sh.q_end - sh.q_begin, KVc = sh.kv_end - sh.kv_begin;
      const std::string n1 = b.norm(pc + "norm1", x, p + "ln1");
      const std::string q =
          b.dense_part(pc + "query", n1, p + "q", H * d, sh.q_begin * d, sh.q_end * d, scale);
      const std::string k =
          b.dense_part(pc + "key", n1, p + "k", c.kv_heads * d, sh.kv_begin * d, sh.kv_end * d);
      const std::string v =
          b.dense_part(pc + "value", n1, p + "v", c.kv_heads * d, sh.kv_begin * d, sh.kv_end * d);
      const std::string kname = fmt::format("k{}{}", i, suffix);
      const bool blocked = attention_rows < P || key_rows < P;
      // Unblocked: the query heads moved and rotated whole, before the keys.
      std::string qh = blocked ? "" : to_heads(pc + "query_heads", q, Hc, 0, P);
      std::string kh;
      if (!c.rotary || !blocked) {
        kh = to_heads(c.rotary ? pc + "key_heads" : kname, k, KVc, 0, P);
      } else {  // rotated in blocks of positions, then put together as the cache's [KVc, P, d]
        std::vector<std::string> pieces;
        const int kr = std::min(key_rows, P);
        for (const auto& [r0, rb] : blocks_of(kr)) {
          const std::string kb = fmt::format("{}key_heads{}", pc, r0 / kr);
          to_heads(kb, k, KVc, r0, rb);
          pieces.push_back(b.rope(fmt::format("{}key_rotary{}", pc, r0 / kr), kb, {KVc, rb, d}, rb,
                                  d, [r0 = r0](int r) { return r0 + r; }));
        }
        kh = concat_rows(kname, pieces, kr, {KVc, P, d});
      }
      const std::string vh = to_heads(fmt::format("v{}{}", i, suffix), v, KVc, 0, P);
      if (c.rotary && !blocked) {
        qh = b.rope(pc + "query_rotary", qh, {Hc, P, d}, P, d, position);
        kh = b.rope(kname, kh, {KVc, P, d}, P, d, position);
      }
      outputs.push_back(kh);
      outputs.push_back(vh);
      std::string ke = kh, ve = vh;
      if (G > 1) {
        // Query head hh of this core reads KV head (q_begin + hh) / G, local to the core.
        auto repeat = [&](const std::string& name, const std::string& src) {
          return b.move(name, {src}, {Hc, P, d}, "Expand", [&](uint64_t o) {
            const uint64_t per_head = uint64_t(P) * uint64_t(d), hh = o / per_head;
            const uint64_t g = (uint64_t(sh.q_begin) + hh) / uint64_t(G) - uint64_t(sh.kv_begin);
            return MoveSource{0, int32_t(g * per_head + o % per_head)};
          });
        };
        ke = repeat(pc + "key_groups", kh);
        ve = repeat(pc + "value_groups", vh);
      }
      // Attention of the query heads `qb` (rows [r0, r0 + rows)) over all P keys, named with
      // `tag`; returns its context heads [Hc, rows, d].
      auto attend = [&](const std::string& tag, const std::string& qb, int r0, int rows) {
        Layer& sc = b.add(OpKind::kMatMul, pc + "scores" + tag, {qb, ke});
        sc.transpose_b = true;
        auto [keep, shift] = mask(r0, rows);
        const std::string masked = b.affine(pc + "causal" + tag, pc + "scores" + tag, {Hc, rows, P},
                                            std::move(keep), std::move(shift));
        b.add(OpKind::kSoftmax, pc + "probs" + tag, {masked});
        b.add(OpKind::kMatMul, pc + "context_heads" + tag, {pc + "probs" + tag, ve});
        return pc + "context_heads" + tag;
      };
      std::vector<std::string> contexts;
      const int rows = std::min(attention_rows, P);
      if (!blocked) {
        contexts.push_back(attend("", qh, 0, P));
      } else {  // blocks of query rows, so that no layer holds Hc x P x P scores (docs/llm.md)
        for (const auto& [r0, rb] : blocks_of(rows)) {
          const std::string tag = fmt::format("{}", r0 / rows);
          std::string qb = to_heads(pc + "query_heads" + tag, q, Hc, r0, rb);
          if (c.rotary)
            qb = b.rope(pc + "query_rotary" + tag, qb, {Hc, rb, d}, rb, d,
                        [r0 = r0](int r) { return r0 + r; });
          contexts.push_back(attend(tag, qb, r0, rb));
        }
      }
      // [P, Hc * d] from the blocks' context heads [Hc, rows of block, d].
      b.move(pc + "context", contexts, {P, Hc * d}, "Transpose", [&](uint64_t o) {
        const uint64_t j = o % uint64_t(d), hh = o / uint64_t(d) % uint64_t(Hc),
                       pp = o / uint64_t(Hc * d), bi = pp / uint64_t(rows);
        const uint64_t rb = std::min<uint64_t>(uint64_t(rows), uint64_t(P) - bi * uint64_t(rows));
        return MoveSource{int32_t(bi),
                          int32_t((hh * rb + pp - bi * uint64_t(rows)) * uint64_t(d) + j)};
      });
      partials.push_back(b.dense_rows(pc + "attn_out", pc + "context", p + "o", h, sh.q_begin * d,
                                      sh.q_end * d, H * d, core == 0));
      place(first, core);
    }
    x = ffn_after_attention(b, parts, p, x, partials, P, core_of);
  }
  b.move("last", {x}, {1, h}, "Slice", [&](uint64_t o) {
    return MoveSource{0, int32_t(uint64_t(P - 1) * uint64_t(h) + o)};
  });
  const std::string nf = b.norm("norm_final", "last", "lnf");
  b.dense_with("logits", nf, c.vocab, b.lm_head());
  if (core_of && N > 1) (*core_of)["logits"] = -1;  // split by vocabulary columns over all cores
  b.finish(outputs);
  return std::move(b.graph());
}

std::vector<DecoderShard> decoder_shards(const DecoderConfig& c, int cores) {
  NPUSIM_CHECK(cores >= 1, "decoder split over {} cores", cores);
  const int n = std::min(cores, c.heads), G = c.group();
  // [0, total) in n ranges as even as they come, the first ones one longer.
  auto range = [n](int total, int i) {
    const int base = total / n, extra = total % n;
    const int begin = i * base + std::min(i, extra);
    return std::pair(begin, begin + base + (i < extra ? 1 : 0));
  };
  std::vector<DecoderShard> out;
  for (int i = 0; i < n; ++i) {
    DecoderShard s;
    if (c.kv_heads >= n) {  // whole KV groups per core
      std::tie(s.kv_begin, s.kv_end) = range(c.kv_heads, i);
      s.q_begin = s.kv_begin * G;
      s.q_end = s.kv_end * G;
    } else {  // fewer KV heads than cores: each core computes the KV heads its queries read
      std::tie(s.q_begin, s.q_end) = range(c.heads, i);
      s.kv_begin = s.q_begin / G;
      s.kv_end = (s.q_end - 1) / G + 1;
    }
    std::tie(s.ffn_begin, s.ffn_end) = range(c.ffn, i);
    out.push_back(s);
  }
  return out;
}

Graph build_decode_graph(const DecoderConfig& c, const DecoderWeights* w, const KvCache* cache,
                         int L, int B, const std::vector<DecoderShard>* shards,
                         std::map<std::string, int>* core_of) {
  NPUSIM_CHECK(L >= 1, "decode step with an empty cache");
  const std::vector<DecoderShard> whole{DecoderShard{0, c.heads, 0, c.kv_heads, 0, c.ffn}};
  const std::vector<DecoderShard>& parts = shards ? *shards : whole;
  const int N = int(parts.size());
  NPUSIM_CHECK(N == 1 || core_of, "a decode step split over {} cores needs its placement", N);
  Builder b(c, w);
  start(b, c, fmt::format("decode{}", L), B);
  const int h = c.hidden, d = c.head_dim(), H = c.heads, KV = c.kv_heads, G = c.group();
  const float scale = 1.0f / std::sqrt(float(d));
  // Layers added from `first` on run on core `core`.
  auto place = [&](size_t first, int core) { place_layers(b, core_of, first, core); };
  std::string x = "embed";
  if (!c.rotary) {
    std::vector<float> pos;
    if (w) {
      const std::vector<float>& wpe = w->at("wpe");
      pos.assign(wpe.begin() + long(L) * h, wpe.begin() + long(L + 1) * h);
    } else {
      pos.assign(size_t(h), 0.0f);
    }
    x = b.affine("positions", x, {B, h}, std::vector<float>(size_t(h), 1.0f), pos);
  }
  auto position = [L](int) { return L; };
  std::vector<std::string> outputs{"logits"};
  for (int i = 0; i < c.layers; ++i) {
    const std::string p = fmt::format("h{}.", i);
    std::vector<std::string> partials;
    for (int core = 0; core < N; ++core) {
      const DecoderShard& sh = parts[size_t(core)];
      const size_t first = b.graph().layers.size();
      // One core keeps the whole model's names; split, each core's layers carry its number.
      const std::string pc = N == 1 ? p : fmt::format("{}c{}.", p, core);
      const std::string suffix = N == 1 ? "" : fmt::format(".c{}", core);
      const int Hc = sh.q_end - sh.q_begin, KVc = sh.kv_end - sh.kv_begin;
      const std::string n1 = b.norm(pc + "norm1", x, p + "ln1");
      std::string q =
          b.dense_part(pc + "query", n1, p + "q", H * d, sh.q_begin * d, sh.q_end * d, scale);
      const std::string kname = fmt::format("k{}{}", i, suffix);
      const std::string vname = fmt::format("v{}{}", i, suffix);
      // The step's new keys and values as the attention reads them (they may stay on chip), and
      // copies of them as the graph's outputs k{i} / v{i}, the rows the cache appends (off chip):
      // the attention does not wait for those stores.
      const std::string krows = pc + "key_rows", vrows = pc + "value_rows";
      if (c.rotary) {
        b.dense_part(pc + "key", n1, p + "k", KV * d, sh.kv_begin * d, sh.kv_end * d);
        q = b.rope(pc + "query_rotary", q, {B, Hc * d}, 1, Hc * d, position);
        b.rope(krows, pc + "key", {B, KVc * d}, 1, KVc * d, position);
      } else {
        b.dense_part(krows, n1, p + "k", KV * d, sh.kv_begin * d, sh.kv_end * d);
      }
      b.dense_part(vrows, n1, p + "v", KV * d, sh.kv_begin * d, sh.kv_end * d);
      for (const auto& [rows, out] : {std::pair(krows, kname), std::pair(vrows, vname)}) {
        b.move(out, {rows}, {B, KVc * d}, "Copy", [](uint64_t o) {
          return MoveSource{0, int32_t(o)};
        });
        outputs.push_back(out);
      }
      std::vector<std::string> contexts;
      for (int s = 0; s < B; ++s) {
        for (int g = sh.kv_begin; g < sh.kv_end; ++g) {
          const std::string a = fmt::format("{}attn{}_{}.", pc, s, g);
          const int cache_index = s * KV + g;
          // The query heads of group g this core owns: [q0, q0 + Gc).
          const int q0 = std::max(sh.q_begin, g * G), Gc = std::min(sh.q_end, (g + 1) * G) - q0;
          b.move(a + "query", {q}, {Gc, d}, "Slice", [&](uint64_t o) {
            const uint64_t r = o / uint64_t(d), j = o % uint64_t(d);
            return MoveSource{0, int32_t(uint64_t(s) * uint64_t(Hc * d) +
                                         (uint64_t(q0 - sh.q_begin) + r) * uint64_t(d) + j)};
          });
          for (const std::string& kv : {krows, vrows}) {
            b.move(a + (kv == krows ? "key_new" : "value_new"), {kv}, {1, d}, "Slice",
                   [&](uint64_t o) {
                     return MoveSource{0, int32_t(uint64_t(s) * uint64_t(KVc * d) +
                                                  uint64_t(g - sh.kv_begin) * uint64_t(d) + o)};
                   });
          }
          // q K^T over the cache: the cache's keys transposed are the weight operand [d][L].
          std::vector<float> kt, vc;
          if (cache) {
            const std::vector<float>& keys = cache->keys[size_t(i)][size_t(cache_index)];
            const std::vector<float>& values = cache->values[size_t(i)][size_t(cache_index)];
            NPUSIM_CHECK(keys.size() == size_t(L) * size_t(d) && values.size() == keys.size(),
                         "KV cache of layer {} head {}: {} values for length {}", i, cache_index,
                         keys.size(), L);
            kt.resize(keys.size());
            for (int t = 0; t < L; ++t)
              for (int j = 0; j < d; ++j) kt[size_t(j * L + t)] = keys[size_t(t * d + j)];
            vc = values;
          }
          b.dense_with(a + "scores_cache", a + "query", L, std::move(kt));
          b.add(OpKind::kMatMul, a + "score_new", {a + "query", a + "key_new"}).transpose_b = true;
          b.add(OpKind::kConcat, a + "scores", {a + "scores_cache", a + "score_new"});
          b.add(OpKind::kSoftmax, a + "probs", {a + "scores"});
          b.move(a + "probs_cache", {a + "probs"}, {Gc, L}, "Slice", [&](uint64_t o) {
            return MoveSource{0, int32_t(o / uint64_t(L) * uint64_t(L + 1) + o % uint64_t(L))};
          });
          b.move(a + "prob_new", {a + "probs"}, {Gc, 1}, "Slice", [&](uint64_t o) {
            return MoveSource{0, int32_t(o * uint64_t(L + 1) + uint64_t(L))};
          });
          b.dense_with(a + "context_cache", a + "probs_cache", d, std::move(vc));
          b.add(OpKind::kMatMul, a + "context_new", {a + "prob_new", a + "value_new"});
          b.add(OpKind::kAdd, a + "context", {a + "context_cache", a + "context_new"});
          contexts.push_back(a + "context");
        }
      }
      // [B, Hc * d]: sequence s, head hh (of this core's), from context (s, hh / G) row hh - its
      // group's first head on this core.
      b.move(pc + "context", contexts, {B, Hc * d}, "Concat", [&](uint64_t o) {
        const uint64_t j = o % uint64_t(d), hh = o / uint64_t(d) % uint64_t(Hc) + sh.q_begin,
                       s = o / uint64_t(Hc * d), g = hh / uint64_t(G);
        const uint64_t q0 = std::max(uint64_t(sh.q_begin), g * uint64_t(G));
        return MoveSource{int32_t(s * uint64_t(KVc) + g - uint64_t(sh.kv_begin)),
                          int32_t((hh - q0) * uint64_t(d) + j)};
      });
      // This core's rows of the output projection: a partial sum of the whole; the bias once.
      partials.push_back(b.dense_rows(pc + "attn_out", pc + "context", p + "o", h, sh.q_begin * d,
                                      sh.q_end * d, H * d, core == 0));
      place(first, core);
    }
    x = ffn_after_attention(b, parts, p, x, partials, B, core_of);
  }
  const std::string nf = b.norm("norm_final", x, "lnf");
  b.dense_with("logits", nf, c.vocab, b.lm_head());
  if (core_of && N > 1) (*core_of)["logits"] = -1;  // split by vocabulary columns over all cores
  b.finish(outputs);
  return std::move(b.graph());
}

}  // namespace npusim
