// The compressed weight formats (arch/compressed_weights.hpp): random boxes of int8 and bf16
// weights at densities from 0 to 1 expand back to themselves in both formats, their sizes follow
// the formats' byte counts, and malformed boxes are internal errors.
#include "arch/compressed_weights.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "arch/activation.hpp"
#include "support/error.hpp"

namespace npusim {
namespace {

std::vector<uint8_t> random_box(const WeightBoxShape& s, double density, std::mt19937& rng) {
  std::vector<uint8_t> box(s.dense_bytes(), 0);
  std::bernoulli_distribution keep(density);
  std::uniform_int_distribution<int> byte(1, 255);
  for (uint64_t e = 0; e < uint64_t(s.rows) * s.row_elements; ++e) {
    if (!keep(rng)) continue;
    // A non-zero element: at least one non-zero byte, the others anything (zero included).
    for (uint32_t b = 0; b < s.element_bytes; ++b) {
      box[e * s.element_bytes + b] = b == 0 ? uint8_t(byte(rng)) : uint8_t(byte(rng) % 3);
    }
  }
  return box;
}

uint64_t nonzeros(const std::vector<uint8_t>& box, uint32_t eb) {
  uint64_t n = 0;
  for (size_t e = 0; e < box.size(); e += eb) {
    bool nz = false;
    for (uint32_t b = 0; b < eb; ++b) nz |= box[e + b] != 0;
    n += nz;
  }
  return n;
}

TEST(CompressedWeights, RoundTripAndSizes) {
  std::mt19937 rng(25);
  for (const uint32_t eb : {1u, 2u}) {
    for (const uint32_t width : {1u, 7u, 8u, 128u, 255u, 256u, 300u}) {
      for (const double density : {0.0, 0.03, 0.1, 0.5, 0.9, 1.0}) {
        const WeightBoxShape s{5, width, eb, 0, 0};
        const std::vector<uint8_t> box = random_box(s, density, rng);
        const uint64_t nz = nonzeros(box, eb);
        const uint32_t ib = csr_index_bytes(width);
        EXPECT_EQ(ib, width <= 255 ? 1u : 2u);
        for (const WeightFormat f :
             {WeightFormat::kDense, WeightFormat::kBitmap, WeightFormat::kCsr}) {
          const std::vector<uint8_t> c = compress_weight_box(box, s, f);
          // dense: the box; bitmap: a bit per element (whole bytes per row) and the non-zeros;
          // CSR: a count per row, an index and the bytes of each non-zero.
          const uint64_t want = f == WeightFormat::kDense ? box.size()
                                : f == WeightFormat::kBitmap
                                    ? s.rows * uint64_t((width + 7) / 8) + nz * eb
                                    : s.rows * uint64_t(ib) + nz * (ib + eb);
          EXPECT_EQ(c.size(), want) << to_string(f) << " eb " << eb << " width " << width;
          std::vector<uint8_t> back(box.size(), 0xee);
          std::vector<uint8_t> padded = c;
          padded.resize(c.size() + 17, 0x5a);  // bytes past the box's own are ignored
          expand_weight_box(padded, s, f, back.data());
          EXPECT_EQ(back, box) << to_string(f) << " eb " << eb << " width " << width << " density "
                               << density;
        }
      }
    }
  }
}

TEST(CompressedWeights, HalfDenseInt8AndBf16Ratios) {
  // 50 % unstructured zeros: a bitmap stores 1/8 + 1/2 of int8's bytes and 1/16 + 1/2 of bf16's.
  std::mt19937 rng(7);
  for (const uint32_t eb : {1u, 2u}) {
    const WeightBoxShape s{256, 128, eb, 0, 0};
    std::vector<uint8_t> box(s.dense_bytes(), 0);
    std::vector<uint32_t> order(uint64_t(s.rows) * s.row_elements);
    for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t i = 0; i < order.size() / 2; ++i) box[uint64_t(order[i]) * eb] = 1 + i % 200;
    const double ratio =
        double(compress_weight_box(box, s, WeightFormat::kBitmap).size()) / double(box.size());
    EXPECT_DOUBLE_EQ(ratio, eb == 1 ? 0.625 : 0.5625);
  }
}

TEST(CompressedWeights, Int4GroupsRoundTrip) {
  // 6 rows from row 2 of groups of 4 rows: the box touches groups 0 and 1.
  std::mt19937 rng(3);
  const WeightBoxShape s{6, 4, 1, 4, 2};
  ASSERT_EQ(s.groups(), 2u);
  const std::vector<uint8_t> scales = {1, 2, 18, 7, 3, 1, 5, 18};
  std::vector<uint8_t> box(s.dense_bytes());
  std::uniform_int_distribution<int> z(-7, 7);
  for (uint32_t r = 0; r < s.rows; ++r) {
    for (uint32_t j = 0; j < s.row_elements; ++j) {
      box[r * 4 + j] = uint8_t(int8_t(z(rng) * scales[(2 + r) / 4 * 4 + j]));
    }
  }
  const std::vector<uint8_t> c = compress_weight_box(box, s, WeightFormat::kInt4Groups, scales);
  EXPECT_EQ(c.size(), scales.size() + box.size() / 2);
  EXPECT_TRUE(std::equal(scales.begin(), scales.end(), c.begin()));
  std::vector<uint8_t> back(box.size());
  expand_weight_box(c, s, WeightFormat::kInt4Groups, back.data());
  EXPECT_EQ(back, box);
  box[5] = uint8_t(int8_t(scales[1] * 3 + 1));  // row 1 (group 0), column 1: not scale x z
  EXPECT_THROW(compress_weight_box(box, s, WeightFormat::kInt4Groups, scales), InternalError);
}

TEST(CompressedWeights, Int4Bf16WeightRoundsToNearestEven) {
  // Scale 1 + 2^-7 (bf16 0x3f81): z x s needs up to 11 significant bits, bf16 holds 8.
  const uint16_t s = 0x3f81;
  EXPECT_EQ(int4_bf16_weight(1, s), s);
  EXPECT_EQ(int4_bf16_weight(0, s), 0);
  // 7 x s = 7.0546875 = 225.75 steps of 2^-5: up to 226 steps, 7.0625 (0x40e2).
  EXPECT_EQ(int4_bf16_weight(7, s), 0x40e2);
  // 3 x s = 3.0234375 = 193.5 steps of 2^-6: the tie goes to the even 194, 3.03125 (0x4042).
  EXPECT_EQ(int4_bf16_weight(3, s), 0x4042);
  EXPECT_EQ(int4_bf16_weight(-3, s), 0xc042);
  // 5 x s = 5.0390625 = 161.25 steps of 2^-5: down to 5.03125 (0x40a1).
  EXPECT_EQ(int4_bf16_weight(5, s), 0x40a1);
  EXPECT_EQ(int4_bf16_weight(-8, 0x3e00), 0xbf80);  // -8 x 0.125 = -1, exact
  EXPECT_THROW(int4_bf16_weight(8, s), InternalError);
}

TEST(CompressedWeights, Int4Bf16RoundTrip) {
  // 5 rows of 3 bf16 columns from row 2 of groups of 4 rows: groups 0 and 1, 15 nibbles (the last
  // alone in its byte).
  std::mt19937 rng(5);
  const WeightBoxShape s{5, 3, 2, 4, 2};
  ASSERT_EQ(s.groups(), 2u);
  std::uniform_real_distribution<float> mag(-3.0f, 3.0f);
  std::vector<uint16_t> scale(6);
  for (uint16_t& q : scale) q = float_to_bf16_bits(std::ldexp(1.0f + mag(rng) / 8, int(mag(rng))));
  std::vector<uint8_t> scale_bytes;
  for (uint16_t q : scale) {
    scale_bytes.push_back(uint8_t(q & 0xff));
    scale_bytes.push_back(uint8_t(q >> 8));
  }
  std::vector<uint8_t> box(s.dense_bytes());
  std::uniform_int_distribution<int> z(-8, 7);
  for (uint32_t r = 0; r < s.rows; ++r) {
    for (uint32_t j = 0; j < s.row_elements; ++j) {
      const uint16_t w = int4_bf16_weight(z(rng), scale[(2 + r) / 4 * 3 + j]);
      box[2 * (r * 3 + j)] = uint8_t(w & 0xff);
      box[2 * (r * 3 + j) + 1] = uint8_t(w >> 8);
    }
  }
  const std::vector<uint8_t> c = compress_weight_box(box, s, WeightFormat::kInt4Bf16, scale_bytes);
  EXPECT_EQ(c.size(), int4_box_bytes(s));
  EXPECT_EQ(c.size(), 6u * 2 + 8);  // 6 bf16 scales, 15 nibbles in 8 bytes
  EXPECT_TRUE(std::equal(scale_bytes.begin(), scale_bytes.end(), c.begin()));
  std::vector<uint8_t> back(box.size());
  expand_weight_box(c, s, WeightFormat::kInt4Bf16, back.data());
  EXPECT_EQ(back, box);
  EXPECT_THROW(
      expand_weight_box(std::span(c).first(c.size() - 1), s, WeightFormat::kInt4Bf16, back.data()),
      InternalError);
  box[4] ^= 1;  // row 0, column 2: one bf16 step off z x s
  EXPECT_THROW(compress_weight_box(box, s, WeightFormat::kInt4Bf16, scale_bytes), InternalError);
}

TEST(CompressedWeights, MalformedBoxesAreInternalErrors) {
  const WeightBoxShape s{2, 4, 1, 0, 0};
  // Row 0 claims 5 non-zeros of 4.
  const std::vector<uint8_t> too_many = {5, 0, 1, 2, 3, 9, 9, 9, 9, 9};
  std::vector<uint8_t> out(8);
  EXPECT_THROW(expand_weight_box(too_many, s, WeightFormat::kCsr, out.data()), InternalError);
  // Indices out of order.
  const std::vector<uint8_t> unordered = {2, 3, 1, 7, 7, 0};
  EXPECT_THROW(expand_weight_box(unordered, s, WeightFormat::kCsr, out.data()), InternalError);
  // A bitmap whose non-zeros are missing.
  const std::vector<uint8_t> short_box = {0x0f, 1, 2};
  EXPECT_THROW(expand_weight_box(short_box, s, WeightFormat::kBitmap, out.data()), InternalError);
}

}  // namespace
}  // namespace npusim
