#include "arch/quant.hpp"

#include <algorithm>
#include <cmath>

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
  out.shift = -exponent;
  if (out.shift > 31) {  // too small to matter: everything rounds to 0 at a 62-bit shift
    out.shift = 31;
  }
  return out;
}

int8_t requantize(int32_t acc, QuantMultiplier q, bool relu) {
  const int total_shift = 31 + q.shift;  // in [16, 62]
  int64_t product = static_cast<int64_t>(acc) * q.multiplier;
  const int64_t half = int64_t{1} << (total_shift - 1);
  int64_t rounded = product >= 0 ? (product + half) >> total_shift : -((-product + half) >> total_shift);
  const int64_t lo = relu ? 0 : -128;
  return static_cast<int8_t>(std::clamp<int64_t>(rounded, lo, 127));
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

}  // namespace npusim
