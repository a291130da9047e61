#include "compiler/reference/reference_bf16.hpp"

#include <algorithm>
#include <cmath>

#include "arch/float_ops.hpp"
#include "compiler/reference/reference_dispatch.hpp"
#include "compiler/reference/reference_loops.hpp"
#include "support/error.hpp"

namespace npusim {

namespace {

// How values are stored, the one difference between the two references: the bf16 path rounds
// every layer's output and its weights to bf16; the float32 graph keeps both as they are.
struct Bf16Storage {
  static float round(float x) { return round_to_bf16(x); }
  static std::vector<float> weights(const Layer& l) {
    std::vector<float> w(l.bf16_weights.size());
    for (size_t i = 0; i < w.size(); ++i) w[i] = bf16_bits_to_float(l.bf16_weights[i]);
    return w;
  }
};
struct F32Storage {
  static float round(float x) { return x; }
  static const std::vector<float>& weights(const Layer& l) { return l.weights; }
};

template <class S>
float act(const Layer& l, float x) {
  return S::round(apply_activation(l.activation, x, l.clip_min, l.clip_max));
}

template <class S>
TensorF conv_bf16(const Layer& l, int batch, const TensorF& x) {
  const auto& w = S::weights(l);
  TensorF y(size_t(batch) * l.out_shape.elements(), 0.0f);
  reference_loops::conv(l, batch, x.data(), w.data(), y.data());
  const int n = l.filters;
  for (size_t i = 0; i < y.size(); ++i) y[i] = act<S>(l, y[i] + l.bias[i % n]);
  return y;
}

template <class S>
TensorF matrix_bf16(const Layer& l, int batch, const TensorF& a, const TensorF* b_act) {
  const TensorShape& in = l.in_shapes[0];
  const int K = in.last(), N = l.out_shape.last();
  const bool dense = l.kind == OpKind::kDense;
  const uint64_t m = dense ? uint64_t(batch) * in.outer() : in.dims[in.rank() - 2];
  const uint64_t groups = dense ? 1 : uint64_t(batch) * in.outer() / m;
  const std::vector<float> no_weights;
  const auto& w = dense ? S::weights(l) : no_weights;
  TensorF y(groups * m * N);
  for (uint64_t g = 0; g < groups; ++g) {
    const float* wg = dense ? w.data() : b_act->data() + g * uint64_t(K) * N;
    std::vector<float> acc(N);
    for (uint64_t r = 0; r < m; ++r) {
      const float* ar = &a[(g * m + r) * K];
      // Each output sums its products in index order of k (vectorized across n).
      std::fill(acc.begin(), acc.end(), 0.0f);
      if (l.transpose_b) {
        for (int n = 0; n < N; ++n) {
          for (int kk = 0; kk < K; ++kk) acc[n] += ar[kk] * wg[size_t(n) * K + kk];
        }
      } else {
        for (int kk = 0; kk < K; ++kk) {
          const float v = ar[kk];
          const float* wr = wg + size_t(kk) * N;
          for (int n = 0; n < N; ++n) acc[n] += v * wr[n];
        }
      }
      for (int n = 0; n < N; ++n)
        y[(g * m + r) * N + n] = act<S>(l, acc[n] + (dense ? l.bias[n] : 0.0f));
    }
  }
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
    if (l.kind == OpKind::kConv) return conv_bf16<S>(l, batch, *in[0]);
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
  static float move_constant(const Layer&, float c) { return round_to_bf16(c); }
  static void softmax_row(const Layer&, const float* x, float* y, int n) {
    softmax_f32(x, y, n);
    for (int i = 0; i < n; ++i) y[i] = S::round(y[i]);
  }
  static void layernorm_row(const Layer& l, const float* x, float* y, int n) {
    layernorm_f32(x, y, n, l.gamma.data(), l.beta.data(), l.epsilon);
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

}  // namespace npusim
