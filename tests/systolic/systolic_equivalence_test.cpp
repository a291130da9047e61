// The proof that the fast fidelity is the pe fidelity: random tile sequences on many array
// shapes, every dataflow and data type, weights double-buffered or not. For every tile the two
// models must return the same four cycle counts and bit-identical accumulators.
#include <algorithm>
#include <string>

#include "systolic_test_util.hpp"

namespace npusim::systolic::testing {
namespace {

struct Config {
  int rows, cols;
  Dataflow dataflow;
  bool double_buffer;
  Elem elem;
  bool wavefront = false;  // ArrayParams::weight_load_wavefront
};

// A random tile that fits the array: the stationary dimensions from 1 to the array's, the
// streamed one from 1 to `stream_factor` times the larger array side; small values and exact
// array sizes come up often.
TileShape random_tile(std::mt19937& rng, const ArrayParams& p, int stream_factor) {
  const auto pick = [&](int limit) {
    const int r = static_cast<int>(rng() % 8);
    if (r == 0) return 1;
    if (r == 1) return limit;
    return 1 + static_cast<int>(rng() % limit);
  };
  const int stream_limit = stream_factor * std::max(p.rows, p.cols);
  switch (p.dataflow) {
    case Dataflow::kWeightStationary:
      return {pick(stream_limit), pick(p.rows), pick(p.cols)};
    case Dataflow::kInputStationary:
      return {pick(p.cols), pick(p.rows), pick(stream_limit)};
    case Dataflow::kOutputStationary:
      return {pick(p.rows), pick(stream_limit), pick(p.cols)};
  }
  return {};
}

// Runs `tiles` random tiles through both fidelities. Issue cycles: mostly the earliest the array
// accepts, sometimes later (an idle array), now and then far later.
void check_sequence(const Config& c, uint32_t seed, int tiles, int stream_factor) {
  ArrayParams params{c.rows, c.cols, c.dataflow, c.double_buffer};
  params.weight_load_wavefront = c.wavefront;
  SCOPED_TRACE(std::string("array ") + std::to_string(c.rows) + "x" + std::to_string(c.cols) + " " +
               to_string(c.dataflow) + (c.double_buffer ? " double-buffered " : " single ") +
               (c.wavefront ? "wavefront " : "") + elem_name(c.elem) + " seed " +
               std::to_string(seed));
  std::mt19937 rng(seed);
  auto fast = make_array_model(params, Fidelity::kFast);
  auto pe = make_array_model(params, Fidelity::kPe);
  uint64_t issue = rng() % 5;
  for (int i = 0; i < tiles; ++i) {
    const TileShape shape = random_tile(rng, params, stream_factor);
    SCOPED_TRACE("tile " + std::to_string(i) + ": M=" + std::to_string(shape.m) +
                 " K=" + std::to_string(shape.k) + " N=" + std::to_string(shape.n) +
                 " issue=" + std::to_string(issue));
    TileBuffers for_fast = TileBuffers::random(rng, shape, c.elem);
    TileBuffers for_pe = for_fast;
    const TileTiming tf = for_fast.run(*fast, issue);
    const TileTiming tp = for_pe.run(*pe, issue);
    expect_same_timing(tf, tp);
    EXPECT_TRUE(for_fast.same_results(for_pe));
    if (::testing::Test::HasFailure()) return;
    issue = next_issue_cycle(rng, tf);
  }
  const ArrayStats& f = fast->stats();
  const ArrayStats& p = pe->stats();
  expect_same_counts(f, p, tiles);
  EXPECT_EQ(f.stationary_rows_loaded, p.stationary_rows_loaded);
}

constexpr struct {
  int rows, cols;
} kShapes[] = {{4, 4}, {1, 1},  {1, 6},  {6, 1},   {2, 2},  {3, 8},
               {8, 3}, {5, 12}, {13, 7}, {16, 16}, {32, 24}};

void check_all_shapes(Dataflow dataflow, Elem elem, uint32_t seed_base, bool wavefront = false) {
  uint32_t seed = seed_base;
  for (const auto& shape : kShapes) {
    for (const bool double_buffer : {true, false}) {
      check_sequence({shape.rows, shape.cols, dataflow, double_buffer, elem, wavefront}, seed++, 24,
                     3);
      if (::testing::Test::HasFailure()) return;
    }
  }
}

TEST(SystolicEquivalence, WeightStationaryInt8) {
  check_all_shapes(Dataflow::kWeightStationary, Elem::kInt8, 100);
}
TEST(SystolicEquivalence, WeightStationaryBf16) {
  check_all_shapes(Dataflow::kWeightStationary, Elem::kBf16, 200);
}
TEST(SystolicEquivalence, WeightStationaryFp16) {
  check_all_shapes(Dataflow::kWeightStationary, Elem::kFp16, 300);
}
// Wavefront weight loads (docs/systolic_array.md): a load follows the previous tile's last reads
// down the array, so short tiles overlap more; the register-level model checks every read.
TEST(SystolicEquivalence, WeightStationaryWavefrontInt8) {
  check_all_shapes(Dataflow::kWeightStationary, Elem::kInt8, 1100, true);
}
TEST(SystolicEquivalence, WeightStationaryWavefrontBf16) {
  check_all_shapes(Dataflow::kWeightStationary, Elem::kBf16, 1200, true);
}
TEST(SystolicEquivalence, InputStationaryWavefrontInt8) {
  check_all_shapes(Dataflow::kInputStationary, Elem::kInt8, 1300, true);
}

TEST(SystolicEquivalence, OutputStationaryInt8) {
  check_all_shapes(Dataflow::kOutputStationary, Elem::kInt8, 400);
}
TEST(SystolicEquivalence, OutputStationaryBf16) {
  check_all_shapes(Dataflow::kOutputStationary, Elem::kBf16, 500);
}
TEST(SystolicEquivalence, OutputStationaryFp16) {
  check_all_shapes(Dataflow::kOutputStationary, Elem::kFp16, 600);
}
TEST(SystolicEquivalence, InputStationaryInt8) {
  check_all_shapes(Dataflow::kInputStationary, Elem::kInt8, 700);
}
TEST(SystolicEquivalence, InputStationaryBf16) {
  check_all_shapes(Dataflow::kInputStationary, Elem::kBf16, 800);
}
TEST(SystolicEquivalence, InputStationaryFp16) {
  check_all_shapes(Dataflow::kInputStationary, Elem::kFp16, 900);
}

// Mixed data types in one sequence share the array's timeline.
TEST(SystolicEquivalence, MixedTypesInOneSequence) {
  for (const Dataflow dataflow :
       {Dataflow::kWeightStationary, Dataflow::kOutputStationary, Dataflow::kInputStationary}) {
    const ArrayParams params{6, 5, dataflow, true};
    std::mt19937 rng(77);
    auto fast = make_array_model(params, Fidelity::kFast);
    auto pe = make_array_model(params, Fidelity::kPe);
    uint64_t issue = 0;
    for (int i = 0; i < 12; ++i) {
      const Elem elem = static_cast<Elem>(i % 3);
      TileBuffers for_fast = TileBuffers::random(rng, random_tile(rng, params, 2), elem);
      TileBuffers for_pe = for_fast;
      const TileTiming tf = for_fast.run(*fast, issue);
      expect_same_timing(tf, for_pe.run(*pe, issue));
      EXPECT_TRUE(for_fast.same_results(for_pe)) << to_string(dataflow) << " tile " << i;
      issue = tf.next_issue_cycle;
    }
  }
}

// The largest and most lopsided arrays (R or C = 512) and a TPU-like 128x128, a few tiles each.
TEST(SystolicEquivalence, ExtremeArrayShapes) {
  uint32_t seed = 1000;
  for (const Dataflow dataflow :
       {Dataflow::kWeightStationary, Dataflow::kOutputStationary, Dataflow::kInputStationary}) {
    for (const auto& shape : {std::pair{512, 2}, std::pair{2, 512}, std::pair{37, 29},
                              std::pair{128, 128}, std::pair{512, 48}}) {
      check_sequence({shape.first, shape.second, dataflow, seed % 2 == 0, Elem::kInt8}, seed, 4, 1);
      ++seed;
    }
  }
}

// Random array shapes (1..40 x 1..40), dataflows, data types and buffering, many seeds.
TEST(SystolicEquivalence, RandomArraysManySeeds) {
  std::mt19937 pick(2024);
  for (int run = 0; run < 500; ++run) {
    const Config c{1 + static_cast<int>(pick() % 40), 1 + static_cast<int>(pick() % 40),
                   static_cast<Dataflow>(pick() % 3), pick() % 2 == 0,
                   static_cast<Elem>(pick() % 3)};
    check_sequence(c, 5000 + run, 16, 3);
    if (::testing::Test::HasFailure()) return;
  }
}

}  // namespace
}  // namespace npusim::systolic::testing
