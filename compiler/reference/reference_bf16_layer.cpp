#include "compiler/reference/reference_bf16_layer.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "arch/activation.hpp"
#include "arch/fp8.hpp"
#include "compiler/reference/reference_dispatch.hpp"
#include "compiler/reference/reference_loops.hpp"
#include "support/error.hpp"

namespace npusim {

namespace {

constexpr double kU32 = 0x1p-24;  // fp32's unit roundoff
constexpr float kInf = std::numeric_limits<float>::infinity();

// gamma(n) of the summation bound: n u / (1 - n u).
double gamma_n(double n) {
  const double nu = n * kU32;
  return nu < 0.5 ? nu / (1.0 - nu) : std::numeric_limits<double>::infinity();
}

// Largest slope of an activation; 0 marks the piecewise-linear ones, exact in fp32 (no rounding
// of their own), whose slope is at most 1.
double slope(Activation a) {
  switch (a) {
    case Activation::kSigmoid:
      return 0.25;
    case Activation::kTanh:
      return 1.0;
    case Activation::kGelu:
      return 1.13;  // max of GELU' = 1.1289 at x = 2^(1/2)
    case Activation::kGeluTanh:
      return 1.13;  // its tanh approximation's: 1.1295 near x = 1.5
    case Activation::kHardSwish:
      return 1.5;  // (2x + 3) / 6 at x = 3
    case Activation::kHardSigmoid:
      return 1.0 / 6.0;
    default:
      return 0.0;
  }
}

// After an operation whose fp32 result may differ by e_pre (|pre| at most `mag`): the bound of
// its output through the layer's activation y. The library functions (expf, tanhf, erff) and the
// few operations around them round within 4 u of |x| + |y| each, in the simulation and in the
// reference.
float through_activation(const Layer& l, double e_pre, double mag, float y) {
  if (e_pre == 0.0) return 0.0f;
  // A step flips wherever its input may cross 0: any difference of the input allows 1.
  if (l.activation == Activation::kStep) return 1.0f;
  // 1/sqrt(x): |y'| = |y|^3 / 2, at the end of the interval nearer 0 (a slope bound of 1.1).
  // sqrt(x): |y'| = 1 / (2 |y|); 1/x: |y'| = y^2 (both with the 1.1 margin).
  const double ay = std::fabs(double(y));
  const double s = l.activation == Activation::kRsqrt        ? 0.55 * std::pow(ay, 3.0)
                   : l.activation == Activation::kSqrt       ? (ay > 0 ? 0.55 / ay : kInf)
                   : l.activation == Activation::kReciprocal ? 1.1 * ay * ay
                                                             : slope(l.activation);
  if (s == 0.0) return float(e_pre);
  return float(s * e_pre + 8.0 * kU32 * (mag + std::fabs(y)));
}

bool any_nonzero(const std::vector<float>* b) {
  return b != nullptr && std::any_of(b->begin(), b->end(), [](float x) { return x != 0.0f; });
}

std::vector<float> abs_of(const float* x, size_t n) {
  std::vector<float> y(n);
  for (size_t i = 0; i < n; ++i) y[i] = std::fabs(x[i]);
  return y;
}

std::vector<float> weights_of(const Layer& l) {
  std::vector<float> w(l.bf16_weights.size());
  for (size_t i = 0; i < w.size(); ++i) w[i] = bf16_bits_to_float(l.bf16_weights[i]);
  return w;
}

// Products summed per output: the kernel window times the group's channels, or K.
uint64_t summation_length(const Layer& l) {
  if (l.kind != OpKind::kConv) return uint64_t(l.in_shapes[0].last());
  return uint64_t(l.kernel[0]) * l.kernel[1] * l.kernel[2] * (l.in_shapes[0].last() / l.groups);
}

float bias_of(const Layer& l, size_t i) {
  if (l.kind == OpKind::kMatMul || l.bias.empty()) return 0.0f;
  return l.bias[i % l.bias.size()];
}

std::vector<float> matrix_bound(const Layer& l, int batch, const std::vector<Bf16Operand>& in,
                                const TensorF& y) {
  const TensorF& a = *in[0].value;
  const bool matmul = l.kind == OpKind::kMatMul;
  const std::vector<float> w = matmul ? *in[1].value : weights_of(l);
  const std::vector<float> abs_a = abs_of(a.data(), a.size()), abs_w = abs_of(w.data(), w.size());
  // S = sum |a w| (the bound's scale) and the inputs' errors through the products.
  const TensorF s = bf16_matrix_products(l, batch, abs_a.data(), abs_w.data());
  TensorF prop;
  const auto add = [&prop](const TensorF& t) {
    if (prop.empty()) prop.assign(t.size(), 0.0f);
    for (size_t i = 0; i < t.size(); ++i) prop[i] += t[i];
  };
  const bool ea = any_nonzero(in[0].bound), eb = matmul && any_nonzero(in[1].bound);
  if (ea) add(bf16_matrix_products(l, batch, in[0].bound->data(), abs_w.data()));
  if (eb) add(bf16_matrix_products(l, batch, abs_a.data(), in[1].bound->data()));
  if (ea && eb) add(bf16_matrix_products(l, batch, in[0].bound->data(), in[1].bound->data()));
  // K products and the bias: each side within gamma(K+1) S of the exact sum; one more K for S
  // itself, summed in fp32; products below fp32's smallest normal are not exact (2^-149 each).
  const uint64_t k = summation_length(l);
  const double g = 2.0 * gamma_n(double(k) + 2.0);
  std::vector<float> bound(y.size());
  for (size_t i = 0; i < y.size(); ++i) {
    const double scale = double(s[i]) + std::fabs(bias_of(l, i));
    const double e_pre = (prop.empty() ? 0.0 : prop[i] * (1.0 + g)) + g * scale + k * 0x1p-148;
    bound[i] = through_activation(l, e_pre, scale + (prop.empty() ? 0.0 : prop[i]), y[i]);
  }
  return bound;
}

// A conv's or dense layer's input as its fp8 array sees it (--dtype fp8-*): the values rounded,
// and a bound E grown by the fp8 spacing (rounding is monotone: E + spacing at the larger).
struct FP8Input {
  TensorF value;
  std::vector<float> bound;  // empty: exact
};
FP8Input fp8_input(const Layer& l, const Bf16Operand& in) {
  FP8Input r;
  r.value.resize(in.value->size());
  for (size_t i = 0; i < r.value.size(); ++i)
    r.value[i] = round_to_fp8((*in.value)[i], l.fp8, l.fp8_input_exp);
  if (!any_nonzero(in.bound)) return r;
  r.bound.resize(r.value.size());
  for (size_t i = 0; i < r.value.size(); ++i) {
    const double e = (*in.bound)[i];
    r.bound[i] =
        e == 0.0 ? 0.0f
                 : float(e + fp8_spacing(std::fabs((*in.value)[i]) + e, l.fp8, l.fp8_input_exp));
  }
  return r;
}

std::vector<float> pool_bound(const Layer& l, int batch, const Bf16Operand& in) {
  const bool is_max = l.kind == OpKind::kMaxPool;
  const auto finish = [](float acc, int divisor) { return divisor == 0 ? acc : acc / divisor; };
  // Max: the window's largest error; average: the average error and the fp32 sum's rounding.
  std::vector<float> e = reference_loops::pool(l, batch, *in.bound, 0.0f, finish);
  if (is_max) return e;
  const std::vector<float> abs_x = abs_of(in.value->data(), in.value->size());
  const std::vector<float> m = reference_loops::pool(l, batch, abs_x, 0.0f, finish);
  const int window = l.kernel[0] * l.kernel[1] * l.kernel[2];
  const double g = 2.0 * gamma_n(window + 2.0);
  for (size_t i = 0; i < e.size(); ++i) e[i] = float(e[i] * (1.0 + g) + g * m[i]);
  return e;
}

std::vector<float> eltwise_bound(const Layer& l, const std::vector<Bf16Operand>& in,
                                 const TensorF& y) {
  const TensorF& x = *in[0].value;
  std::vector<float> bound(y.size());
  for (size_t i = 0; i < y.size(); ++i) {
    const double ex = in[0].bound ? (*in[0].bound)[i] : 0.0;
    if (l.kind == OpKind::kActivation) {
      bound[i] = through_activation(l, ex, std::fabs(x[i]) + ex, y[i]);
      continue;
    }
    const double z = (*in[1].value)[i], ez = in[1].bound ? (*in[1].bound)[i] : 0.0;
    const bool add = l.kind == OpKind::kAdd;
    const double mag = add ? std::fabs(x[i]) + std::fabs(z) + ex + ez
                           : (std::fabs(x[i]) + ex) * (std::fabs(z) + ez);
    double e = add ? ex + ez : std::fabs(x[i]) * ez + std::fabs(z) * ex + ex * ez;
    if (e > 0.0) e += 2.0 * kU32 * mag;  // the one fp32 rounding, on each side
    bound[i] = through_activation(l, e, mag, y[i]);
  }
  return bound;
}

// Softmax and layer norm rows whose input is not exact.
std::vector<float> row_bound(const Layer& l, const Bf16Operand& in, const TensorF& y) {
  const TensorF& x = *in.value;
  const std::vector<float>& ex = *in.bound;
  const int n = l.out_shape.last();
  const double g = 2.0 * gamma_n(2.0 * n + 8.0);  // the row's sums and the few operations after
  std::vector<float> bound(y.size());
  for (size_t r = 0; r < y.size(); r += n) {
    const double m = *std::max_element(ex.begin() + r, ex.begin() + r + n);
    if (l.kind == OpKind::kSoftmax) {
      // exp(x_i + d_i) / sum exp(x_j + d_j), |d| <= m: within a factor exp(+-2m) of p_i.
      for (int i = 0; i < n; ++i) {
        const double p = std::fabs(y[r + i]) * (1.0 + 0x1p-7);
        bound[r + i] = float(p * std::expm1(2.0 * m) + g * p);
      }
      continue;
    }
    double mean = 0.0, var = 0.0;  // RMSNorm: the mean taken as 0
    if (!l.rms) {
      for (int i = 0; i < n; ++i) mean += x[r + i];
      mean /= n;
    }
    for (int i = 0; i < n; ++i) var += (x[r + i] - mean) * (x[r + i] - mean);
    const double sigma = std::sqrt(var / n + l.epsilon);
    // The centred value moves by at most 2m, the standard deviation by at most 2m.
    for (int i = 0; i < n; ++i) {
      const double xhat = std::fabs(x[r + i] - mean) / sigma, gam = std::fabs(l.gamma[i]);
      bound[r + i] =
          sigma > 2.0 * m
              ? float(gam * (2.0 * m + xhat * 2.0 * m) / (sigma - 2.0 * m) +
                      g * (std::fabs(y[r + i]) + std::fabs(l.beta[i]) + gam * (xhat + 1.0)))
              : kInf;
    }
  }
  return bound;
}

// Concatenation and reshape move their inputs' bounds with their values.
struct BoundCopy {
  static float concat_value(const Layer&, size_t, float v) { return v; }
};

}  // namespace

TensorF bf16_matrix_products(const Layer& l, int batch, const float* a, const float* w) {
  TensorF y(size_t(batch) * l.out_shape.elements(), 0.0f);
  if (l.kind == OpKind::kConv) {
    reference_loops::conv(l, batch, a, w, y.data());
    return y;
  }
  const TensorShape& in = l.in_shapes[0];
  const int K = in.last(), N = l.out_shape.last();
  const bool dense = l.kind == OpKind::kDense;
  const uint64_t m = dense ? uint64_t(batch) * in.outer() : in.dims[in.rank() - 2];
  const uint64_t groups = dense ? 1 : uint64_t(batch) * in.outer() / m;
  for (uint64_t g = 0; g < groups; ++g) {
    const float* wg = dense ? w : w + g * uint64_t(K) * N;
    for (uint64_t r = 0; r < m; ++r) {
      const float* ar = a + (g * m + r) * K;
      float* acc = &y[(g * m + r) * N];
      // Each output sums its products in index order of k (vectorized across n).
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
    }
  }
  return y;
}

Bf16LayerResult reference_bf16_layer(const Layer& l, int batch,
                                     const std::vector<Bf16Operand>& inputs) {
  if (!l.epilogue.empty()) {
    // A fused epilogue (compiler/passes/fusion.cpp): the layer's own products, stored to bf16,
    // then each stage as the separate layer it was, on that stored value with its propagated
    // bound and on the residual operand with its own: the stages' roundings add up.
    Layer host = l;
    host.epilogue.clear();
    Bf16LayerResult r = reference_bf16_layer(host, batch, inputs);
    for (const Layer& s : l.epilogue) {
      std::vector<float> carried(r.bound.size());
      for (size_t i = 0; i < carried.size(); ++i)
        carried[i] = bf16_propagated_bound(r.value[i], r.bound[i]);
      const Bf16Operand chained{&r.value, &carried};
      std::vector<Bf16Operand> stage_inputs{chained};
      if (s.kind == OpKind::kAdd) {
        NPUSIM_CHECK(s.residual_input >= 0 && size_t(s.residual_input) < inputs.size(),
                     "epilogue stage {} of {} has no residual operand", s.name, l.name);
        const Bf16Operand& residual = inputs[size_t(s.residual_input)];
        stage_inputs = s.chain_operand == 0 ? std::vector<Bf16Operand>{chained, residual}
                                            : std::vector<Bf16Operand>{residual, chained};
      }
      r = reference_bf16_layer(s, batch, stage_inputs);
    }
    return r;
  }
  std::vector<const TensorF*> values;
  for (const Bf16Operand& o : inputs) values.push_back(o.value);
  Bf16LayerResult r;
  r.value = reference_bf16_op(l, batch, values);
  const bool exact_inputs = std::none_of(inputs.begin(), inputs.end(),
                                         [](const Bf16Operand& o) { return any_nonzero(o.bound); });
  switch (l.kind) {
    case OpKind::kConv:
    case OpKind::kDense:
    case OpKind::kMatMul:
      if (l.kind != OpKind::kMatMul && l.fp8 != Fp8Format::kNone) {
        const FP8Input in = fp8_input(l, inputs[0]);
        std::vector<Bf16Operand> rounded(inputs);
        rounded[0] = {&in.value, in.bound.empty() ? nullptr : &in.bound};
        r.bound = matrix_bound(l, batch, rounded, r.value);
      } else {
        r.bound = matrix_bound(l, batch, inputs, r.value);
      }
      break;
    default:
      // The same fp32 operations in the same order on the same values: the same bits.
      if (exact_inputs) {
        r.bound.assign(r.value.size(), 0.0f);
      } else if (l.kind == OpKind::kMaxPool || l.kind == OpKind::kAvgPool) {
        r.bound = pool_bound(l, batch, inputs[0]);
      } else if (l.kind == OpKind::kActivation || l.kind == OpKind::kAdd ||
                 l.kind == OpKind::kMul) {
        r.bound = eltwise_bound(l, inputs, r.value);
      } else if (l.kind == OpKind::kSoftmax || l.kind == OpKind::kLayerNorm) {
        r.bound = row_bound(l, inputs[0], r.value);
      } else if (l.kind == OpKind::kConcat) {
        std::vector<const std::vector<float>*> b;
        std::vector<std::vector<float>> zeros;
        zeros.reserve(inputs.size());
        for (const Bf16Operand& o : inputs) {
          if (o.bound == nullptr) zeros.emplace_back(o.value->size(), 0.0f);
          b.push_back(o.bound != nullptr ? o.bound : &zeros.back());
        }
        r.bound = reference_loops::concat<BoundCopy>(l, batch, b);
      } else {
        r.bound = *inputs[0].bound;  // reshape
      }
  }
  NPUSIM_CHECK(r.bound.size() == r.value.size(), "layer {}: {} bounds for {} values", l.name,
               r.bound.size(), r.value.size());
  return r;
}

namespace {
// The spacing of bf16 values (8 significant bits) at magnitude v.
double bf16_ulp(double v) {
  if (!(v >= 0x1p-126)) return 0x1p-133;  // subnormal range (and NaN: the smallest step)
  if (std::isinf(v)) return std::numeric_limits<double>::infinity();
  int exponent = 0;
  std::frexp(v, &exponent);  // v = f 2^exponent, f in [0.5, 1)
  return std::ldexp(1.0, exponent - 8);
}
}  // namespace

double bf16_allowed_difference(float ref, float sim, float bound) {
  if (bound == 0.0f) return 0.0;
  return double(bound) + bf16_ulp(std::max(std::fabs(double(ref)) + bound, std::fabs(double(sim))));
}

float bf16_propagated_bound(float ref, float bound) {
  return bound == 0.0f ? 0.0f : float(bf16_allowed_difference(ref, ref, bound));
}

}  // namespace npusim
