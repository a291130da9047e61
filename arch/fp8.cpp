#include "arch/fp8.hpp"

#include <algorithm>
#include <cmath>

#include "support/error.hpp"

namespace npusim {

namespace {

struct Fp8Spec {
  int mantissa_bits;
  int bias;
  float max;
  uint8_t nan;  // the positive NaN encoding
};

Fp8Spec spec(Fp8Format f) {
  NPUSIM_CHECK(f != Fp8Format::kNone, "fp8 format none has no encoding");
  return f == Fp8Format::kE4M3 ? Fp8Spec{3, 7, 448.0f, 0x7f} : Fp8Spec{2, 15, 57344.0f, 0x7e};
}

// |x| rounded to the format's values, nearest even, saturating (x finite, >= 0).
float round_magnitude(float a, const Fp8Spec& s) {
  if (a >= s.max) return s.max;
  if (a == 0.0f) return 0.0f;
  int e = 0;
  std::frexp(a, &e);             // a = f x 2^e, f in [0.5, 1): the leading bit is 2^(e - 1)
  const int e_min = 1 - s.bias;  // the smallest normal's exponent; below it the subnormal step
  const int lead = std::max(e - 1, e_min);
  const int quantum = lead - s.mantissa_bits;
  // a / 2^quantum < 2^(mantissa_bits + 1) is exact in float; nearbyint rounds ties to even.
  const float r = std::ldexp(std::nearbyint(std::ldexp(a, -quantum)), quantum);
  return std::min(r, s.max);
}

}  // namespace

const char* to_string(Fp8Format f) {
  switch (f) {
    case Fp8Format::kNone:
      return "none";
    case Fp8Format::kE4M3:
      return "e4m3";
    case Fp8Format::kE5M2:
      return "e5m2";
  }
  return "?";
}

std::optional<Fp8Format> parse_fp8_format(const std::string& text) {
  if (text == "e4m3") return Fp8Format::kE4M3;
  if (text == "e5m2") return Fp8Format::kE5M2;
  return std::nullopt;
}

float fp8_max(Fp8Format f) { return spec(f).max; }

uint8_t float_to_fp8(float x, Fp8Format f) {
  const Fp8Spec s = spec(f);
  if (std::isnan(x)) return s.nan;
  const uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  const float r = round_magnitude(std::fabs(x), s);
  if (r == 0.0f) return sign;
  int e = 0;
  std::frexp(r, &e);
  const int lead = e - 1;
  const int e_min = 1 - s.bias;
  if (lead < e_min) {  // subnormal: exponent field 0, mantissa r / 2^(e_min - mantissa_bits)
    return uint8_t(sign | int(std::ldexp(r, s.mantissa_bits - e_min)));
  }
  const int mantissa = int(std::ldexp(r, s.mantissa_bits - lead)) - (1 << s.mantissa_bits);
  return uint8_t(sign | (lead + s.bias) << s.mantissa_bits | mantissa);
}

float fp8_to_float(uint8_t bits, Fp8Format f) {
  const Fp8Spec s = spec(f);
  const float sign = (bits & 0x80) ? -1.0f : 1.0f;
  const int exp_field = (bits & 0x7f) >> s.mantissa_bits;
  const int mantissa = bits & ((1 << s.mantissa_bits) - 1);
  if (f == Fp8Format::kE4M3 && (bits & 0x7f) == 0x7f) return NAN;
  if (f == Fp8Format::kE5M2 && exp_field == 31) return mantissa == 0 ? sign * INFINITY : NAN;
  if (exp_field == 0) return sign * std::ldexp(float(mantissa), 1 - s.bias - s.mantissa_bits);
  return sign *
         std::ldexp(float((1 << s.mantissa_bits) + mantissa), exp_field - s.bias - s.mantissa_bits);
}

float round_to_fp8(float x, Fp8Format f, int scale_exp) {
  const Fp8Spec s = spec(f);
  if (std::isnan(x)) return x;
  const float r = round_magnitude(std::fabs(std::ldexp(x, scale_exp)), s);
  return std::copysign(std::ldexp(r, -scale_exp), x);
}

double fp8_spacing(double v, Fp8Format f, int scale_exp) {
  const Fp8Spec s = spec(f);
  const double m = std::min(std::ldexp(std::fabs(v), scale_exp), double(s.max));
  int e = 0;
  std::frexp(m, &e);
  const int lead = m > 0.0 ? std::max(e - 1, 1 - s.bias) : 1 - s.bias;
  return std::ldexp(1.0, lead - s.mantissa_bits - scale_exp);
}

int fp8_scale_exp(float amax, Fp8Format f) {
  if (!(amax > 0.0f) || !std::isfinite(amax)) return 0;
  const float max = fp8_max(f);
  int e = int(std::floor(std::log2(double(max) / double(amax))));
  // log2 of a ratio may land one off at exact powers of two: settle it exactly.
  while (std::ldexp(double(amax), e) > max) --e;
  while (std::ldexp(double(amax), e + 1) <= max) ++e;
  return std::clamp(e, -64, 64);
}

}  // namespace npusim
