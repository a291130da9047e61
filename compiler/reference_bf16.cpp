#include "compiler/reference_bf16.hpp"

#include <algorithm>
#include <cmath>

#include "arch/float_ops.hpp"
#include "compiler/reference_loops.hpp"
#include "support/error.hpp"

namespace npusim {

namespace {

float act(const Layer& l, float x) {
  return round_to_bf16(apply_activation(l.activation, x, l.clip_min, l.clip_max));
}

TensorF conv(const Layer& l, int batch, const TensorF& x) {
  std::vector<float> w(l.bf16_weights.size());
  for (size_t i = 0; i < w.size(); ++i) w[i] = bf16_bits_to_float(l.bf16_weights[i]);
  TensorF y(size_t(batch) * l.out_shape.elements(), 0.0f);
  reference_loops::conv(l, batch, x.data(), w.data(), y.data());
  const int n = l.filters;
  for (size_t i = 0; i < y.size(); ++i) y[i] = act(l, y[i] + l.bias[i % n]);
  return y;
}

TensorF matrix(const Layer& l, int batch, const TensorF& a, const TensorF* b_act) {
  const TensorShape& in = l.in_shapes[0];
  const int K = in.last(), N = l.out_shape.last();
  const bool dense = l.kind == OpKind::kDense;
  const uint64_t m = dense ? uint64_t(batch) * in.outer() : in.dims[in.rank() - 2];
  const uint64_t groups = dense ? 1 : uint64_t(batch) * in.outer() / m;
  std::vector<float> w;
  if (dense) {
    w.resize(l.bf16_weights.size());
    for (size_t i = 0; i < w.size(); ++i) w[i] = bf16_bits_to_float(l.bf16_weights[i]);
  }
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
        y[(g * m + r) * N + n] = act(l, acc[n] + (dense ? l.bias[n] : 0.0f));
    }
  }
  return y;
}

TensorF pool(const Layer& l, int batch, const TensorF& x) {
  return reference_loops::pool(l, batch, x, -INFINITY, [](float acc, int divisor) {
    return round_to_bf16(divisor == 0 ? acc : acc / static_cast<float>(divisor));
  });
}

}  // namespace

std::map<std::string, TensorF> run_reference_bf16(const Graph& g, const TensorF& input) {
  NPUSIM_CHECK(g.dtype == DataType::kBf16 && g.quantized, "graph {} is not prepared for bf16",
               g.name);
  std::map<std::string, TensorF> t{{g.input_name, input}};
  for (const auto& l : g.layers) {
    const TensorF& x = t.at(l.inputs[0]);
    TensorF y;
    switch (l.kind) {
      case OpKind::kConv:
        y = conv(l, g.batch, x);
        break;
      case OpKind::kDense:
        y = matrix(l, g.batch, x, nullptr);
        break;
      case OpKind::kMatMul:
        y = matrix(l, g.batch, x, &t.at(l.inputs[1]));
        break;
      case OpKind::kMaxPool:
      case OpKind::kAvgPool:
        y = pool(l, g.batch, x);
        break;
      case OpKind::kActivation:
        y.resize(x.size());
        for (size_t i = 0; i < x.size(); ++i) y[i] = act(l, x[i]);
        break;
      case OpKind::kAdd:
      case OpKind::kMul: {
        const TensorF& z = t.at(l.inputs[1]);
        y.resize(x.size());
        for (size_t i = 0; i < x.size(); ++i) {
          y[i] = act(l, l.kind == OpKind::kAdd ? x[i] + z[i] : x[i] * z[i]);
        }
        break;
      }
      case OpKind::kConcat: {
        const uint64_t rows = uint64_t(g.batch) * l.out_shape.outer();
        const int C = l.out_shape.last();
        y.resize(rows * C);
        int offset = 0;
        for (size_t i = 0; i < l.inputs.size(); ++i) {
          const TensorF& in = t.at(l.inputs[i]);
          const int ci = l.in_shapes[i].last();
          for (uint64_t r = 0; r < rows; ++r) {
            std::copy(&in[r * ci], &in[r * ci] + ci, &y[r * C + offset]);
          }
          offset += ci;
        }
        break;
      }
      case OpKind::kReshape:
        y = x;
        break;
      case OpKind::kSoftmax:
      case OpKind::kLayerNorm: {
        const int n = l.out_shape.last();
        y.resize(x.size());
        for (size_t r = 0; r < x.size(); r += n) {
          if (l.kind == OpKind::kSoftmax) {
            softmax_f32(&x[r], &y[r], n);
          } else {
            layernorm_f32(&x[r], &y[r], n, l.gamma.data(), l.beta.data(), l.epsilon);
          }
        }
        for (auto& v : y) v = round_to_bf16(v);
        break;
      }
      case OpKind::kBatchNorm:
        NPUSIM_CHECK(false, "batch norm {} must be folded first", l.name);
    }
    t[l.output] = std::move(y);
  }
  return t;
}

}  // namespace npusim
