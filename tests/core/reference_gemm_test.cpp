// The int8 reference's fast path (compiler/reference/reference_gemm.hpp, oneDNN's s8 GEMM) equals
// the plain loops exactly: convolutions of random shapes with groups, strides, padding and
// dilation, 2-D and 3-D, and dense products, plain and transposed, with operands over the whole
// int8 range.
#include "compiler/reference/reference_gemm.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "compiler/reference/reference_loops.hpp"

namespace npusim {
namespace {

std::vector<int8_t> random_bytes(std::mt19937& rng, size_t n) {
  std::uniform_int_distribution<int> d(-128, 127);
  std::vector<int8_t> v(n);
  for (auto& x : v) x = static_cast<int8_t>(d(rng));
  return v;
}

int pick(std::mt19937& rng, int lo, int hi) {
  return std::uniform_int_distribution<int>(lo, hi)(rng);
}

// A conv layer: input [d][h][w][c] (depth 1 for 2-D), output size from the window rule.
Layer conv_layer(int D, int H, int W, int C, int N, std::array<int, 3> k, std::array<int, 3> s,
                 std::array<int, 3> p, std::array<int, 3> dil, int groups) {
  Layer l;
  l.kind = OpKind::kConv;
  l.filters = N;
  l.kernel = k;
  l.strides = s;
  l.pads_begin = l.pads_end = p;
  l.dilation = dil;
  l.groups = groups;
  const auto out = [&](int size, int i) {
    return (size + 2 * p[i] - dil[i] * (k[i] - 1) - 1) / s[i] + 1;
  };
  if (D == 1 && k[0] == 1) {
    l.in_shapes = {make_shape({H, W, C})};
    l.out_shape = make_shape({out(H, 1), out(W, 2), N});
  } else {
    l.in_shapes = {make_shape({D, H, W, C})};
    l.out_shape = make_shape({out(D, 0), out(H, 1), out(W, 2), N});
  }
  return l;
}

void expect_conv_equal(const Layer& l, int batch, std::mt19937& rng) {
  const auto x = random_bytes(rng, batch * l.in_shapes[0].elements());
  const auto w = random_bytes(rng, size_t(l.kernel[0]) * l.kernel[1] * l.kernel[2] *
                                       (l.in_shapes[0].last() / l.groups) * l.filters);
  std::vector<int32_t> fast(batch * l.out_shape.elements(), 0), plain(fast.size(), 0);
  reference_gemm::conv(l, batch, x.data(), w.data(), fast.data());
  reference_loops::conv(l, batch, x.data(), w.data(), plain.data());
  ASSERT_EQ(fast, plain) << "conv " << to_string(l.in_shapes[0]) << " -> " << to_string(l.out_shape)
                         << " kernel " << l.kernel[1] << "x" << l.kernel[2] << " stride "
                         << l.strides[1] << " pad " << l.pads_begin[1] << " dilation "
                         << l.dilation[1] << " groups " << l.groups;
}

TEST(ReferenceGemm, UsesOneDnnOnThisMachine) {
  // The speed of the functional check rests on it (docs/performance.md); a machine without VNNI
  // runs the loops and would see this fail.
  EXPECT_TRUE(reference_gemm::available());
}

TEST(ReferenceGemm, RandomConvolutionsEqualThePlainLoops) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 60; ++trial) {
    const int groups = trial % 4 == 0 ? pick(rng, 2, 4) : 1;
    const int C = groups * pick(rng, 1, 24), N = groups * pick(rng, trial % 5 == 0 ? 1 : 8, 40);
    const int kh = pick(rng, 1, 5), kw = pick(rng, 1, 5);
    const int s = pick(rng, 1, 3), p = pick(rng, 0, 2), dil = pick(rng, 1, 2);
    const int H = pick(rng, dil * (kh - 1) + 1, 20), W = pick(rng, dil * (kw - 1) + 1, 20);
    expect_conv_equal(
        conv_layer(1, H, W, C, N, {1, kh, kw}, {1, s, s}, {0, p, p}, {1, dil, dil}, groups),
        pick(rng, 1, 2), rng);
  }
}

TEST(ReferenceGemm, PointwiseDepthwiseAndThreeDimensional) {
  std::mt19937 rng(12);
  expect_conv_equal(conv_layer(1, 14, 14, 64, 128, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, 1),
                    2, rng);
  expect_conv_equal(conv_layer(1, 9, 9, 32, 32, {1, 3, 3}, {1, 2, 2}, {0, 1, 1}, {1, 1, 1}, 32), 1,
                    rng);
  expect_conv_equal(conv_layer(5, 8, 8, 6, 16, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1), 1,
                    rng);
  expect_conv_equal(conv_layer(6, 9, 7, 8, 24, {2, 3, 3}, {2, 2, 1}, {0, 1, 2}, {2, 1, 2}, 2), 2,
                    rng);
}

TEST(ReferenceGemm, RandomProductsEqualThePlainLoop) {
  std::mt19937 rng(13);
  for (int trial = 0; trial < 40; ++trial) {
    const uint64_t rows = pick(rng, 1, 70);
    const int K = pick(rng, 1, 600), N = pick(rng, 1, 90);
    const bool transposed = trial % 2 == 1;
    const auto a = random_bytes(rng, rows * K), w = random_bytes(rng, size_t(K) * N);
    std::vector<int32_t> fast(rows * N, -1), plain(rows * N, 0);
    reference_gemm::gemm(a.data(), w.data(), fast.data(), rows, K, N, transposed);
    for (uint64_t r = 0; r < rows; ++r)
      for (int n = 0; n < N; ++n)
        for (int k = 0; k < K; ++k)
          plain[r * N + n] +=
              int32_t(a[r * K + k]) * (transposed ? w[size_t(n) * K + k] : w[size_t(k) * N + n]);
    ASSERT_EQ(fast, plain) << rows << "x" << K << "x" << N << (transposed ? " transposed" : "");
  }
}

}  // namespace
}  // namespace npusim
