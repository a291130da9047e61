// The Huffman weight format (arch/compressed_weights.hpp, --compress-weights huffman): int8 boxes
// of uniform, Gaussian-like and single-valued weights at densities 0 to 1 expand back to
// themselves; the box's size is its table, the presence bits and each row's codes in whole bytes;
// the codes are optimal (their total length equals the cost of a Huffman tree built here by
// summing merges); a distribution that needs codes longer than 15 bits gets them limited and
// still round-trips; malformed tables are internal errors.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <queue>
#include <random>

#include "arch/compressed_weights.hpp"
#include "support/error.hpp"

namespace npusim {
namespace {

// The code length of each byte value, read back from the box's table.
std::array<int, 256> table_lengths(const std::vector<uint8_t>& c) {
  std::array<int, 256> len{};
  for (uint32_t i = 0; i < kHuffmanTableBytes; ++i) {
    len[2 * i] = c[i] & 0x0f;
    len[2 * i + 1] = c[i] >> 4;
  }
  return len;
}

// The box's bytes as the format states them, from the lengths in its table.
uint64_t expected_size(const std::vector<uint8_t>& box, const WeightBoxShape& s,
                       const std::array<int, 256>& len) {
  uint64_t bytes = kHuffmanTableBytes;
  for (uint32_t r = 0; r < s.rows; ++r) {
    uint64_t bits = 0;
    for (uint32_t j = 0; j < s.row_elements; ++j) bits += len[box[r * s.row_elements + j]];
    bytes += (s.row_elements + 7) / 8 + (bits + 7) / 8;
  }
  return bytes;
}

void expect_round_trip(const std::vector<uint8_t>& box, const WeightBoxShape& s) {
  const std::vector<uint8_t> c = compress_weight_box(box, s, WeightFormat::kHuffman);
  const std::array<int, 256> len = table_lengths(c);
  EXPECT_EQ(len[0], 0);
  EXPECT_EQ(c.size(), expected_size(box, s, len));
  std::vector<uint8_t> padded = c;
  padded.resize(c.size() + 9, 0xa5);  // bytes past the box's own are ignored
  std::vector<uint8_t> back(box.size(), 0xee);
  expand_weight_box(padded, s, WeightFormat::kHuffman, back.data());
  EXPECT_EQ(back, box) << s.rows << "x" << s.row_elements;
}

TEST(HuffmanWeights, RoundTrip) {
  std::mt19937 rng(25);
  std::normal_distribution<double> normal(0.0, 30.0);
  std::uniform_int_distribution<int> any(1, 255);
  for (const uint32_t width : {1u, 7u, 8u, 128u, 300u}) {
    for (const double density : {0.0, 0.03, 0.5, 1.0}) {
      for (int kind = 0; kind < 3; ++kind) {  // uniform bytes, Gaussian-like int8, one value
        const WeightBoxShape s{6, width, 1, 0, 0};
        std::vector<uint8_t> box(s.dense_bytes(), 0);
        std::bernoulli_distribution keep(density);
        for (uint8_t& b : box) {
          if (!keep(rng)) continue;
          const int v = kind == 0   ? any(rng)
                        : kind == 1 ? std::clamp(int(std::lround(normal(rng))), -127, 127)
                                    : -3;
          b = uint8_t(int8_t(v));
        }
        expect_round_trip(box, s);
      }
    }
  }
}

TEST(HuffmanWeights, CodesAreOptimal) {
  // Half the weights of a Gaussian-like int8 layer, the smaller half pruned away.
  std::mt19937 rng(7);
  std::normal_distribution<double> normal(0.0, 40.0);
  const WeightBoxShape s{128, 256, 1, 0, 0};
  std::vector<uint8_t> box(s.dense_bytes(), 0);
  std::array<uint64_t, 256> counts{};
  for (uint8_t& b : box) {
    const int v = std::clamp(int(std::lround(normal(rng))), -127, 127);
    if (std::abs(v) < 27) continue;
    b = uint8_t(int8_t(v));
    ++counts[b];
  }
  // A Huffman tree's cost is the sum of the weights of its merges.
  std::priority_queue<uint64_t, std::vector<uint64_t>, std::greater<>> q;
  for (uint64_t c : counts) {
    if (c > 0) q.push(c);
  }
  uint64_t optimal = 0;
  while (q.size() > 1) {
    const uint64_t a = q.top();
    q.pop();
    const uint64_t b = q.top();
    q.pop();
    optimal += a + b;
    q.push(a + b);
  }
  const std::vector<uint8_t> c = compress_weight_box(box, s, WeightFormat::kHuffman);
  const std::array<int, 256> len = table_lengths(c);
  uint64_t bits = 0;
  for (int v = 0; v < 256; ++v) bits += counts[v] * len[v];
  EXPECT_EQ(bits, optimal);
  // Fewer bytes than the bitmap format, which stores the same presence bits and 8 bits a value.
  EXPECT_LT(c.size(), compress_weight_box(box, s, WeightFormat::kBitmap).size());
  expect_round_trip(box, s);
}

TEST(HuffmanWeights, LongCodesAreLimited) {
  // Value i occurs Fibonacci(i) times: an unlimited Huffman code would be 21 bits deep.
  std::vector<uint8_t> values;
  uint64_t a = 1, b = 1;
  for (int v = 1; v <= 22; ++v) {
    for (uint64_t k = 0; k < a; ++k) values.push_back(uint8_t(v));
    const uint64_t next = a + b;
    a = b;
    b = next;
  }
  const WeightBoxShape row{1, uint32_t(values.size()), 1, 0, 0};
  const std::vector<uint8_t> c = compress_weight_box(values, row, WeightFormat::kHuffman);
  int deepest = 0;
  for (int l : table_lengths(c)) deepest = std::max(deepest, l);
  EXPECT_LE(deepest, kHuffmanMaxBits);
  EXPECT_GE(deepest, 8);
  expect_round_trip(values, row);
}

TEST(HuffmanWeights, MalformedBoxesAreInternalErrors) {
  const WeightBoxShape s{1, 8, 1, 0, 0};
  std::vector<uint8_t> out(8);
  // Every value a 1-bit code: not a prefix code.
  std::vector<uint8_t> kraft(kHuffmanTableBytes, 0x11);
  kraft[0] = 0x10;  // value 0 has no code
  kraft.push_back(0xff);
  EXPECT_THROW(expand_weight_box(kraft, s, WeightFormat::kHuffman, out.data()), InternalError);
  // Value 0 with a code.
  std::vector<uint8_t> zero(kHuffmanTableBytes, 0);
  zero[0] = 0x01;
  zero.push_back(0x00);
  EXPECT_THROW(expand_weight_box(zero, s, WeightFormat::kHuffman, out.data()), InternalError);
  // Eight non-zeros present, no code bytes after the presence bits.
  std::vector<uint8_t> short_box(kHuffmanTableBytes, 0);
  short_box[1] = 0x01;  // value 2: a 1-bit code
  short_box.push_back(0xff);
  EXPECT_THROW(expand_weight_box(short_box, s, WeightFormat::kHuffman, out.data()), InternalError);
  // bf16 boxes have no Huffman form.
  const WeightBoxShape bf16{1, 4, 2, 0, 0};
  EXPECT_THROW(compress_weight_box(std::vector<uint8_t>(8, 1), bf16, WeightFormat::kHuffman),
               InternalError);
}

}  // namespace
}  // namespace npusim
