// Cube-unit cycles and values derived by hand from the rule in cube_model.hpp:
//   D = log2(P) + 3 pipeline stages (P = K0 rounded up to a power of two), B = ceil(M / M0),
//   s = max(issue, previous s + B), done = s + B + D - 1, next_issue = s + B.
// Both fidelities must give exactly these numbers.
#include <bit>
#include <cmath>

#include "models/systolic/cube_model.hpp"
#include "support/error.hpp"
#include "systolic_test_util.hpp"

namespace npusim::systolic::testing {
namespace {

struct Expected {
  uint64_t start, done, next_issue, busy;
};

// Runs the same tiles through both fidelities and checks each against the hand-derived timing.
void expect_timings(const ArrayParams& params, const std::vector<TileShape>& shapes,
                    const std::vector<uint64_t>& issues, const std::vector<Expected>& expected) {
  for (const Fidelity fidelity : {Fidelity::kFast, Fidelity::kPe}) {
    SCOPED_TRACE(to_string(fidelity));
    auto model = make_array_model(params, fidelity);
    std::mt19937 rng(5);
    for (size_t i = 0; i < shapes.size(); ++i) {
      TileBuffers b = TileBuffers::random(rng, shapes[i], Elem::kInt8);
      const TileTiming t = b.run(*model, issues[i]);
      EXPECT_EQ(t.start_cycle, expected[i].start) << "tile " << i;
      EXPECT_EQ(t.done_cycle, expected[i].done) << "tile " << i;
      EXPECT_EQ(t.next_issue_cycle, expected[i].next_issue) << "tile " << i;
      EXPECT_EQ(t.busy_cycles, expected[i].busy) << "tile " << i;
    }
  }
}

TEST(CubeHandDerived, GeometryOfTheAscendCube) {
  // K0 = 16 lanes: a 4-level adder tree, D = 4 + 3 = 7 (fetch, multiply, 4 tree levels, write).
  const CubeGeometry g = cube_geometry(cube_params(16, 16, 16));
  EXPECT_EQ(g.lanes, 16);
  EXPECT_EQ(g.levels, 4);
  EXPECT_EQ(g.depth, 7);
  // K0 = 5 is padded to P = 8 lanes: 3 levels, D = 6. K0 = 1: no tree, D = 3.
  EXPECT_EQ(cube_geometry(cube_params(2, 5, 3)).depth, 6);
  EXPECT_EQ(cube_geometry(cube_params(2, 1, 3)).depth, 3);
}

// 16x16x16 cube (D = 7). Tile A: M = 40 -> B = 3 blocks, issued at 0; tile B: M = 1 -> 1 block,
// issued at A's next_issue (3); tile C: M = 16 -> 1 block, issued late, at 20.
//
//   cycle        0  1  2  3  4  5  6  7  8  9 10 ... 20 21 22 23 24 25 26 27
//   fetch       A0 A1 A2 B0  .  .  .  .  .  .  .     C0  .  .  .  .  .  .
//   multiply     . A0 A1 A2 B0  .  .  .  .  .  .      . C0  .  .  .  .  .
//   tree 1..4    .  . A0 .. (each block spends cycles f+2 .. f+5 in the four levels)
//   write        .  .  .  .  .  . A0 A1 A2 B0  .      .  .  .  .  .  . C0
//
// Block j of a tile fetched in cycle f is written in cycle f + D - 1 = f + 6 and visible from
// f + 7. A: s = 0, done = 0 + 3 + 7 - 1 = 9, next_issue = 3, busy = 9 - 0 = 9.
// B: s = max(3, 3) = 3, done = 3 + 1 + 6 = 10, next_issue = 4; busy = 10 - max(3, 9) = 1 (it
// extends the cube's timeline by one cycle). C: s = 20, done = 20 + 1 + 6 = 27, next_issue = 21,
// busy = 27 - max(20, 10) = 7.
TEST(CubeHandDerived, BackToBackAndLateTiles) {
  expect_timings(cube_params(16, 16, 16), {{40, 16, 16}, {1, 16, 16}, {16, 16, 16}}, {0, 3, 20},
                 {{0, 9, 3, 9}, {3, 10, 4, 1}, {20, 27, 21, 7}});
}

// 4x16x16 cube (Ascend-Lite-like M0 = 4, D = 7): a tile of M = 17 rows takes B = 5 blocks.
// Issued at 2: s = 2, done = 2 + 5 + 6 = 13, next_issue = 7. A second one with K = 3 (tree depth
// is fixed by K0, not by K): s = 7, done = 7 + 5 + 6 = 18, next_issue = 12, busy = 18 - 13 = 5.
TEST(CubeHandDerived, SmallerBlockRowsAndShortK) {
  expect_timings(cube_params(4, 16, 16), {{17, 16, 16}, {17, 3, 16}}, {2, 7},
                 {{2, 13, 7, 11}, {7, 18, 12, 5}});
}

// Steady state: tiles of B blocks issued at each next_issue keep the fetch port busy, one block
// per cycle: n tiles of B blocks take n*B + D - 1 cycles. Here 10 tiles of M = 32 (B = 2) on a
// 16x16x16 cube: tile i starts at 2i, the last is done at 18 + 2 + 6 = 26 = 10*2 + 7 - 1.
TEST(CubeHandDerived, SteadyStateIsOneBlockPerCycle) {
  std::vector<TileShape> shapes(10, TileShape{32, 16, 16});
  std::vector<uint64_t> issues;
  std::vector<Expected> expected;
  for (uint64_t i = 0; i < 10; ++i) {
    issues.push_back(2 * i);
    expected.push_back({2 * i, 2 * i + 2 + 6, 2 * i + 2, i == 0 ? 8u : 2u});
  }
  expect_timings(cube_params(16, 16, 16), shapes, issues, expected);
}

// The cube sums a block's products with its adder tree, not in k order, and the difference shows
// in fp32: products (1, 0, 2^-24, 2^-24) summed in k order give ((1 + 0) + 2^-24) + 2^-24 = 1 (each
// add of 2^-24 to 1 is a tie, rounded to even), the tree gives (1 + 0) + (2^-24 + 2^-24) =
// 1 + 2^-23. bf16 operands a = (1, 0, 2^-12, 2^-12), w = (1, 1, 2^-12, 2^-12) on a 1x4x1 cube.
TEST(CubeHandDerived, Bf16SumsFollowTheAdderTree) {
  const uint16_t one = float_to_bf16(1.0f), zero = 0, tiny = float_to_bf16(std::ldexp(1.0f, -12));
  const uint16_t a[4] = {one, zero, tiny, tiny};
  const uint16_t w[4] = {one, one, tiny, tiny};  // a 4x1 column, ldw = 1
  for (const Fidelity fidelity : {Fidelity::kFast, Fidelity::kPe}) {
    float acc = -7.0f;
    auto model = make_array_model(cube_params(1, 4, 1), fidelity);
    model->execute_bf16({1, 4, 1}, {a, 4, w, 1, &acc, 1, false}, 0);
    EXPECT_EQ(acc, 1.0f + std::ldexp(1.0f, -23)) << to_string(fidelity);
    // The systolic array adds in k order: 1.
    float systolic_acc = -7.0f;
    auto array = make_array_model({4, 1, Dataflow::kWeightStationary, true}, fidelity);
    array->execute_bf16({1, 4, 1}, {a, 4, w, 1, &systolic_acc, 1, false}, 0);
    EXPECT_EQ(systolic_acc, 1.0f) << to_string(fidelity);
  }
}

// int8: 2x3x2 tile on a 2x3x2 cube, values by hand. a = [[1, -2, 3], [127, -128, 0]],
// w = [[1, 2], [3, 4], [5, 6]]: row 0: (1 - 6 + 15, 2 - 8 + 18) = (10, 12); row 1:
// (127 - 384, 254 - 512) = (-257, -258); accumulated onto (100, 200, 300, 400).
TEST(CubeHandDerived, Int8ValuesAccumulate) {
  const int8_t a[6] = {1, -2, 3, 127, -128, 0};
  const int8_t w[6] = {1, 2, 3, 4, 5, 6};
  for (const Fidelity fidelity : {Fidelity::kFast, Fidelity::kPe}) {
    int32_t acc[4] = {100, 200, 300, 400};
    auto model = make_array_model(cube_params(2, 3, 2), fidelity);
    model->execute_int8({2, 3, 2}, {a, 3, w, 2, acc, 2, true}, 0);
    EXPECT_EQ(acc[0], 110);
    EXPECT_EQ(acc[1], 212);
    EXPECT_EQ(acc[2], 43);
    EXPECT_EQ(acc[3], 142);
  }
}

TEST(CubeContract, IssueBeforeTheCubeAcceptsAndTilesThatDoNotFitAreInternalErrors) {
  const int8_t a[64] = {}, w[64] = {};
  int32_t acc[64] = {};
  for (const Fidelity fidelity : {Fidelity::kFast, Fidelity::kPe}) {
    auto model = make_array_model(cube_params(4, 4, 4), fidelity);
    const Int8TileOperands op{a, 4, w, 4, acc, 4, false};
    const TileTiming first = model->execute_int8({8, 4, 4}, op, 0);
    EXPECT_EQ(first.next_issue_cycle, 2u);
    EXPECT_THROW(model->execute_int8({4, 4, 4}, op, 1), InternalError);
    EXPECT_THROW(model->execute_int8({4, 5, 4}, op, 2), InternalError);  // K > K0
    EXPECT_THROW(model->execute_int8({4, 4, 5}, op, 2), InternalError);  // N > N0
  }
}

}  // namespace
}  // namespace npusim::systolic::testing
