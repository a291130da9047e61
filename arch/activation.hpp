// Elementwise activation functions, shared by the compiler (calibration, tables) and the vector
// unit (bf16 path), so both evaluate the same float expression.
#pragma once

#include <optional>
#include <string>

namespace npusim {

enum class Activation { kNone, kRelu, kRelu6, kClip, kSigmoid, kTanh, kGelu, kErf, kRsqrt };
const char* to_string(Activation activation);
std::optional<Activation> parse_activation(const std::string& text);
// The real-valued function (GELU in its erf form; kErf is the error function itself; kRsqrt is
// 1 / sqrt(x), the inverse standard deviation of a variance, +inf at 0 and NaN below).
float apply_activation(Activation activation, float x, float clip_min, float clip_max);

// bfloat16: the upper 16 bits of an IEEE float; conversion rounds to nearest even.
uint16_t float_to_bf16_bits(float value);
float bf16_bits_to_float(uint16_t bits);
inline float round_to_bf16(float value) { return bf16_bits_to_float(float_to_bf16_bits(value)); }

}  // namespace npusim
