// The proof that the cube unit's fast fidelity is its pe fidelity: random tile sequences on many
// block shapes (M0 x K0 x N0), int8, bf16 and fp16. For every tile both models must return the
// same four cycle counts and bit-identical accumulators, and the values must be those of an
// independent reference that sums each output with the cube's adder tree (cube_model.hpp).
#include <algorithm>
#include <string>

#include "models/systolic/cube_model.hpp"
#include "systolic_test_util.hpp"

namespace npusim::systolic::testing {
namespace {

// The specification written out naively, one output at a time: P lanes of products (+0 beyond
// K), pairwise tree, then the accumulator add. Integer sums wrap.
void reference_tile(const ArrayParams& p, TileBuffers& b) {
  const CubeGeometry g = cube_geometry(p);
  const TileShape& s = b.shape;
  for (int m = 0; m < s.m; ++m) {
    for (int n = 0; n < s.n; ++n) {
      if (b.elem == Elem::kInt8) {
        uint32_t sum = 0;
        for (int k = 0; k < s.k; ++k) {
          sum += static_cast<uint32_t>(int32_t{b.a8[m * b.lda + k]} * int32_t{b.w8[k * b.ldw + n]});
        }
        int32_t& acc = b.acc_int[m * b.ldacc + n];
        acc = static_cast<int32_t>(b.accumulate ? static_cast<uint32_t>(acc) + sum : sum);
        continue;
      }
      const Half16Format f = b.elem == Elem::kBf16 ? Half16Format::kBf16 : Half16Format::kFp16;
      std::vector<float> lanes(static_cast<size_t>(g.lanes), 0.0f);
      for (int k = 0; k < s.k; ++k) {
        lanes[k] =
            half16_to_float(f, b.a16[m * b.lda + k]) * half16_to_float(f, b.w16[k * b.ldw + n]);
      }
      for (int width = g.lanes / 2; width >= 1; width /= 2) {
        for (int i = 0; i < width; ++i) lanes[i] = lanes[2 * i] + lanes[2 * i + 1];
      }
      float& acc = b.acc_float[m * b.ldacc + n];
      acc = b.accumulate ? acc + lanes[0] : lanes[0];
    }
  }
}

int pick(std::mt19937& rng, int limit) {
  const int r = static_cast<int>(rng() % 8);
  if (r == 0) return 1;
  if (r == 1) return limit;
  return 1 + static_cast<int>(rng() % limit);
}

// `tiles` random tiles (K <= K0, N <= N0, M up to 5 blocks) issued mostly back to back,
// sometimes later, now and then far later; mixed data types when `elem` is empty.
void check_sequence(int m0, int k0, int n0, std::optional<Elem> elem, uint32_t seed, int tiles) {
  const ArrayParams params = cube_params(m0, k0, n0);
  SCOPED_TRACE("cube " + std::to_string(m0) + "x" + std::to_string(k0) + "x" + std::to_string(n0) +
               " seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  auto fast = make_array_model(params, Fidelity::kFast);
  auto pe = make_array_model(params, Fidelity::kPe);
  uint64_t issue = rng() % 5;
  for (int i = 0; i < tiles; ++i) {
    const TileShape shape{pick(rng, 5 * m0), pick(rng, k0), pick(rng, n0)};
    const Elem e = elem.value_or(static_cast<Elem>(rng() % 3));
    SCOPED_TRACE("tile " + std::to_string(i) + " " + elem_name(e) +
                 ": M=" + std::to_string(shape.m) + " K=" + std::to_string(shape.k) +
                 " N=" + std::to_string(shape.n) + " issue=" + std::to_string(issue));
    TileBuffers for_fast = TileBuffers::random(rng, shape, e);
    TileBuffers for_pe = for_fast;
    TileBuffers expected = for_fast;
    reference_tile(params, expected);
    const TileTiming tf = for_fast.run(*fast, issue);
    const TileTiming tp = for_pe.run(*pe, issue);
    expect_same_timing(tf, tp);
    EXPECT_TRUE(for_fast.same_results(for_pe));
    EXPECT_TRUE(for_fast.same_results(expected));
    if (::testing::Test::HasFailure()) return;
    issue = next_issue_cycle(rng, tf);
  }
  const ArrayStats& f = fast->stats();
  const ArrayStats& p = pe->stats();
  expect_same_counts(f, p, tiles);
  EXPECT_EQ(f.stationary_rows_loaded, 0u);  // a cube reads both operands every cycle
  EXPECT_EQ(p.stationary_rows_loaded, 0u);
}

constexpr struct {
  int m0, k0, n0;
} kBlocks[] = {{16, 16, 16}, {4, 16, 16}, {1, 1, 1}, {1, 5, 3},  {3, 7, 2},
               {2, 2, 9},    {8, 12, 4},  {5, 3, 1}, {16, 32, 8}};

void check_all_blocks(std::optional<Elem> elem, uint32_t seed_base) {
  uint32_t seed = seed_base;
  for (const auto& b : kBlocks) {
    check_sequence(b.m0, b.k0, b.n0, elem, seed++, 24);
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(CubeEquivalence, Int8) { check_all_blocks(Elem::kInt8, 100); }
TEST(CubeEquivalence, Bf16) { check_all_blocks(Elem::kBf16, 200); }
TEST(CubeEquivalence, Fp16) { check_all_blocks(Elem::kFp16, 300); }
TEST(CubeEquivalence, MixedTypesInOneSequence) { check_all_blocks(std::nullopt, 400); }

// Random block shapes (1..24 in each dimension), many seeds.
TEST(CubeEquivalence, RandomBlocksManySeeds) {
  std::mt19937 pick_shape(2025);
  for (int run = 0; run < 200; ++run) {
    const int m0 = 1 + static_cast<int>(pick_shape() % 24);
    const int k0 = 1 + static_cast<int>(pick_shape() % 24);
    const int n0 = 1 + static_cast<int>(pick_shape() % 24);
    check_sequence(m0, k0, n0, std::nullopt, 6000 + run, 12);
    if (::testing::Test::HasFailure()) return;
  }
}

}  // namespace
}  // namespace npusim::systolic::testing
