// 8-bit floating point (docs/quantization.md, "fp8"): the two formats H100, Gaudi 2 and MI300
// multiply on their matrix units, as the OCP 8-bit floating point specification (v1.0, 2023)
// defines them:
// - E4M3 ("FN": finite, no infinities): 4 exponent bits (bias 7), 3 mantissa bits; the largest
//   finite value 448 (S.1111.110), S.1111.111 is NaN; smallest normal 2^-6, subnormal step 2^-9.
// - E5M2 (IEEE-like): 5 exponent bits (bias 15), 2 mantissa bits; largest finite 57344
//   (S.11110.11), exponent 11111 is infinity or NaN; smallest normal 2^-14, subnormal step 2^-16.
// Rounding is to the nearest value, ties to even, saturating: a magnitude above the largest
// finite value (infinity included) becomes the largest finite value, as Transformer Engine's
// casts and the OCP specification's saturating mode do. NaN stays NaN.
// Every fp8 value is exact in bf16 (8 exponent bits, 7 mantissa bits), and the product of two is
// exact in fp32, so an array that multiplies fp8 operands and accumulates in fp32 computes the
// same bits as the bf16 array fed with the fp8 values (models/matrix_unit.cpp relies on this).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace npusim {

enum class Fp8Format : uint8_t { kNone, kE4M3, kE5M2 };
const char* to_string(Fp8Format f);                                  // "none", "e4m3", "e5m2"
std::optional<Fp8Format> parse_fp8_format(const std::string& text);  // "e4m3", "e5m2"

float fp8_max(Fp8Format f);  // 448, 57344
// The byte of x rounded to f (nearest even, saturating).
uint8_t float_to_fp8(float x, Fp8Format f);
float fp8_to_float(uint8_t bits, Fp8Format f);
// x rounded to f with a power-of-two scale: fp8(x * 2^scale_exp) * 2^-scale_exp, exact in bf16.
float round_to_fp8(float x, Fp8Format f, int scale_exp);
// The spacing of round_to_fp8's values at magnitude v (the largest value's spacing above it):
// two values at most E apart round at most E + this spacing (at the larger) apart.
double fp8_spacing(double v, Fp8Format f, int scale_exp);
// The per-tensor scale exponent that maps the magnitude `amax` into (max / 2, max] of f: the
// largest e with amax * 2^e <= max (0 for amax 0 or not finite), within [-64, 64].
int fp8_scale_exp(float amax, Fp8Format f);

}  // namespace npusim
