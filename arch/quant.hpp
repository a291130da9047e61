// Integer arithmetic shared by the vector-unit model and the reference implementation, so both
// compute the same bits. Where a function uses float, it does so in a fixed order, like an fp32
// vector lane would. Unit tests pin each function against its real-valued definition.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace npusim {

// A real scale factor M in (0, 2^15) as a 31-bit fixed-point multiplier and a right shift:
//   M ~= multiplier * 2^-(31 + shift), multiplier in [2^30, 2^31).
struct QuantMultiplier {
  int32_t multiplier = 1 << 30;
  int shift = 0;  // may be negative down to -15 (M >= 1)
  double real() const;
};

QuantMultiplier quant_multiplier_from_real(double m);

// round(acc * M) with ties away from zero, saturated to [lo, hi].
inline int8_t requantize(int32_t acc, QuantMultiplier q, int8_t lo, int8_t hi) {
  // Inline: every output element of every conv, dense and matmul passes here, in the vector unit,
  // the calibration and the reference.
  const int total_shift = 31 + q.shift;  // in [16, 62]
  const int64_t product = static_cast<int64_t>(acc) * q.multiplier;
  const int64_t half = int64_t{1} << (total_shift - 1);
  const int64_t rounded =
      product >= 0 ? (product + half) >> total_shift : -((-product + half) >> total_shift);
  return static_cast<int8_t>(std::clamp<int64_t>(rounded, lo, hi));
}
inline int8_t requantize(int32_t acc, QuantMultiplier q, bool relu) {
  return requantize(acc, q, relu ? 0 : -128, 127);
}
// The matrix-unit epilogue on the vector unit: bias, requantize, saturate, optional table.
inline int8_t epilogue_value(int32_t acc, int32_t bias, QuantMultiplier q, int8_t lo, int8_t hi,
                             const int8_t* lut) {
  const int8_t v = requantize(acc + bias, q, lo, hi);
  return lut != nullptr ? lut[v + 128] : v;
}

// Round half away from zero (std::round) and saturate to [lo, hi]. Inline and branch-free: the
// weight quantization calls it once per weight. In double, c + 0.5 is exact for a float c of at
// most 256 in magnitude, and the conversion truncates toward zero.
inline int8_t saturate_round(float x, int8_t lo = -128, int8_t hi = 127) {
  const double c = std::clamp(static_cast<double>(x), -256.0, 256.0);
  const int32_t r = static_cast<int32_t>(c + std::copysign(0.5, c));
  return static_cast<int8_t>(std::clamp<int32_t>(r, lo, hi));
}
// Elementwise ops of the vector unit (float lanes): a * ra + b * rb, a * b * r, a * r.
inline int8_t add_int8(int8_t a, int8_t b, float ra, float rb, int8_t lo, int8_t hi) {
  return saturate_round(static_cast<float>(a) * ra + static_cast<float>(b) * rb, lo, hi);
}
inline int8_t mul_int8(int8_t a, int8_t b, float r, int8_t lo, int8_t hi) {
  return saturate_round(static_cast<float>(a) * static_cast<float>(b) * r, lo, hi);
}
// Average of `count` int8 values whose sum is `sum`, rounded half away from zero.
int8_t average_int8(int32_t sum, int count);

// Softmax of n int8 logits whose real value is q * input_scale; the result is a probability
// quantized with scale 1/127, i.e. round(p * 127) in [0, 127]. Computed in float, in index order.
void softmax_int8(const int8_t* in, int8_t* out, int n, float input_scale);
constexpr float kSoftmaxOutputScale = 1.0f / 127.0f;

// Layer normalization of one row: y = (x - mean) / sqrt(var + eps) * gamma + beta, with x the real
// inputs (q * input_scale). The float result, and its int8 quantization with 1 / output_scale.
// `rms`: RMSNorm, the mean taken as 0 (var the mean of the squares).
void layernorm_row(const int8_t* in, int n, float input_scale, const float* gamma,
                   const float* beta, float epsilon, float* y, bool rms = false);
void layernorm_int8(const int8_t* in, int8_t* out, int n, float input_scale, const float* gamma,
                    const float* beta, float epsilon, float inv_output_scale, bool rms = false);

}  // namespace npusim
