#include "compiler/reference/reference_bf16.hpp"

#include <algorithm>
#include <cmath>

#include "arch/float_ops.hpp"
#include "arch/fp8.hpp"
#include "compiler/reference/reference_bf16_layer.hpp"
#include "compiler/reference/reference_dispatch.hpp"
#include "compiler/reference/reference_loops.hpp"
#include "support/error.hpp"

namespace npusim {

namespace {

// How values are stored, the one difference between the two references: the bf16 path rounds
// every layer's output and its weights to bf16; the float32 graph keeps both as they are.
struct Bf16Storage {
  static float round(float x) { return round_to_bf16(x); }
  // The array's fp8 rounding of a conv's or dense layer's input (--dtype fp8-*).
  static float matrix_input(const Layer& l, float x) {
    return l.fp8 == Fp8Format::kNone ? x : round_to_fp8(x, l.fp8, l.fp8_input_exp);
  }
  static std::vector<float> weights(const Layer& l) {
    std::vector<float> w(l.bf16_weights.size());
    for (size_t i = 0; i < w.size(); ++i) w[i] = bf16_bits_to_float(l.bf16_weights[i]);
    return w;
  }
};
struct F32Storage {
  static float round(float x) { return x; }
  static float matrix_input(const Layer&, float x) { return x; }
  static const std::vector<float>& weights(const Layer& l) { return l.weights; }
};

template <class S>
float act(const Layer& l, float x) {
  return S::round(apply_activation(l.activation, x, l.clip_min, l.clip_max));
}

// conv, dense, matmul: the fp32 products (reference_bf16_layer.cpp), then bias and activation.
template <class S>
TensorF matrix_bf16(const Layer& l, int batch, const TensorF& a, const TensorF* b_act) {
  std::vector<float> w;
  if (l.kind != OpKind::kMatMul) w = S::weights(l);
  TensorF a_in;
  const bool fp8 = l.kind != OpKind::kMatMul && l.fp8 != Fp8Format::kNone;
  if (fp8) {
    a_in.resize(a.size());
    for (size_t i = 0; i < a.size(); ++i) a_in[i] = S::matrix_input(l, a[i]);
  }
  TensorF y = bf16_matrix_products(l, batch, fp8 ? a_in.data() : a.data(),
                                   b_act ? b_act->data() : w.data());
  const size_t n = l.kind == OpKind::kMatMul ? 0 : l.bias.size();
  for (size_t i = 0; i < y.size(); ++i) y[i] = act<S>(l, y[i] + (n ? l.bias[i % n] : 0.0f));
  return y;
}

template <class S>
TensorF pool_bf16(const Layer& l, int batch, const TensorF& x) {
  return reference_loops::pool(l, batch, x, -INFINITY, [](float acc, int divisor) {
    return S::round(divisor == 0 ? acc : acc / static_cast<float>(divisor));
  });
}

// The floating-point arithmetic of the reference dispatch (reference_dispatch.hpp): fp32, with
// every layer's output stored as S stores it.
template <class S>
struct FloatOps {
  using Value = float;
  static TensorF matrix(const Layer& l, int batch, const std::vector<const TensorF*>& in) {
    return matrix_bf16<S>(l, batch, *in[0], l.kind == OpKind::kMatMul ? in[1] : nullptr);
  }
  static TensorF pool(const Layer& l, int batch, const TensorF& x) {
    return pool_bf16<S>(l, batch, x);
  }
  static TensorF activation(const Layer& l, const TensorF& x) {
    TensorF y(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = act<S>(l, x[i]);
    return y;
  }
  static TensorF binary(const Layer& l, const TensorF& x, const TensorF& z) {
    TensorF y(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      y[i] = act<S>(l, l.kind == OpKind::kAdd ? x[i] + z[i] : x[i] * z[i]);
    }
    return y;
  }
  static float concat_value(const Layer&, size_t, float v) { return v; }
  static float move_constant(const Layer&, float c) { return S::round(c); }
  static void softmax_row(const Layer&, const float* x, float* y, int n) {
    softmax_f32(x, y, n);
    for (int i = 0; i < n; ++i) y[i] = S::round(y[i]);
  }
  // The input holds the ids as values.
  static TensorF embedding(const Layer& l, int /*batch*/, const TensorF& x) {
    const std::vector<int32_t> ids(x.begin(), x.end());
    return reference_loops::embedding_rows(l, ids, S::weights(l));
  }
  static void layernorm_row(const Layer& l, const float* x, float* y, int n, uint64_t) {
    layernorm_f32(x, y, n, l.gamma.data(), l.beta.data(), l.epsilon, l.rms);
    for (int i = 0; i < n; ++i) y[i] = S::round(y[i]);
  }
};

}  // namespace

std::map<std::string, TensorF> run_reference_bf16(const Graph& g, const TensorF& input) {
  NPUSIM_CHECK(g.dtype == DataType::kBf16 && g.quantized, "graph {} is not prepared for bf16",
               g.name);
  return reference_loops::graph<FloatOps<Bf16Storage>>(g, input);
}

std::map<std::string, TensorF> run_reference_f32(const Graph& g, const TensorF& input) {
  NPUSIM_CHECK(input.size() == g.input_shape.elements() * g.batch,
               "float reference input has {} values, expected {}", input.size(),
               g.input_shape.elements() * g.batch);
  for (const Layer& l : g.layers) {
    NPUSIM_CHECK(!l.has_weights() || l.weights.size() == l.reduction() * l.filters,
                 "layer {} has no real-valued weights for the float reference", l.name);
  }
  return reference_loops::graph<FloatOps<F32Storage>>(g, input);
}

TensorF reference_bf16_op(const Layer& l, int batch, const std::vector<const TensorF*>& inputs) {
  return reference_loops::layer<FloatOps<Bf16Storage>>(l, batch, inputs);
}

}  // namespace npusim
