// fp8 (arch/fp8.hpp): the encodings the OCP 8-bit floating point specification lists, every byte
// decoded and encoded back, rounding to nearest even at ties, saturation, subnormals, the
// per-tensor scale exponent, and fp8 weight boxes (arch/compressed_weights.hpp) widening back to
// their bf16 values. tests/python/test_fp8.py checks the rounding against numpy's.
#include "arch/fp8.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "arch/activation.hpp"
#include "arch/compressed_weights.hpp"
#include "support/error.hpp"

namespace npusim {
namespace {

constexpr Fp8Format kE4M3 = Fp8Format::kE4M3, kE5M2 = Fp8Format::kE5M2;

TEST(Fp8, KnownEncodings) {
  // E4M3: S.EEEE.MMM, bias 7. 448 = 1.75 x 2^8 (0x7e), 240 = 1.875 x 2^7 (0x77), 1 (0x38),
  // 2^-6 the smallest normal (0x08), 2^-9 the smallest subnormal (0x01), 7 x 2^-9 (0x07).
  EXPECT_EQ(float_to_fp8(448.0f, kE4M3), 0x7e);
  EXPECT_EQ(float_to_fp8(240.0f, kE4M3), 0x77);
  EXPECT_EQ(float_to_fp8(1.0f, kE4M3), 0x38);
  EXPECT_EQ(float_to_fp8(-1.0f, kE4M3), 0xb8);
  EXPECT_EQ(float_to_fp8(0.015625f, kE4M3), 0x08);
  EXPECT_EQ(float_to_fp8(std::ldexp(1.0f, -9), kE4M3), 0x01);
  EXPECT_EQ(float_to_fp8(std::ldexp(7.0f, -9), kE4M3), 0x07);
  EXPECT_TRUE(std::isnan(fp8_to_float(0x7f, kE4M3)));
  // E5M2: S.EEEEE.MM, bias 15. 57344 = 1.75 x 2^15 (0x7b), 0x7c infinity, 2^-14 (0x04), 2^-16
  // (0x01).
  EXPECT_EQ(float_to_fp8(57344.0f, kE5M2), 0x7b);
  EXPECT_EQ(float_to_fp8(1.0f, kE5M2), 0x3c);
  EXPECT_EQ(float_to_fp8(std::ldexp(1.0f, -14), kE5M2), 0x04);
  EXPECT_EQ(float_to_fp8(std::ldexp(1.0f, -16), kE5M2), 0x01);
  EXPECT_EQ(fp8_to_float(0x7c, kE5M2), INFINITY);
  EXPECT_EQ(fp8_max(kE4M3), 448.0f);
  EXPECT_EQ(fp8_max(kE5M2), 57344.0f);
}

TEST(Fp8, EveryByteRoundTrips) {
  for (Fp8Format f : {kE4M3, kE5M2}) {
    for (int b = 0; b < 256; ++b) {
      const float v = fp8_to_float(uint8_t(b), f);
      if (!std::isfinite(v)) continue;
      EXPECT_EQ(float_to_fp8(v, f), uint8_t(b)) << to_string(f) << " byte " << b;
      EXPECT_EQ(round_to_fp8(v, f, 0), v);
      EXPECT_EQ(round_to_bf16(v), v) << "fp8 values are exact in bf16";
    }
  }
}

TEST(Fp8, NearestEvenAndSaturating) {
  // Between 1 and 1.125 (E4M3's step at 1 is 2^-3): the tie 1.0625 goes to the even 1.
  EXPECT_EQ(round_to_fp8(1.0625f, kE4M3, 0), 1.0f);
  EXPECT_EQ(round_to_fp8(1.1875f, kE4M3, 0), 1.25f);  // tie between 1.125 (odd) and 1.25
  EXPECT_EQ(round_to_fp8(1.07f, kE4M3, 0), 1.125f);
  // E5M2's step at 1 is 2^-2.
  EXPECT_EQ(round_to_fp8(1.125f, kE5M2, 0), 1.0f);
  EXPECT_EQ(round_to_fp8(1.375f, kE5M2, 0), 1.5f);
  // Saturation: beyond the largest finite value, infinity included.
  EXPECT_EQ(round_to_fp8(1000.0f, kE4M3, 0), 448.0f);
  EXPECT_EQ(round_to_fp8(-INFINITY, kE4M3, 0), -448.0f);
  EXPECT_EQ(round_to_fp8(1e6f, kE5M2, 0), 57344.0f);
  // Subnormals: E4M3's step below 2^-6 is 2^-9; half of the smallest rounds to even (0).
  EXPECT_EQ(round_to_fp8(std::ldexp(1.0f, -10), kE4M3, 0), 0.0f);
  EXPECT_EQ(round_to_fp8(std::ldexp(3.0f, -11), kE4M3, 0), std::ldexp(1.0f, -9));
  // A scale exponent moves the range: with 2^10, 2^-9 x 2^-10 is representable.
  EXPECT_EQ(round_to_fp8(std::ldexp(1.0f, -19), kE4M3, 10), std::ldexp(1.0f, -19));
}

TEST(Fp8, ScaleExponentMapsTheMaxIntoTheTopBinade) {
  for (Fp8Format f : {kE4M3, kE5M2}) {
    for (float amax : {1e-6f, 0.3f, 1.0f, 448.0f, 449.0f, 3e4f, 57344.0f, 1e5f}) {
      const int e = fp8_scale_exp(amax, f);
      EXPECT_LE(std::ldexp(double(amax), e), fp8_max(f)) << amax;
      EXPECT_GT(std::ldexp(double(amax), e), fp8_max(f) / 2) << amax;
    }
  }
  EXPECT_EQ(fp8_scale_exp(0.0f, kE4M3), 0);
}

TEST(Fp8, WeightBoxesWidenBackToBf16) {
  std::mt19937 rng(8);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  for (Fp8Format f : {kE4M3, kE5M2}) {
    const WeightFormat wf = f == kE4M3 ? WeightFormat::kFp8E4M3 : WeightFormat::kFp8E5M2;
    WeightBoxShape s{7, 13, 2, 0, 0};
    s.scale_exp = fp8_scale_exp(0.2f, f);
    std::vector<uint8_t> dense(s.dense_bytes());
    for (uint64_t i = 0; i < uint64_t(s.rows) * s.row_elements; ++i) {
      const uint16_t b = float_to_bf16_bits(round_to_fp8(normal(rng), f, s.scale_exp));
      dense[2 * i] = uint8_t(b & 0xff), dense[2 * i + 1] = uint8_t(b >> 8);
    }
    const std::vector<uint8_t> c = compress_weight_box(dense, s, wf);
    EXPECT_EQ(c.size(), s.dense_bytes() / 2);
    std::vector<uint8_t> back(s.dense_bytes());
    expand_weight_box(c, s, wf, back.data());
    EXPECT_EQ(back, dense);
    // A bf16 value that is no fp8 value x 2^-scale_exp cannot be stored so.
    const uint16_t odd = float_to_bf16_bits(1.0078125f);  // 1 + 2^-7: 8 significant bits
    dense[0] = uint8_t(odd & 0xff), dense[1] = uint8_t(odd >> 8);
    EXPECT_THROW(compress_weight_box(dense, s, wf), InternalError);
  }
}

}  // namespace
}  // namespace npusim
