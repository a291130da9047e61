// Fit rule, fidelity names, number formats, and the arithmetic both fidelities share: int32
// wrap-around, bf16/fp16 products rounded once to fp32, fp32 sums in k order from +0.0.
#include <cmath>
#include <limits>
#include <vector>

#include "support/error.hpp"
#include "systolic_test_util.hpp"

namespace npusim::systolic::testing {
namespace {

TEST(SystolicContract, TileFitsPerDataflow) {
  const ArrayParams ws{4, 8, Dataflow::kWeightStationary, true};
  EXPECT_TRUE(tile_fits(ws, {1000, 4, 8}));
  EXPECT_FALSE(tile_fits(ws, {1, 5, 8}));
  EXPECT_FALSE(tile_fits(ws, {1, 4, 9}));
  const ArrayParams os{4, 8, Dataflow::kOutputStationary, true};
  EXPECT_TRUE(tile_fits(os, {4, 1000, 8}));
  EXPECT_FALSE(tile_fits(os, {5, 1, 8}));
  const ArrayParams is{4, 8, Dataflow::kInputStationary, true};
  EXPECT_TRUE(tile_fits(is, {8, 4, 1000}));
  EXPECT_FALSE(tile_fits(is, {9, 4, 1}));
  EXPECT_FALSE(tile_fits(is, {0, 1, 1}));
}

TEST(SystolicContract, TileThatDoesNotFitIsAnInternalError) {
  for (const Fidelity fidelity : {Fidelity::kFast, Fidelity::kPe}) {
    auto model = make_array_model({4, 4, Dataflow::kWeightStationary, true}, fidelity);
    std::vector<int8_t> a(5 * 5), w(5 * 5);
    std::vector<int32_t> acc(25);
    EXPECT_THROW(
        model->execute_int8({5, 5, 5}, {a.data(), 5, w.data(), 5, acc.data(), 5, false}, 0),
        InternalError);
  }
}

TEST(SystolicContract, IssueBeforeTheArrayAcceptsIsAnInternalError) {
  for (const Fidelity fidelity : {Fidelity::kFast, Fidelity::kPe}) {
    auto model = make_array_model({4, 4, Dataflow::kWeightStationary, false}, fidelity);
    std::vector<int8_t> a(16, 1), w(16, 1);
    std::vector<int32_t> acc(16);
    const Int8TileOperands op{a.data(), 4, w.data(), 4, acc.data(), 4, false};
    const TileTiming first = model->execute_int8({4, 4, 4}, op, 0);
    EXPECT_THROW(model->execute_int8({4, 4, 4}, op, first.next_issue_cycle - 1), InternalError);
  }
}

TEST(SystolicContract, FidelityNames) {
  EXPECT_EQ(parse_fidelity("pe"), Fidelity::kPe);
  EXPECT_EQ(parse_fidelity("fast"), Fidelity::kFast);
  EXPECT_FALSE(parse_fidelity("PE").has_value());
  EXPECT_STREQ(to_string(Fidelity::kPe), "pe");
}

TEST(SystolicNumberFormats, Bf16RoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to the even mantissa (1.0).
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6 (even): rounds up.
  EXPECT_EQ(float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_EQ(bf16_to_float(0xc040), -3.0f);
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(SystolicNumberFormats, Fp16Decodes) {
  EXPECT_EQ(fp16_to_float(0x3c00), 1.0f);
  EXPECT_EQ(fp16_to_float(0xc000), -2.0f);
  EXPECT_EQ(fp16_to_float(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(fp16_to_float(0x03ff), std::ldexp(1023.0f, -24));
  EXPECT_EQ(fp16_to_float(0x7bff), 65504.0f);
  EXPECT_TRUE(std::isinf(fp16_to_float(0x7c00)));
  EXPECT_TRUE(std::isnan(fp16_to_float(0x7e00)));
  EXPECT_TRUE(std::signbit(fp16_to_float(0x8000)));
}

// One K x 1 dot product on a 1-column ws array through both fidelities.
float bf16_dot(Fidelity fidelity, const std::vector<float>& a, const std::vector<float>& w,
               float acc_in, bool accumulate) {
  const int k = static_cast<int>(a.size());
  std::vector<uint16_t> a16, w16;
  for (float x : a) a16.push_back(float_to_bf16(x));
  for (float x : w) w16.push_back(float_to_bf16(x));
  auto model = make_array_model({k, 1, Dataflow::kWeightStationary, true}, fidelity);
  float acc = acc_in;
  model->execute_bf16({1, k, 1}, {a16.data(), k, w16.data(), 1, &acc, 1, accumulate}, 0);
  return acc;
}

// The products are added in k order: 2^26 + 1 rounds back to 2^26 (fp32's spacing there is 8),
// then - 2^26 gives 0. Any other order would give 1.
TEST(SystolicArithmetic, Bf16SumsInKOrder) {
  for (const Fidelity fidelity : {Fidelity::kFast, Fidelity::kPe}) {
    const float two26 = std::ldexp(1.0f, 26);
    EXPECT_EQ(bf16_dot(fidelity, {two26, 1.0f, -two26}, {1.0f, 1.0f, 1.0f}, 0.0f, false), 0.0f);
    EXPECT_EQ(bf16_dot(fidelity, {1.0f, two26, -two26}, {1.0f, 1.0f, 1.0f}, 0.0f, false), 0.0f);
    EXPECT_EQ(bf16_dot(fidelity, {two26, -two26, 1.0f}, {1.0f, 1.0f, 1.0f}, 0.0f, false), 1.0f);
    // The tile sum (2^26) is formed first, then added to the accumulator, whose 3 is lost when
    // rounded: acc = 3 + 2^26 = 2^26 (spacing 8).
    EXPECT_EQ(bf16_dot(fidelity, {two26}, {1.0f}, 3.0f, true), two26);
  }
}

// A product in fp32's subnormal range is rounded once, to nearest even; overflow gives inf; the
// partial sum starts at +0.0, so a single -0.0 product yields +0.0.
TEST(SystolicArithmetic, Bf16ProductRounding) {
  for (const Fidelity fidelity : {Fidelity::kFast, Fidelity::kPe}) {
    const float x = (1.0f + std::ldexp(1.0f, -7)) * std::ldexp(1.0f, -100);
    const float y = (1.0f + std::ldexp(1.0f, -7)) * std::ldexp(1.0f, -40);
    // Exact product (1 + 2^-6 + 2^-14) * 2^-140; fp32 subnormals there keep 9 fraction bits.
    EXPECT_EQ(bf16_dot(fidelity, {x}, {y}, 0.0f, false),
              (1.0f + std::ldexp(1.0f, -6)) * std::ldexp(1.0f, -140));
    EXPECT_TRUE(std::isinf(
        bf16_dot(fidelity, {std::ldexp(1.0f, 100)}, {std::ldexp(1.0f, 100)}, 0.0f, false)));
    const float zero = bf16_dot(fidelity, {-0.0f}, {1.0f}, 0.0f, false);
    EXPECT_EQ(zero, 0.0f);
    EXPECT_FALSE(std::signbit(zero));
  }
}

// int32 accumulators wrap around (two's complement) rather than saturate.
TEST(SystolicArithmetic, Int32AccumulatorWraps) {
  for (const Fidelity fidelity : {Fidelity::kFast, Fidelity::kPe}) {
    auto model = make_array_model({2, 2, Dataflow::kOutputStationary, true}, fidelity);
    const int8_t a[2] = {-128, -128}, w[2] = {-128, -128};  // sum = 32768
    int32_t acc = std::numeric_limits<int32_t>::max();
    model->execute_int8({1, 2, 1}, {a, 2, w, 1, &acc, 1, true}, 0);
    EXPECT_EQ(acc, std::numeric_limits<int32_t>::min() + 32767);
  }
}

// os tiles stream any K: a 140000-step reduction of (-128)(-128) = 2^14 exceeds int32 and wraps
// the same way in both fidelities (the fast kernel splits long reductions into chunks).
TEST(SystolicArithmetic, Int8LongReductionWraps) {
  const int k = 140000;
  const std::vector<int8_t> a(k, -128), w(k, -128);
  const uint32_t sum = static_cast<uint32_t>(k) << 14;
  for (const Fidelity fidelity : {Fidelity::kFast, Fidelity::kPe}) {
    auto model = make_array_model({1, 1, Dataflow::kOutputStationary, true}, fidelity);
    int32_t acc = 5;
    model->execute_int8({1, k, 1}, {a.data(), k, w.data(), 1, &acc, 1, true}, 0);
    EXPECT_EQ(acc, static_cast<int32_t>(sum + 5u)) << to_string(fidelity);
  }
}

// The fast kernels against a naive triple loop on large tiles (TPU-sized array), with padding
// in every leading dimension.
TEST(SystolicArithmetic, FastMatchesNaiveProduct) {
  std::mt19937 rng(5);
  const ArrayParams params{256, 256, Dataflow::kWeightStationary, true};
  auto model = make_array_model(params, Fidelity::kFast);
  const TileShape shapes[] = {{300, 256, 256}, {1, 1, 1}, {37, 129, 3}, {64, 17, 255}};
  uint64_t issue = 0;
  for (const TileShape& shape : shapes) {
    for (const Elem elem : {Elem::kInt8, Elem::kBf16}) {
      TileBuffers b = TileBuffers::random(rng, shape, elem);
      TileBuffers before = b;
      issue = b.run(*model, issue).next_issue_cycle;
      for (int m = 0; m < shape.m; ++m) {
        for (int n = 0; n < shape.n; ++n) {
          if (elem == Elem::kInt8) {
            uint32_t sum = 0;
            for (int k = 0; k < shape.k; ++k)
              sum += static_cast<uint32_t>(before.a8[m * b.lda + k] * before.w8[k * b.ldw + n]);
            const uint32_t old = static_cast<uint32_t>(before.acc_int[m * b.ldacc + n]);
            ASSERT_EQ(b.acc_int[m * b.ldacc + n],
                      static_cast<int32_t>(before.accumulate ? old + sum : sum));
          } else {
            float sum = 0.0f;
            for (int k = 0; k < shape.k; ++k) {
              const float product = bf16_to_float(before.a16[m * b.lda + k]) *
                                    bf16_to_float(before.w16[k * b.ldw + n]);
              sum = sum + product;
            }
            const float old = before.acc_float[m * b.ldacc + n];
            const float want = before.accumulate ? old + sum : sum;
            const float got = b.acc_float[m * b.ldacc + n];
            ASSERT_TRUE(std::bit_cast<uint32_t>(got) == std::bit_cast<uint32_t>(want) ||
                        (std::isnan(got) && std::isnan(want)))
                << m << "," << n;
          }
        }
      }
      // Padding between rows is left alone.
      for (int m = 0; m < shape.m; ++m)
        for (int n = shape.n; n < b.ldacc; ++n) {
          if (elem == Elem::kInt8) {
            ASSERT_EQ(b.acc_int[m * b.ldacc + n], before.acc_int[m * b.ldacc + n]);
          } else {
            ASSERT_EQ(std::bit_cast<uint32_t>(b.acc_float[m * b.ldacc + n]),
                      std::bit_cast<uint32_t>(before.acc_float[m * b.ldacc + n]));
          }
        }
    }
  }
}

}  // namespace
}  // namespace npusim::systolic::testing
