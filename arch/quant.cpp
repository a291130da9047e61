#include "arch/quant.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "support/error.hpp"

namespace npusim {

double QuantMultiplier::real() const {
  return static_cast<double>(multiplier) * std::ldexp(1.0, -(31 + shift));
}

QuantMultiplier quant_multiplier_from_real(double m) {
  NPUSIM_CHECK(m > 0.0 && m < 32768.0, "requantization scale {} out of range", m);
  int exponent = 0;
  double fraction = std::frexp(m, &exponent);  // m = fraction * 2^exponent, fraction in [0.5, 1)
  auto q = static_cast<int64_t>(std::llround(fraction * (1ll << 31)));
  if (q == (1ll << 31)) {
    q /= 2;
    ++exponent;
  }
  QuantMultiplier out;
  out.multiplier = static_cast<int32_t>(q);
  out.shift = std::min(-exponent, 31);  // below 2^-31 everything rounds to 0 anyway
  return out;
}

int8_t average_int8(int32_t sum, int count) {
  const int32_t half = count / 2;
  const int32_t q = sum >= 0 ? (sum + half) / count : -((-sum + half) / count);
  return static_cast<int8_t>(std::clamp(q, -128, 127));
}

void softmax_int8(const int8_t* in, int8_t* out, int n, float input_scale) {
  if (n <= 0) return;
  int8_t max_q = in[0];
  for (int i = 1; i < n; ++i) max_q = std::max(max_q, in[i]);
  float sum = 0.0f;
  for (int i = 0; i < n; ++i) sum += std::exp(static_cast<float>(in[i] - max_q) * input_scale);
  const float inv = 127.0f / sum;
  for (int i = 0; i < n; ++i) {
    float p = std::exp(static_cast<float>(in[i] - max_q) * input_scale) * inv;
    out[i] = static_cast<int8_t>(std::clamp(std::lround(p), 0l, 127l));
  }
}

void layernorm_row(const int8_t* in, int n, float input_scale, const float* gamma,
                   const float* beta, float epsilon, float* y, bool rms) {
  float mean = 0.0f;
  if (!rms) {
    for (int i = 0; i < n; ++i) mean += static_cast<float>(in[i]);
    mean /= static_cast<float>(n);
  }
  float var = 0.0f;
  for (int i = 0; i < n; ++i) {
    const float d = static_cast<float>(in[i]) - mean;
    var += d * d;
  }
  var /= static_cast<float>(n);
  // Normalizing the int8 codes equals normalizing the real values, with epsilon rescaled.
  const float inv_std = 1.0f / std::sqrt(var + epsilon / (input_scale * input_scale));
  for (int i = 0; i < n; ++i) {
    y[i] = (static_cast<float>(in[i]) - mean) * inv_std * gamma[i] + beta[i];
  }
}

void layernorm_int8(const int8_t* in, int8_t* out, int n, float input_scale, const float* gamma,
                    const float* beta, float epsilon, float inv_output_scale, bool rms) {
  std::vector<float> y(static_cast<size_t>(n));
  layernorm_row(in, n, input_scale, gamma, beta, epsilon, y.data(), rms);
  for (int i = 0; i < n; ++i) out[i] = saturate_round(y[i] * inv_output_scale);
}

}  // namespace npusim
