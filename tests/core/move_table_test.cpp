// A move's source table held as runs (compiler/ir/move_table.hpp): whatever is appended reads
// back element for element as a plain per-element table would, and the tables the backward rules
// build take a few runs per row.
#include "compiler/ir/move_table.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace npusim {
namespace {

void expect_same(const MoveTable& t, const std::vector<MoveSource>& v) {
  ASSERT_EQ(t.size(), v.size());
  size_t j = 0;
  for (auto it = t.begin(); it != t.end(); ++it, ++j) {
    ASSERT_EQ(it.index(), j);
    ASSERT_EQ(*it, v[j]) << "element " << j;
  }
  EXPECT_EQ(j, v.size());
  EXPECT_EQ(t.end().index(), v.size());
  for (size_t k = 0; k < v.size(); ++k) ASSERT_EQ(t[k], v[k]) << "element " << k;
  uint64_t out = 0;
  for (const MoveRun& r : t.runs()) {  // the runs tile the output in order
    EXPECT_EQ(r.out, out);
    EXPECT_GT(r.count, 0u);
    out += r.count;
  }
  EXPECT_EQ(out, v.size());
}

// Random tables made of stretches (constant, consecutive, strided, repeated, scattered), appended
// element by element, in bulk, and compacted from a vector: all three read back the elements.
TEST(MoveTable, ReadsBackWhatWasAppended) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<MoveSource> v;
    MoveTable bulk, single;
    const int stretches = 1 + int(rng() % 12);
    for (int s = 0; s < stretches; ++s) {
      const int32_t input = int32_t(rng() % 3) - 1;
      const int32_t first = int32_t(rng() % 50);
      const int32_t stride = int32_t(rng() % 7) - 3;
      const uint64_t count = rng() % 9;
      if (first + int64_t(count) * stride < 0) continue;
      bulk.append(input, first, stride, count);
      for (uint64_t i = 0; i < count; ++i) {
        const MoveSource e{input, int32_t(first + int64_t(i) * stride)};
        v.push_back(e);
        single.push_back(e);
      }
    }
    expect_same(bulk, v);
    expect_same(single, v);
    expect_same(MoveTable(v), v);
    EXPECT_TRUE(bulk == single);
    EXPECT_TRUE(bulk == MoveTable(v));
  }
}

// The im2col of a 3x3 / 1 pad 1 convolution over a [4, 4, c] map: a run per stretch of the
// window row inside the map (kw c consecutive channels) and one per stretch of padding.
TEST(MoveTable, Im2colRowsAreAFewRuns) {
  const int h = 4, w = 4, c = 16;
  MoveTable t;
  for (int oy = 0; oy < h; ++oy) {
    for (int ox = 0; ox < w; ++ox) {
      for (int ki = 0; ki < 3; ++ki) {
        for (int kj = 0; kj < 3; ++kj) {
          const int iy = oy + ki - 1, ix = ox + kj - 1;
          if (iy >= 0 && iy < h && ix >= 0 && ix < w) {
            t.append(0, (iy * w + ix) * c, 1, uint64_t(c));
          } else {
            t.append(-1, 0, 0, uint64_t(c));
          }
        }
      }
    }
  }
  EXPECT_EQ(t.size(), uint64_t(h * w * 9 * c));
  // Per pixel and kernel row at most: padding, the inside stretch, padding.
  EXPECT_LE(t.runs().size(), size_t(h * w * 3 * 2));
  EXPECT_EQ(t[((1 * w + 1) * 9 + 4) * c + 5], (MoveSource{0, (1 * w + 1) * c + 5}));
  EXPECT_EQ(t[5], (MoveSource{-1, 0}));
}

// A transpose of [rows, cols]: one run per output row.
TEST(MoveTable, TransposeIsARunPerColumn) {
  const int rows = 37, cols = 5;
  MoveTable t;
  std::vector<MoveSource> v;
  for (int c = 0; c < cols; ++c) {
    for (int r = 0; r < rows; ++r) {
      t.push_back({0, r * cols + c});
      v.push_back({0, r * cols + c});
    }
  }
  expect_same(t, v);
  EXPECT_EQ(t.runs().size(), size_t(cols));
}

}  // namespace
}  // namespace npusim
