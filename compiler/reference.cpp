#include "compiler/reference.hpp"

#include <algorithm>

#include "arch/quant.hpp"
#include "compiler/reference_loops.hpp"
#include "support/error.hpp"

namespace npusim {

namespace {

std::vector<int32_t> conv_acc(const Layer& l, int batch, const Tensor8& x) {
  std::vector<int32_t> acc(size_t(batch) * l.out_shape.elements(), 0);
  reference_loops::conv(l, batch, x.data(), l.qweights.data(), acc.data());
  return acc;
}

// acc[r][n] = sum_k a[r][k] * w[k][n] (w[n][k] when transposed).
void gemm_acc(const int8_t* a, const int8_t* w, int32_t* acc, uint64_t rows, int K, int N,
              bool transposed) {
  for (uint64_t r = 0; r < rows; ++r) {
    int32_t* o = acc + r * N;
    const int8_t* ar = a + r * K;
    if (transposed) {
      for (int n = 0; n < N; ++n) {
        int32_t s = 0;
        for (int kk = 0; kk < K; ++kk) s += int32_t(ar[kk]) * w[size_t(n) * K + kk];
        o[n] = s;
      }
      continue;
    }
    for (int kk = 0; kk < K; ++kk) {
      const int32_t v = ar[kk];
      const int8_t* wr = w + size_t(kk) * N;
      for (int n = 0; n < N; ++n) o[n] += v * wr[n];
    }
  }
}

Tensor8 pool(const Layer& l, int batch, const Tensor8& x) {
  return reference_loops::pool(l, batch, x, int32_t{-128}, [](int32_t acc, int divisor) {
    return divisor == 0 ? static_cast<int8_t>(acc) : average_int8(acc, divisor);
  });
}

}  // namespace

std::vector<int32_t> reference_accumulate(const Layer& l, int batch,
                                          const std::vector<const Tensor8*>& in) {
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

Tensor8 reference_layer(const Layer& l, int batch, const std::vector<const Tensor8*>& in) {
  const Tensor8& x = *in[0];
  switch (l.kind) {
    case OpKind::kConv:
    case OpKind::kDense:
    case OpKind::kMatMul:
      return reference_epilogue(l, reference_accumulate(l, batch, in));
    case OpKind::kMaxPool:
    case OpKind::kAvgPool:
      return pool(l, batch, x);
    case OpKind::kActivation: {
      Tensor8 y(x.size());
      for (size_t i = 0; i < x.size(); ++i) y[i] = l.lut[x[i] + 128];
      return y;
    }
    case OpKind::kAdd:
    case OpKind::kMul: {
      const Tensor8& z = *in[1];
      Tensor8 y(x.size());
      for (size_t i = 0; i < x.size(); ++i) {
        y[i] =
            l.kind == OpKind::kAdd
                ? add_int8(x[i], z[i], l.input_ratios[0], l.input_ratios[1], l.clamp_lo, l.clamp_hi)
                : mul_int8(x[i], z[i], l.input_ratios[0], l.clamp_lo, l.clamp_hi);
      }
      if (!l.lut.empty()) {
        for (auto& v : y) v = l.lut[v + 128];
      }
      return y;
    }
    case OpKind::kConcat: {
      const uint64_t rows = uint64_t(batch) * l.out_shape.outer();
      const int C = l.out_shape.last();
      Tensor8 y(rows * C);
      int offset = 0;
      for (size_t i = 0; i < in.size(); ++i) {
        const int ci = l.in_shapes[i].last();
        for (uint64_t r = 0; r < rows; ++r) {
          for (int c = 0; c < ci; ++c) {
            y[r * C + offset + c] = saturate_round((*in[i])[r * ci + c] * l.input_ratios[i]);
          }
        }
        offset += ci;
      }
      return y;
    }
    case OpKind::kReshape:
      return x;
    case OpKind::kSoftmax: {
      const int n = l.out_shape.last();
      Tensor8 y(x.size());
      for (size_t r = 0; r < x.size(); r += n) softmax_int8(&x[r], &y[r], n, l.in_scales[0]);
      return y;
    }
    case OpKind::kLayerNorm: {
      const int n = l.out_shape.last();
      Tensor8 y(x.size());
      for (size_t r = 0; r < x.size(); r += n) {
        layernorm_int8(&x[r], &y[r], n, l.in_scales[0], l.gamma.data(), l.beta.data(), l.epsilon,
                       1.0f / l.out_scale);
      }
      return y;
    }
    case OpKind::kBatchNorm:
      break;
  }
  NPUSIM_CHECK(false, "layer {} ({}) cannot run: batch norm must be folded first", l.name,
               to_string(l.kind));
  return {};
}

std::map<std::string, Tensor8> run_reference(const Graph& g, const Tensor8& input) {
  NPUSIM_CHECK(g.quantized, "the reference runs quantized graphs");
  NPUSIM_CHECK(input.size() == g.input_shape.elements() * g.batch,
               "reference input has {} bytes, expected {}", input.size(),
               g.input_shape.elements() * g.batch);
  std::map<std::string, Tensor8> tensors{{g.input_name, input}};
  for (const auto& l : g.layers) {
    std::vector<const Tensor8*> in;
    for (const auto& name : l.inputs) in.push_back(&tensors.at(name));
    tensors[l.output] = reference_layer(l, g.batch, in);
  }
  return tensors;
}

}  // namespace npusim
