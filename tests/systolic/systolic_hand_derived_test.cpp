// Small cases whose cycles are derived by hand, clock by clock, from the micro-architecture
// (docs/systolic_array.md). Each test runs both fidelities: the pe model must produce the
// derived cycles by stepping its registers, the fast model by its closed form.
#include <string>
#include <vector>

#include "models/systolic/pe_array_model.hpp"
#include "support/error.hpp"
#include "systolic_test_util.hpp"

namespace npusim::systolic::testing {
namespace {

// a = M x K, w = K x N with small distinct values; reference product computed naively.
struct IntProduct {
  TileShape shape;
  std::vector<int8_t> a, w;
  std::vector<int32_t> expected;

  explicit IntProduct(TileShape s, int salt = 0) : shape(s) {
    a.resize(static_cast<size_t>(s.m) * s.k);
    w.resize(static_cast<size_t>(s.k) * s.n);
    for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<int8_t>(int(i * 7 + salt) % 11 - 5);
    for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<int8_t>(int(i * 5 + salt) % 13 - 6);
    expected.assign(static_cast<size_t>(s.m) * s.n, 0);
    for (int m = 0; m < s.m; ++m)
      for (int n = 0; n < s.n; ++n)
        for (int k = 0; k < s.k; ++k) expected[m * s.n + n] += a[m * s.k + k] * w[k * s.n + n];
  }

