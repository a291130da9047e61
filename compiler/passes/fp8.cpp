#include "compiler/passes/fp8.hpp"

#include <algorithm>
#include <cmath>

#include "arch/activation.hpp"
#include "compiler/passes/parameters.hpp"
#include "support/error.hpp"

namespace npusim {

namespace {

bool takes_fp8(const Layer& l) {
  return (l.kind == OpKind::kConv || l.kind == OpKind::kDense) && l.has_weights() && !l.on_host;
}

// Rounds l's real weights to fp8 with the scale of their largest magnitude, into bf16_weights.
void round_weights(Layer& l, Fp8Format f) {
  const size_t n = size_t(l.filters);
  float amax = 0.0f;
  for_each_weight_row(l, [&](size_t, const float* w) {
    for (size_t j = 0; j < n; ++j) amax = std::max(amax, std::fabs(w[j]));
  });
  l.fp8_weight_exp = fp8_scale_exp(amax, f);
  l.bf16_weights.resize(l.reduction() * n);
  for_each_weight_row(l, [&](size_t r, const float* w) {
    for (size_t j = 0; j < n; ++j)
      l.bf16_weights[r * n + j] = float_to_bf16_bits(round_to_fp8(w[j], f, l.fp8_weight_exp));
  });
}

}  // namespace

void prepare_fp8(Graph& g, Fp8Format f, bool weights, const TensorF* calibration) {
  NPUSIM_CHECK(g.quantized && g.dtype == DataType::kBf16 && f != Fp8Format::kNone,
               "graph {}: fp8 after prepare_bf16", g.name);
  if (weights) {
    for (Layer& l : g.layers) {
      if (takes_fp8(l)) round_weights(l, f);
    }
  }
  std::map<std::string, TensorF> tensors;
  if (calibration != nullptr) {
    NPUSIM_CHECK(weights, "graph {}: fp8 calibration without weights", g.name);
    tensors = run_reference_bf16(g, *calibration);
  }
  for (Layer& l : g.layers) {
    if (!takes_fp8(l)) continue;
    l.fp8 = f;
    if (calibration == nullptr) continue;
    float amax = 0.0f;
    for (float x : tensors.at(l.inputs[0])) amax = std::max(amax, std::fabs(x));
    l.fp8_input_exp = fp8_scale_exp(amax, f);
  }
}

}  // namespace npusim
