// The shared int8 arithmetic against its real-valued definitions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "arch/float_ops.hpp"
#include "arch/quant.hpp"

namespace npusim {
namespace {

TEST(Arithmetic, MultiplierRepresentsTheScale) {
  for (double m : {1e-6, 3.7e-4, 0.0123, 0.5, 0.999, 1.0, 3.25, 1000.0}) {
    QuantMultiplier q = quant_multiplier_from_real(m);
    EXPECT_GE(q.multiplier, 1 << 30);
    EXPECT_NEAR(q.real() / m, 1.0, 1e-9) << m;
  }
}

TEST(Arithmetic, RequantizeRoundsHalfAwayFromZeroAndSaturates) {
  QuantMultiplier half = quant_multiplier_from_real(0.5);
  EXPECT_EQ(requantize(3, half, false), 2);    // 1.5 -> 2
  EXPECT_EQ(requantize(-3, half, false), -2);  // -1.5 -> -2
  EXPECT_EQ(requantize(5, half, false), 3);    // 2.5 -> 3
  EXPECT_EQ(requantize(1000, half, false), 127);
  EXPECT_EQ(requantize(-1000, half, false), -128);
  EXPECT_EQ(requantize(-9, half, true), 0);
  std::mt19937 rng(5);
  std::uniform_int_distribution<int32_t> acc(-2000000, 2000000);
  QuantMultiplier q = quant_multiplier_from_real(1.0 / 9000.0);
  for (int i = 0; i < 10000; ++i) {
    int32_t a = acc(rng);
    double exact = a * q.real();
    double rounded = std::copysign(std::floor(std::fabs(exact) + 0.5), exact);
    EXPECT_EQ(requantize(a, q, false), static_cast<int8_t>(std::clamp(rounded, -128.0, 127.0)));
  }
}

TEST(Arithmetic, AverageAndElementwiseRoundHalfAwayFromZero) {
  EXPECT_EQ(average_int8(5, 2), 3);                         // 2.5 -> 3
  EXPECT_EQ(average_int8(-5, 2), -3);                       // -2.5 -> -3
  EXPECT_EQ(average_int8(7, 3), 2);                         // 2.33 -> 2
  EXPECT_EQ(add_int8(10, 20, 0.5f, 0.25f, -128, 127), 10);  // 5 + 5
  EXPECT_EQ(add_int8(100, 100, 1.0f, 1.0f, -128, 127), 127);
  EXPECT_EQ(add_int8(-7, 0, 0.5f, 1.0f, 0, 127), 0);  // relu clamp
  EXPECT_EQ(mul_int8(-3, 5, 0.1f, -128, 127), -2);    // -1.5 -> -2
}

TEST(Arithmetic, SaturateRoundEqualsStdRoundThenClamp) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> wide(-400.0f, 400.0f);
  std::vector<float> xs = {0.5f,         -0.5f, 1.5f, -1.5f, 127.5f, -128.5f, 0.49999997f,
                           -0.49999997f, 2.5f,  1e9f, -1e9f, 0.0f,   -0.0f,   126.50001f};
  for (int i = 0; i < 100000; ++i) xs.push_back(wide(rng));
  for (int i = 0; i < 1000; ++i) xs.push_back(std::floor(wide(rng)) + 0.5f);  // exact halves
  for (float x : xs) {
    for (auto [lo, hi] : {std::pair<int8_t, int8_t>{-128, 127}, {0, 6}}) {
      const float expected = std::clamp(std::round(x), float(lo), float(hi));
      ASSERT_EQ(saturate_round(x, lo, hi), int8_t(expected)) << x;
    }
  }
}

TEST(Arithmetic, LayerNormNormalizesEachRow) {
  int8_t in[4] = {-20, 0, 20, 40};
  float gamma[4] = {1, 1, 1, 1}, beta[4] = {0, 0, 0, 0}, y[4];
  layernorm_row(in, 4, 0.5f, gamma, beta, 0.0f, y);  // mean 10, std sqrt(500)
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(y[i], (in[i] - 10) / std::sqrt(500.0), 1e-5);
  int8_t out[4];
  layernorm_int8(in, out, 4, 0.5f, gamma, beta, 0.0f, 50.0f);  // output scale 1/50
  EXPECT_EQ(out[0], static_cast<int8_t>(std::lround(-30 / std::sqrt(500.0) * 50)));
}

TEST(Arithmetic, RmsNormDividesByTheRootMeanSquare) {
  // int8 codes of scale 0.5; the epsilon is of the real values (rescaled for the codes).
  int8_t in[4] = {-20, 0, 20, 40};
  float gamma[4] = {1, 2, 0.5f, 1}, beta[4] = {0, 0, 0, 0}, y[4];
  const double eps = 0.25, ms = (100.0 + 0 + 100.0 + 400.0) / 4.0;  // real values -10 0 10 20
  layernorm_row(in, 4, 0.5f, gamma, beta, float(eps), y, /*rms=*/true);
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(y[i], in[i] * 0.5 / std::sqrt(ms + eps) * gamma[i], 1e-5) << i;
  }
  // The fp32 lanes of the bf16 path: the same formula on the values.
  const float x[4] = {-10, 0, 10, 20};
  float z[4];
  layernorm_f32(x, z, 4, gamma, beta, float(eps), /*rms=*/true);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(z[i], x[i] / std::sqrt(ms + eps) * gamma[i], 1e-5) << i;
  // Not the layer norm: the mean (5) is not subtracted.
  layernorm_f32(x, z, 4, gamma, beta, float(eps));
  EXPECT_GT(std::fabs(z[3] - float(20 / std::sqrt(ms + eps))), 0.1f);
}

TEST(Arithmetic, SoftmaxIsAProbabilityOnScale127) {
  int8_t in[4] = {10, 20, 30, -128};
  int8_t out[4];
  softmax_int8(in, out, 4, 0.1f);  // logits 1, 2, 3, -12.8
  double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0) + std::exp(-12.8);
  EXPECT_EQ(out[0], std::lround(127 * std::exp(1.0) / z));
  EXPECT_EQ(out[1], std::lround(127 * std::exp(2.0) / z));
  EXPECT_EQ(out[2], std::lround(127 * std::exp(3.0) / z));
  EXPECT_EQ(out[3], 0);
}

}  // namespace
}  // namespace npusim
