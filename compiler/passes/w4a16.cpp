#include "compiler/passes/w4a16.hpp"

#include <algorithm>
#include <cmath>

#include "arch/activation.hpp"
#include "arch/compressed_weights.hpp"
#include "arch/quant.hpp"
#include "compiler/passes/parameters.hpp"
#include "support/error.hpp"

namespace npusim {

namespace {

void quantize_layer(Layer& l) {
  const size_t n = size_t(l.filters), k = l.reduction();
  const size_t g = l.weight_group > 0 ? size_t(l.weight_group) : k;  // per channel: one group
  const size_t groups = (k + g - 1) / g;
  // Generated weights are drawn once for the two passes (and freed after), as int8's are.
  const bool drawn = draw_weights(l, uint64_t{64} << 20);
  std::vector<float> amax(groups * n, 0.0f);
  for_each_weight_row(l, [&](size_t r, const float* w) {
    float* m = amax.data() + r / g * n;
    for (size_t j = 0; j < n; ++j) m[j] = std::max(m[j], std::fabs(w[j]));
  });
  l.int4_scales.resize(groups * n);
  for (size_t i = 0; i < amax.size(); ++i) l.int4_scales[i] = float_to_bf16_bits(amax[i] / 7.0f);
  l.bf16_weights.resize(k * n);
  for_each_weight_row(l, [&](size_t r, const float* w) {
    const uint16_t* s = l.int4_scales.data() + r / g * n;
    uint16_t* out = l.bf16_weights.data() + r * n;
    for (size_t j = 0; j < n; ++j) {
      const float scale = bf16_bits_to_float(s[j]);
      const int z = scale > 0.0f ? saturate_round(w[j] / scale, -7, 7) : 0;
      out[j] = int4_bf16_weight(z, s[j]);
    }
  });
  if (drawn) std::vector<float>().swap(l.weights);
}

}  // namespace

void prepare_w4a16(Graph& g, bool weights) {
  NPUSIM_CHECK(g.quantized && g.dtype == DataType::kBf16, "graph {}: W4A16 after prepare_bf16",
               g.name);
  for (Layer& l : g.layers) {
    if (!l.int4_weights) continue;
    NPUSIM_CHECK((l.kind == OpKind::kConv || l.kind == OpKind::kDense) && l.has_weights() &&
                     l.fp8 == Fp8Format::kNone && !l.compress_weights,
                 "layer {}: int4 weights on a {} layer", l.name, to_string(l.kind));
    if (weights) {
      quantize_layer(l);
    } else {
      std::vector<uint16_t>().swap(l.bf16_weights);
      std::vector<uint16_t>().swap(l.int4_scales);
    }
  }
}

}  // namespace npusim
