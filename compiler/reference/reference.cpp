#include "compiler/reference/reference.hpp"

#include <algorithm>
#include <cstring>

#include "arch/quant.hpp"
#include "compiler/reference/reference_dispatch.hpp"
#include "compiler/reference/reference_gemm.hpp"
#include "compiler/reference/reference_loops.hpp"
#include "support/error.hpp"

namespace npusim {

namespace {

std::vector<int32_t> conv_acc(const Layer& l, int batch, const Tensor8& x) {
  std::vector<int32_t> acc(size_t(batch) * l.out_shape.elements(), 0);
  reference_gemm::conv(l, batch, x.data(), l.qweights.data(), acc.data());
  return acc;
}

// acc[r][n] = sum_k a[r][k] * w[k][n] (w[n][k] when transposed).
void gemm_acc(const int8_t* a, const int8_t* w, int32_t* acc, uint64_t rows, int K, int N,
              bool transposed) {
  reference_gemm::gemm(a, w, acc, rows, K, N, transposed);
}

Tensor8 pool_int8(const Layer& l, int batch, const Tensor8& x) {
  return reference_loops::pool(l, batch, x, int32_t{-128}, [](int32_t acc, int divisor) {
    return divisor == 0 ? static_cast<int8_t>(acc) : average_int8(acc, divisor);
  });
}

}  // namespace

std::vector<int32_t> reference_accumulate(const Layer& l, int batch,
                                          const std::vector<const Tensor8*>& in) {
  NPUSIM_CHECK(!l.has_weights() || l.qweights.size() == l.reduction() * l.filters,
               "layer {}: {} int8 weights, expected {}", l.name, l.qweights.size(),
               l.reduction() * l.filters);
  switch (l.kind) {
    case OpKind::kConv:
      return conv_acc(l, batch, *in[0]);
    case OpKind::kDense: {
      const uint64_t rows = uint64_t(batch) * l.in_shapes[0].outer();
      std::vector<int32_t> acc(rows * l.filters, 0);
      gemm_acc(in[0]->data(), l.qweights.data(), acc.data(), rows, l.in_shapes[0].last(), l.filters,
               false);
      return acc;
    }
    case OpKind::kMatMul: {
      const TensorShape& a = l.in_shapes[0];
      const int M = a.dims[a.rank() - 2], K = a.last(), N = l.out_shape.last();
      const uint64_t groups = uint64_t(batch) * a.elements() / (uint64_t(M) * K);
      std::vector<int32_t> acc(groups * M * N, 0);
      for (uint64_t g = 0; g < groups; ++g) {
        gemm_acc(in[0]->data() + g * M * K, in[1]->data() + g * K * N, acc.data() + g * M * N, M, K,
                 N, l.transpose_b);
      }
      return acc;
    }
    default:
      break;
  }
  NPUSIM_CHECK(false, "layer {} has no accumulators", l.name);
  return {};
}

Tensor8 reference_epilogue(const Layer& l, const std::vector<int32_t>& acc) {
  const int N = l.out_shape.last();
  NPUSIM_CHECK(l.requant.size() == size_t(N) && l.qbias.size() == size_t(N),
               "layer {} is not quantized", l.name);
  const int8_t* lut = l.lut.empty() ? nullptr : l.lut.data();
  Tensor8 y(acc.size());
  for (size_t i = 0; i < acc.size(); i += N) {
    for (int n = 0; n < N; ++n) {
      y[i + n] = epilogue_value(acc[i + n], l.qbias[n], l.requant[n], l.clamp_lo, l.clamp_hi, lut);
    }
  }
  return y;
}

namespace {

// The int8 arithmetic of the reference dispatch (reference_dispatch.hpp).
struct Int8Ops {
  using Value = int8_t;
  static Tensor8 matrix(const Layer& l, int batch, const std::vector<const Tensor8*>& in) {
    return reference_epilogue(l, reference_accumulate(l, batch, in));
  }
  static Tensor8 pool(const Layer& l, int batch, const Tensor8& x) {
    return pool_int8(l, batch, x);
  }
  static Tensor8 activation(const Layer& l, const Tensor8& x) {
    Tensor8 y(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = l.lut[x[i] + 128];
    return y;
  }
  static Tensor8 binary(const Layer& l, const Tensor8& x, const Tensor8& z) {
    Tensor8 y(x.size());
    // Per-row scales of an input or the output: an add (row_scales.hpp).
    const bool row_scales = !l.in_row_scales.empty() || !l.out_row_scales.empty();
    for (size_t i = 0; i < x.size(); ++i) {
      if (l.kind == OpKind::kMul) {
        y[i] = mul_int8(x[i], z[i], l.input_ratios[0], l.clamp_lo, l.clamp_hi);
      } else if (row_scales) {
        y[i] = add_int8(x[i], z[i], l.input_ratio_at(0, i), l.input_ratio_at(1, i), l.clamp_lo,
                        l.clamp_hi);
      } else {
        y[i] = add_int8(x[i], z[i], l.input_ratios[0], l.input_ratios[1], l.clamp_lo, l.clamp_hi);
      }
    }
    if (!l.lut.empty()) {
      for (auto& v : y) v = l.lut[v + 128];
    }
    return y;
  }
  static int8_t concat_value(const Layer& l, size_t input, int8_t v) {
    return saturate_round(v * l.input_ratios[input]);
  }
  static int8_t move_constant(const Layer& l, float c) { return saturate_round(c / l.out_scale); }
  static void softmax_row(const Layer& l, const int8_t* x, int8_t* y, int n) {
    softmax_int8(x, y, n, l.in_scales[0]);
  }
  // `offset`: the row's first element in the batch, which selects its scale (per-row scales).
  static void layernorm_row(const Layer& l, const int8_t* x, int8_t* y, int n, uint64_t offset) {
    layernorm_int8(x, y, n, l.in_scale_at(0, offset), l.gamma.data(), l.beta.data(), l.epsilon,
                   1.0f / l.out_scale, l.rms);
  }
  // The input holds the ids' stored bytes: 4 per id (Graph::input_ids).
  static Tensor8 embedding(const Layer& l, int /*batch*/, const Tensor8& x) {
    std::vector<int32_t> ids(x.size() / 4);
    std::memcpy(ids.data(), x.data(), ids.size() * 4);
    return reference_loops::embedding_rows(l, ids, l.qweights);
  }
};

}  // namespace

Tensor8 reference_layer(const Layer& l, int batch, const std::vector<const Tensor8*>& in) {
  return reference_loops::layer<Int8Ops>(l, batch, in);
}

std::map<std::string, Tensor8> run_reference(const Graph& g, const Tensor8& input) {
  NPUSIM_CHECK(g.quantized, "the reference runs quantized graphs");
  const uint64_t bytes = g.input_shape.elements() * g.batch * (g.input_ids ? 4 : 1);
  NPUSIM_CHECK(input.size() == bytes, "reference input has {} bytes, expected {}", input.size(),
               bytes);
  return reference_loops::graph<Int8Ops>(g, input);
}

}  // namespace npusim
