#include "compiler/reference_bf16.hpp"

#include <algorithm>
#include <cmath>

#include "arch/float_ops.hpp"
#include "support/error.hpp"

namespace npusim {

namespace {

float act(const Layer& l, float x) {
  return round_to_bf16(apply_activation(l.activation, x, l.clip_min, l.clip_max));
}

TensorF conv(const Layer& l, int batch, const TensorF& x) {
  const TensorShape &in = l.in_shapes[0], &out = l.out_shape;
  const int C = in.last(), D = in.d(), H = in.h(), W = in.w();
  const int OD = out.d(), OH = out.h(), OW = out.w(), N = l.filters;
  const int G = l.groups, cin_g = C / G, cout_g = N / G;
  const auto& k = l.kernel;
  std::vector<float> w(l.bf16_weights.size());
  for (size_t i = 0; i < w.size(); ++i) w[i] = bf16_bits_to_float(l.bf16_weights[i]);
  TensorF y(size_t(batch) * out.elements());
  std::vector<float> acc(N);
  for (int b = 0; b < batch; ++b)
    for (int oz = 0; oz < OD; ++oz)
      for (int oy = 0; oy < OH; ++oy)
        for (int ox = 0; ox < OW; ++ox) {
          std::fill(acc.begin(), acc.end(), 0.0f);
          for (int fz = 0; fz < k[0]; ++fz) {
            const int iz = oz * l.strides[0] - l.pads_begin[0] + fz * l.dilation[0];
            if (iz < 0 || iz >= D) continue;
            for (int fy = 0; fy < k[1]; ++fy) {
              const int iy = oy * l.strides[1] - l.pads_begin[1] + fy * l.dilation[1];
              if (iy < 0 || iy >= H) continue;
              for (int fx = 0; fx < k[2]; ++fx) {
                const int ix = ox * l.strides[2] - l.pads_begin[2] + fx * l.dilation[2];
                if (ix < 0 || ix >= W) continue;
                const float* px = &x[(((size_t(b) * D + iz) * H + iy) * W + ix) * C];
                const float* wt = &w[((size_t(fz) * k[1] + fy) * k[2] + fx) * cin_g * N];
                for (int g = 0; g < G; ++g)
                  for (int c = 0; c < cin_g; ++c) {
                    const float v = px[g * cin_g + c];
                    const float* wr = wt + size_t(c) * N + g * cout_g;
                    for (int j = 0; j < cout_g; ++j) acc[g * cout_g + j] += v * wr[j];
                  }
              }
            }
          }
          float* o = &y[(((size_t(b) * OD + oz) * OH + oy) * OW + ox) * N];
          for (int j = 0; j < N; ++j) o[j] = act(l, acc[j] + l.bias[j]);
        }
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
      for (int n = 0; n < N; ++n) y[(g * m + r) * N + n] = act(l, acc[n] + (dense ? l.bias[n] : 0.0f));
    }
  }
  return y;
}

TensorF pool(const Layer& l, int batch, const TensorF& x) {
  const TensorShape &in = l.in_shapes[0], &out = l.out_shape;
  const int C = in.last(), D = in.d(), H = in.h(), W = in.w();
  const bool is_max = l.kind == OpKind::kMaxPool;
  const int window = l.kernel[0] * l.kernel[1] * l.kernel[2];
  TensorF y(size_t(batch) * out.elements());
  std::vector<float> acc(C);
  for (int b = 0; b < batch; ++b)
    for (int oz = 0; oz < out.d(); ++oz)
      for (int oy = 0; oy < out.h(); ++oy)
        for (int ox = 0; ox < out.w(); ++ox) {
          std::fill(acc.begin(), acc.end(), is_max ? -INFINITY : 0.0f);
          int count = 0;
          for (int fz = 0; fz < l.kernel[0]; ++fz) {
            const int iz = oz * l.strides[0] - l.pads_begin[0] + fz;
            if (iz < 0 || iz >= D) continue;
            for (int fy = 0; fy < l.kernel[1]; ++fy) {
              const int iy = oy * l.strides[1] - l.pads_begin[1] + fy;
              if (iy < 0 || iy >= H) continue;
              for (int fx = 0; fx < l.kernel[2]; ++fx) {
                const int ix = ox * l.strides[2] - l.pads_begin[2] + fx;
                if (ix < 0 || ix >= W) continue;
                ++count;
                const float* px = &x[(((size_t(b) * D + iz) * H + iy) * W + ix) * C];
                for (int c = 0; c < C; ++c) acc[c] = is_max ? std::max(acc[c], px[c]) : acc[c] + px[c];
              }
            }
          }
          float* o = &y[(((size_t(b) * out.d() + oz) * out.h() + oy) * out.w() + ox) * C];
          const float divisor = static_cast<float>(l.count_include_pad ? window : count);
          for (int c = 0; c < C; ++c) o[c] = round_to_bf16(is_max ? acc[c] : acc[c] / divisor);
        }
  return y;
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
      case OpKind::kConv: y = conv(l, g.batch, x); break;
      case OpKind::kDense: y = matrix(l, g.batch, x, nullptr); break;
      case OpKind::kMatMul: y = matrix(l, g.batch, x, &t.at(l.inputs[1])); break;
      case OpKind::kMaxPool:
      case OpKind::kAvgPool: y = pool(l, g.batch, x); break;
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
      case OpKind::kReshape: y = x; break;
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
