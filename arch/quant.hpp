// Integer arithmetic shared by the vector-unit model and the reference implementation, so both
// compute the same bits. Unit tests pin each function against its real-valued definition.
#pragma once

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

// round(acc * M) with ties away from zero, saturated to int8 ([0, 127] when relu).
int8_t requantize(int32_t acc, QuantMultiplier q, bool relu);

// Softmax of n int8 logits whose real value is q * input_scale; the result is a probability
// quantized with scale 1/127, i.e. round(p * 127) in [0, 127]. Computed in float, in index order.
void softmax_int8(const int8_t* in, int8_t* out, int n, float input_scale);

constexpr float kSoftmaxOutputScale = 1.0f / 127.0f;

}  // namespace npusim