  TileTiming run(ArrayModel& model, uint64_t issue) const {
    std::vector<int32_t> acc(expected.size(), -1);
    const TileTiming timing = model.execute_int8(
        shape, {a.data(), shape.k, w.data(), shape.n, acc.data(), shape.n, false}, issue);
    EXPECT_EQ(acc, expected);
    return timing;
  }
};

void expect_timing(const TileTiming& t, uint64_t start, uint64_t done, uint64_t next_issue,
                   uint64_t busy) {
  EXPECT_EQ(t.start_cycle, start);
  EXPECT_EQ(t.done_cycle, done);
  EXPECT_EQ(t.next_issue_cycle, next_issue);
  EXPECT_EQ(t.busy_cycles, busy);
}

// 4x4 array, weight-stationary, double-buffered weights, two 4x4x4 tiles back to back, then a
// third once bank 0 is free.
// Tile A, issued at 0, bank 0:
//   cycles 0..3  the load port shifts rows w[3], w[2], w[1], w[0] into the top of bank 0's chain;
//                after cycle 3 PE row k holds w[k] (load = K = 4 cycles).
//   cycle 4      s = 4: a[0][0] enters PE(0,0); a[m][k] is at PE(k,n) in cycle 4+m+k+n.
//   psum (m,n) starts at 0 in row 0, gains a[m][k]*w[k][n] in row k, leaves PE(3,n) at the end of
//   cycle 4+m+3+n and is written to the accumulators in cycle 8+m+n; the last, (3,3), in cycle
//   14, so done = 15 (= s+M+N+R-1). The last read of bank 0 is PE(3,3) in cycle 13 (bank 0 free
//   from 14 = s+M+K+N-2). The load port is free from 4; bank 1 has never been used, so the next
//   tile may issue at 4. busy = 15 - 0.
// Tile B, issued at 4, bank 1: loads in cycles 4..7 while A streams; s = max(4+4, 4+M_A) = 8;
//   done = 8+4+4+4-1 = 19; next issue waits for bank 0 to be free: max(8, 14) = 14.
//   busy = 19 - max(4, 15) = 4 (only the cycles B adds after A's last result).
// Tile C (2x3x4), issued at 14, bank 0: loads rows w[2], w[1], w[0] in cycles 14..16; s = 17;
//   done = 17+2+4+4-1 = 26; the next tile would use bank 1, whose last read (B's a[3][3] at
//   PE(3,3)) is in cycle 8+3+3+3 = 17, free from 18 = 8+4+4+4-2, so next issue = max(port free
//   17, 18) = 18. busy = 26 - max(14, 19) = 7.
TEST(SystolicHandDerived, WeightStationaryDoubleBuffered4x4) {
  for (const Fidelity fidelity : {Fidelity::kPe, Fidelity::kFast}) {
    SCOPED_TRACE(to_string(fidelity));
    auto model = make_array_model({4, 4, Dataflow::kWeightStationary, true}, fidelity);
    expect_timing(IntProduct({4, 4, 4}, 0).run(*model, 0), 0, 15, 4, 15);
    expect_timing(IntProduct({4, 4, 4}, 1).run(*model, 4), 4, 19, 14, 4);
    expect_timing(IntProduct({2, 3, 4}, 2).run(*model, 14), 14, 26, 18, 7);
    const ArrayStats& stats = model->stats();
    EXPECT_EQ(stats.busy_cycles, 26u);  // 15 + 4 + 7: the array was never idle from 0 to 26
    EXPECT_EQ(stats.last_done_cycle, 26u);
    EXPECT_EQ(stats.tiles, 3u);
    EXPECT_EQ(stats.macs, 64u + 64u + 24u);
    EXPECT_EQ(stats.int8_macs, stats.macs);
    EXPECT_EQ(stats.stationary_rows_loaded, 4u + 4u + 3u);
    EXPECT_EQ(stats.accumulator_writes, 16u + 16u + 8u);
    EXPECT_EQ(stats.accumulator_reads, 0u);  // IntProduct overwrites
  }
}

// Same tiles without double buffering: one weight register per PE, so the next load waits until
// the last read of the current tile is over.
// Tile A as above: done 15, bank 0 free from 14 -> next issue = max(4, 14) = 14.
// Tile B, issued at 14: loads 14..17, s = 18, done = 18+4+4+4-1 = 29, next issue = 18+4+4+4-2
//   = 28. busy = 29 - 15 = 14.
TEST(SystolicHandDerived, WeightStationarySingleBuffered4x4) {
  for (const Fidelity fidelity : {Fidelity::kPe, Fidelity::kFast}) {
    SCOPED_TRACE(to_string(fidelity));
    auto model = make_array_model({4, 4, Dataflow::kWeightStationary, false}, fidelity);
    expect_timing(IntProduct({4, 4, 4}, 0).run(*model, 0), 0, 15, 14, 15);
    expect_timing(IntProduct({4, 4, 4}, 1).run(*model, 14), 14, 29, 28, 14);
  }
}

// Issuing later than the array is ready leaves it idle: tile B issued at 40 starts its load at
// 40, streams at 44, done 55; busy counts only its own 15 cycles. Bank 0 (A's) was free long
// before, so the next issue is B's port free, 44.
TEST(SystolicHandDerived, IdleArrayBetweenTiles) {
  for (const Fidelity fidelity : {Fidelity::kPe, Fidelity::kFast}) {
    SCOPED_TRACE(to_string(fidelity));
    auto model = make_array_model({4, 4, Dataflow::kWeightStationary, true}, fidelity);
    expect_timing(IntProduct({4, 4, 4}, 0).run(*model, 0), 0, 15, 4, 15);
    expect_timing(IntProduct({4, 4, 4}, 1).run(*model, 40), 40, 55, 44, 15);
    // An idle array skips the quiet cycles (the pe model does not step them one by one).
    const uint64_t late = uint64_t{1} << 40;
    expect_timing(IntProduct({4, 4, 4}, 2).run(*model, late), late, late + 15, late + 4, 15);
  }
}

// Input-stationary is weight-stationary on the transposed product: a^T is loaded (row k of the
// array holds a[0..M-1][k]), columns of w stream. For 4x4x4 the cycles are those of ws.
TEST(SystolicHandDerived, InputStationary4x4) {
  for (const Fidelity fidelity : {Fidelity::kPe, Fidelity::kFast}) {
    SCOPED_TRACE(to_string(fidelity));
    auto model = make_array_model({4, 4, Dataflow::kInputStationary, true}, fidelity);
    expect_timing(IntProduct({4, 4, 4}, 0).run(*model, 0), 0, 15, 4, 15);
    // M=3 used columns, K=2 rows, N=6 streamed vectors: loads 4..5, s = max(6, 4+4) = 8,
    // done = 8+6+3+4-1 = 20; next bank (0) free from 14: next issue = max(6, 14) = 14.
    expect_timing(IntProduct({3, 2, 6}, 1).run(*model, 4), 4, 20, 14, 5);
  }
}

// 4x4 array, output-stationary, 4x4x4 tiles.
// Tile A, issued at 0: s = 0. a[m][k] enters row m in cycle k+m, w[k][n] enters column n in
//   cycle k+n; PE(m,n) multiplies step k in cycle k+m+n. Its last step (k=3) is in cycle 3+m+n
//   and puts the result in its output slot. Column n's last row (m=3) finishes in cycle 6+n, so
//   from cycle S_n = 7+n the column's values move down one slot per cycle; row m's value reaches
//   the bottom slot after 3-m moves and is written to the accumulators in cycle S_n+3-m. Last:
//   row 0 of column 3 in cycle 13 -> done = 14 (= s+K+M+N+R-2). The operand ports are free from
//   s+K = 4 = next issue.
// Tile B (4x4x4), issued at 4: rule s >= 0+4+4-4 = 4 holds -> s = 4. Its PE(0,0) result enters
//   slot (0,0) at the end of cycle 4+3 = 7, the cycle A's row-0 value of column 0 moves from
//   slot 0 to slot 1 (S_0 + 0 = 7): legal. done = 4+14 = 18, next issue 8, busy = 18-14 = 4.
// Tile C (M=4, K=1, N=4), issued at 8: B's column 0 starts draining at S_0 = 4+4+4-1 = 11; C's
//   PE(0,0) result would enter slot (0,0) at the end of cycle s+0, so s >= 11 = 4+4+4-1.
//   done = 11+1+4+4+4-2 = 22, next issue 12, busy = 22-18 = 4.
TEST(SystolicHandDerived, OutputStationary4x4) {
  for (const Fidelity fidelity : {Fidelity::kPe, Fidelity::kFast}) {
    SCOPED_TRACE(to_string(fidelity));
    auto model = make_array_model({4, 4, Dataflow::kOutputStationary, true}, fidelity);
    expect_timing(IntProduct({4, 4, 4}, 0).run(*model, 0), 0, 14, 4, 14);
    expect_timing(IntProduct({4, 4, 4}, 1).run(*model, 4), 4, 18, 8, 4);
    expect_timing(IntProduct({4, 1, 4}, 2).run(*model, 8), 11, 22, 12, 4);
  }
}

// The os scoreboard rule is tight: starting tile C one cycle earlier (s = 10) puts its first
// result into slot (0,0) while B's row-0 value of column 0 is still there: a hazard the pe model
// reports as an internal error.
TEST(SystolicHandDerived, OutputStationaryRuleIsTight) {
  PeArrayModel model({4, 4, Dataflow::kOutputStationary, true}, PeTestHooks{1});
  IntProduct({4, 4, 4}, 0).run(model, 0);
  IntProduct({4, 4, 4}, 1).run(model, 4);
  std::vector<int32_t> acc(16);
  const IntProduct c({4, 1, 4}, 2);
  EXPECT_THROW(model.execute_int8(c.shape, {c.a.data(), 1, c.w.data(), 4, acc.data(), 4, false}, 8),
               InternalError);
}

// The same over random os sequences: whenever the drain rule (not the ports or the issue cycle)
// sets a tile's start, starting that tile one cycle earlier trips a hazard check; otherwise the
// earlier start is not possible and nothing changes.
TEST(SystolicHandDerived, OutputStationaryRuleIsTightRandomized) {
  std::mt19937 rng(99);
  int binding = 0;
  for (int run = 0; run < 40; ++run) {
    const ArrayParams params{1 + static_cast<int>(rng() % 8), 1 + static_cast<int>(rng() % 8),
                             Dataflow::kOutputStationary, true};
    std::vector<TileShape> shapes;
    for (int i = 0; i < 6; ++i) {
      shapes.push_back({1 + static_cast<int>(rng() % params.rows), 1 + static_cast<int>(rng() % 6),
                        1 + static_cast<int>(rng() % params.cols)});
    }
    // Reference run: which tiles does the drain rule hold back?
    auto fast = make_array_model(params, Fidelity::kFast);
    std::vector<uint64_t> issues;
    std::vector<bool> held;
    uint64_t issue = 0, prev_start = 0;
    int prev_k = 0;
    for (size_t i = 0; i < shapes.size(); ++i) {
      const IntProduct p(shapes[i], static_cast<int>(i));
      const TileTiming t = p.run(*fast, issue);
      issues.push_back(issue);
      held.push_back(i > 0 && t.start_cycle > std::max<uint64_t>(issue, prev_start + prev_k));
      prev_start = t.start_cycle;
      prev_k = shapes[i].k;
      issue = t.next_issue_cycle;
    }
    for (size_t i = 1; i < shapes.size(); ++i) {
      if (!held[i]) continue;
      ++binding;
      PeArrayModel pe(params, PeTestHooks{1, static_cast<int>(i)});
      for (size_t j = 0; j < i; ++j) IntProduct(shapes[j], static_cast<int>(j)).run(pe, issues[j]);
      EXPECT_THROW(IntProduct(shapes[i], static_cast<int>(i)).run(pe, issues[i]), InternalError)
          << "run " << run << " tile " << i;
    }
  }
  EXPECT_GT(binding, 10);  // the sequences do exercise the rule
}

// Non-square 2x3 array, ws, one 1x1x1 tile: load in cycle 0, a[0][0] meets w[0][0] at PE(0,0)
// in cycle 1; the psum passes PE(1,0) (no operand: K=1) in cycle 2 and is written in cycle 3:
// done = 4 = 1+1+1+2-1. Bank 0 free from 1+1+1+1-2 = 2; next tile uses bank 1: next issue =
// port free = 1.
TEST(SystolicHandDerived, NonSquareSingleElement) {
  for (const Fidelity fidelity : {Fidelity::kPe, Fidelity::kFast}) {
    SCOPED_TRACE(to_string(fidelity));
    auto model = make_array_model({2, 3, Dataflow::kWeightStationary, true}, fidelity);
    expect_timing(IntProduct({1, 1, 1}, 0).run(*model, 0), 0, 4, 1, 4);
  }
}

// A steady-state case: identical tiles on a 6x7 array, each issued at the previous tile's
// next_issue_cycle; two_tiles is the distance between done cycles two tiles apart.
struct SteadyCase {
  Dataflow dataflow;
  bool double_buffer;
  TileShape shape;
  uint64_t two_tiles;
};

void check_steady_state(const SteadyCase& c, bool wavefront) {
  for (const Fidelity fidelity : {Fidelity::kPe, Fidelity::kFast}) {
    SCOPED_TRACE(std::string(to_string(c.dataflow)) + " " + to_string(fidelity) +
                 " M=" + std::to_string(c.shape.m) + (c.double_buffer ? " double" : " single"));
    ArrayParams params{6, 7, c.dataflow, c.double_buffer};
    params.weight_load_wavefront = wavefront;
    auto model = make_array_model(params, fidelity);
    uint64_t issue = 0;
    std::vector<uint64_t> done;
    for (int i = 0; i < 9; ++i) {
      const TileTiming t = IntProduct(c.shape, i).run(*model, issue);
      done.push_back(t.done_cycle);
      issue = t.next_issue_cycle;
    }
    for (size_t i = 3; i < done.size(); ++i) {
      EXPECT_EQ(done[i] - done[i - 2], c.two_tiles) << "tile " << i;
    }
  }
}

// Steady state of a run of identical tiles issued as early as the array accepts them (the
// figures docs/systolic_array.md quotes), measured over two tiles because the two weight banks
// alternate. ws/is with double buffering: tile j+1 streams after tile j (M apart), loads after
// tile j's load (K apart) and after tile j-1's last read of the bank it reuses, which is
// s_{j-1} + M + K + Q - 2, K cycles before it can stream. So two tiles take
// max(2M, 2K, M + 2K + Q - 2). Without double buffering each tile waits for its predecessor's
// last read: M + 2K + Q - 2 per tile. os: max(K, M) per tile.
TEST(SystolicHandDerived, SteadyStateThroughput) {
  const SteadyCase cases[] = {
      {Dataflow::kWeightStationary, true, {9, 6, 5}, 24},   // 9 + 12 + 5 - 2 > 2*9
      {Dataflow::kWeightStationary, true, {30, 6, 5}, 60},  // 2*30: fully overlapped loads
      {Dataflow::kWeightStationary, true, {3, 6, 5}, 18},   // 3 + 12 + 5 - 2
      {Dataflow::kWeightStationary, false, {9, 6, 5}, 48},  // 2 * (9 + 12 + 5 - 2)
      {Dataflow::kInputStationary, true, {5, 6, 9}, 24},    // ws with S = N = 9, Q = M = 5
      {Dataflow::kOutputStationary, true, {6, 9, 5}, 18},   // 2 * max(K=9, M=6)
      {Dataflow::kOutputStationary, true, {6, 2, 5}, 12},   // 2 * max(K=2, M=6): drain-bound
  };
  for (const SteadyCase& c : cases) check_steady_state(c, false);
}

// The same with wavefront weight loads (ArrayParams::weight_load_wavefront): a load may start
// once tile j-1's last vector has left column Q - 1 of row 0's frame, s_{j-1} + M + Q - 1, since
// it first writes row r in cycle L + r, after row r's last read (s + M - 1 + r + Q - 1). So two
// tiles take max(2M, 2K, M + Q - 1 + K) double-buffered, M + Q - 1 + K per tile with one bank.
TEST(SystolicHandDerived, SteadyStateThroughputWavefront) {
  const SteadyCase cases[] = {
      {Dataflow::kWeightStationary, true, {9, 6, 5}, 19},   // 9 + 4 + 6 > 2*9 (bank rule: 24)
      {Dataflow::kWeightStationary, true, {30, 6, 5}, 60},  // 2*30, as with the bank rule
      {Dataflow::kWeightStationary, true, {3, 6, 5}, 13},   // 3 + 4 + 6 (bank rule: 18)
      {Dataflow::kWeightStationary, true, {1, 6, 7}, 13},   // 2K = 12 < 1 + 6 + 6
      {Dataflow::kWeightStationary, false, {9, 6, 5}, 38},  // 2 * (9 + 4 + 6)
      {Dataflow::kInputStationary, true, {5, 6, 9}, 19},    // ws with S = N = 9, Q = M = 5
  };
  for (const SteadyCase& c : cases) check_steady_state(c, true);
}
}  // namespace
}  // namespace npusim::systolic::testing
