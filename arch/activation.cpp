#include "arch/activation.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace npusim {

const char* to_string(Activation a) {
  switch (a) {
    case Activation::kNone:
      return "none";
    case Activation::kRelu:
      return "relu";
    case Activation::kRelu6:
      return "relu6";
    case Activation::kClip:
      return "clip";
    case Activation::kSigmoid:
      return "sigmoid";
    case Activation::kTanh:
      return "tanh";
    case Activation::kGelu:
      return "gelu";
    case Activation::kErf:
      return "erf";
    case Activation::kRsqrt:
      return "rsqrt";
    case Activation::kHardSwish:
      return "hardswish";
    case Activation::kHardSigmoid:
      return "hardsigmoid";
    case Activation::kSqrt:
      return "sqrt";
    case Activation::kReciprocal:
      return "reciprocal";
    case Activation::kGeluTanh:
      return "gelu_tanh";
    case Activation::kStep:
      return "step";
  }
  return "?";
}

std::optional<Activation> parse_activation(const std::string& text) {
  for (Activation a :
       {Activation::kNone, Activation::kRelu, Activation::kRelu6, Activation::kClip,
        Activation::kSigmoid, Activation::kTanh, Activation::kGelu, Activation::kErf,
        Activation::kRsqrt, Activation::kHardSwish, Activation::kHardSigmoid, Activation::kSqrt,
        Activation::kReciprocal, Activation::kGeluTanh, Activation::kStep}) {
    if (text == to_string(a)) return a;
  }
  return std::nullopt;
}

float apply_activation(Activation a, float x, float clip_min, float clip_max) {
  switch (a) {
    case Activation::kNone:
      return x;
    case Activation::kRelu:
      return x > 0.0f ? x : 0.0f;
    case Activation::kRelu6:
      return std::min(std::max(x, 0.0f), 6.0f);
    case Activation::kClip:
      return std::min(std::max(x, clip_min), clip_max);
    case Activation::kSigmoid:
      return 1.0f / (1.0f + std::exp(-x));
    case Activation::kTanh:
      return std::tanh(x);
    case Activation::kGelu:
      return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f));
    case Activation::kErf:
      return std::erf(x);
    case Activation::kRsqrt:
      return 1.0f / std::sqrt(x);
    case Activation::kHardSwish:
      return x * (std::min(std::max(x + 3.0f, 0.0f), 6.0f) / 6.0f);
    case Activation::kHardSigmoid:
      return std::min(std::max(x + 3.0f, 0.0f), 6.0f) / 6.0f;
    case Activation::kSqrt:
      return x > 0.0f ? std::sqrt(x) : 0.0f;
    case Activation::kReciprocal:
      return 1.0f / x;
    case Activation::kGeluTanh:  // 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
      return 0.5f * x * (1.0f + std::tanh(0.79788456080286536f * (x + 0.044715f * x * x * x)));
    case Activation::kStep:
      return x > 0.0f ? 1.0f : 0.0f;
  }
  return x;
}

bool has_unbounded_output(Activation a) {
  return a == Activation::kRsqrt || a == Activation::kReciprocal;
}

uint16_t float_to_bf16_bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  if (std::isnan(value)) return static_cast<uint16_t>((bits >> 16) | 0x40);  // quiet NaN
  const uint32_t rounding = 0x7FFF + ((bits >> 16) & 1);  // to nearest, ties to even
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

float bf16_bits_to_float(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

}  // namespace npusim
