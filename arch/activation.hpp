// Elementwise activation functions, shared by the compiler (calibration, tables) and the vector
// unit (bf16 path), so both evaluate the same float expression.
#pragma once

#include <optional>
#include <string>

namespace npusim {

enum class Activation {
  kNone,
  kRelu,
  kRelu6,
  kClip,
  kSigmoid,
  kTanh,
  kGelu,
  kErf,
  kRsqrt,
  kHardSwish,    // x * relu6(x + 3) / 6 (torch.nn.Hardswish, ONNX HardSwish)
  kHardSigmoid,  // relu6(x + 3) / 6 (torch.nn.Hardsigmoid, ONNX HardSigmoid alpha 1/6 beta 0.5)
  kSqrt,         // sqrt(x); 0 for x <= 0 (ONNX: NaN below 0)
  kReciprocal,   // 1 / x, +-inf at 0
  kGeluTanh,     // GELU's tanh approximation (GPT-2's "gelu_new", ONNX Gelu approximate "tanh")
  kStep,         // 1 for x > 0, else 0: ReLU's derivative, the mask of its backward rule
};
const char* to_string(Activation activation);
std::optional<Activation> parse_activation(const std::string& text);
// The real-valued function (GELU in its erf form; kErf is the error function itself; kRsqrt is
// 1 / sqrt(x), the inverse standard deviation of a variance, +inf at 0 and NaN below).
// kRsqrt and kReciprocal have no bound over a range of inputs: their int8 output scale is
// calibrated on the values given (has_unbounded_output).
float apply_activation(Activation activation, float x, float clip_min, float clip_max);
bool has_unbounded_output(Activation activation);

// bfloat16: the upper 16 bits of an IEEE float; conversion rounds to nearest even.
uint16_t float_to_bf16_bits(float value);
float bf16_bits_to_float(uint16_t bits);
inline float round_to_bf16(float value) { return bf16_bits_to_float(float_to_bf16_bits(value)); }

}  // namespace npusim
