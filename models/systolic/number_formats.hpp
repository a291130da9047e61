// 16-bit floating-point formats the array multiplies: bit patterns stored as uint16_t, widened to
// fp32 exactly (both formats are subsets of fp32), and fp32 -> 16-bit rounding for test data.
#pragma once

#include <bit>
#include <cstdint>

#include "models/systolic/array_model.hpp"

namespace npusim::systolic {

inline float bf16_to_float(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

inline float fp16_to_float(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    if (mantissa == 0) return std::bit_cast<float>(sign);
    // Subnormal fp16: normalise into fp32's wider exponent range.
    exponent = 127 - 15 + 1;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --exponent;
    }
    mantissa &= 0x3ffu;
    return std::bit_cast<float>(sign | (exponent << 23) | (mantissa << 13));
  }
  return std::bit_cast<float>(sign | ((exponent + 127 - 15) << 23) | (mantissa << 13));
}

inline float half16_to_float(Half16Format format, uint16_t bits) {
  return format == Half16Format::kBf16 ? bf16_to_float(bits) : fp16_to_float(bits);
}

// fp32 -> bf16, round to nearest even (NaN stays NaN).
inline uint16_t float_to_bf16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

// The product the PE forms: exact, rounded once to fp32 (no fused multiply-add anywhere: the
// library is compiled with -ffp-contract=off).
inline float half16_product(float a, float w) { return a * w; }

}  // namespace npusim::systolic
