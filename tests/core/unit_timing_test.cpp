// Timing rules of the vector unit, the off-chip memory and the activation address generator,
// each expected value derived in a comment from the rule in the model's header.
#include <gtest/gtest.h>

#include <numeric>

#include "models/im2col.hpp"
#include "models/offchip_memory.hpp"
#include "models/vector_core.hpp"

namespace npusim {
namespace {

TEST(UnitTiming, VectorUnitRules) {
  VectorUnitConfig c;
  c.lanes = 32;
  c.pipeline_latency_cycles = 4;
  c.transcendental_cycles = 4;
  RequantOp rq;
  rq.m = 26 * 26, rq.n = 32;  // 21632 elements = 676 groups of 32: 4 + 676
  EXPECT_EQ(vector_cycles(c, rq), 680u);
  PoolOp p;
  p.out_h = 13, p.out_w = 13, p.c = 32, p.window_h = 2, p.window_w = 2;
  EXPECT_EQ(vector_cycles(c, p), 4u + 169 * 4);  // 5408 outputs = 169 groups, 4 compares each
  p.average = true;                              // plus one divide (4 cycles) per group
  EXPECT_EQ(vector_cycles(c, p), 4u + 169 * 4 + 169 * 4);
  LayerNormOp ln;
  ln.rows = 3, ln.length = 40;  // per row: 2 groups * 4 passes + 4 for the reciprocal root
  EXPECT_EQ(vector_cycles(c, ln), 4u + 3 * 12);
  EltwiseOp e;
  e.rows = 5, e.cols = 40;  // 5 rows of 2 groups
  EXPECT_EQ(vector_cycles(c, e), 14u);
  SoftmaxOp s;
  s.rows = 2, s.length = 10;  // per row: 1 group * (1 + 2*4) + 4 = 13
  EXPECT_EQ(vector_cycles(c, s), 4u + 2 * 13);
  LutOp r;
  r.elements = 33;  // 2 groups
  EXPECT_EQ(vector_cycles(c, r), 6u);
  // fp32 element-wise work at half the lanes: 16 per cycle.
  Fp32Op f;
  f.rows = 2, f.cols = 40;  // per row 3 groups of 16
  EXPECT_EQ(vector_cycles(c, f), 4u + 2 * 3);
  f.kind = Fp32Kind::kDiv;  // a divide: one transcendental pass (4 cycles) per group
  EXPECT_EQ(vector_cycles(c, f), 4u + 2 * 3 * 4);
  f.kind = Fp32Kind::kSqrt;  // a quotient and its square root: two such passes
  EXPECT_EQ(vector_cycles(c, f), 4u + 2 * 3 * 8);
}

TEST(UnitTiming, OffChipMemorySharesItsBandwidth) {
  BandwidthLatencyTiming m(48.0, 70);  // 48 B/cycle, 70 cycles latency
  // 96 B at cycle 0: bus busy [0, 2), done 2 + 70.
  EXPECT_EQ(m.access(0, 96), 72u);
  // Arriving at cycle 1 it waits for the bus until 2, busy [2, 3): done 3 + 70.
  EXPECT_EQ(m.access(1, 48), 73u);
  // 24 B at cycle 10: busy [10, 10.5), done ceil(10.5) + 70.
  EXPECT_EQ(m.access(10, 24), 81u);
  // 24 B more at cycle 10 pack behind it: busy [10.5, 11), done 11 + 70.
  EXPECT_EQ(m.access(10, 24), 81u);
  EXPECT_EQ(m.busy_cycles(), 4u);
}

TEST(UnitTiming, Im2colGathersWindowsWithPadding) {
  // A 3x3x2 slab holding 0..17; a 2x2 window, stride 1, origin (-1, -1) (one pixel of padding).
  std::vector<int8_t> slab(18);  // 1 x 3 x 3 x 2
  std::iota(slab.begin(), slab.end(), 0);
  ActivationView v;
  v.slab_h = 3, v.slab_w = 3, v.slab_c = 2, v.window_c = 2;
  v.kernel_h = 2, v.kernel_w = 2;
  v.origin_y = -1, v.origin_x = -1;
  v.out_w = 4;
  std::vector<int8_t> a(2 * 8);
  v.m0 = 0;  // pixels (0,0) and (0,1): windows at (-1,-1) and (-1,0)
  gather_activations(v, slab.data(), 2, 8, a.data());
  std::vector<int8_t> expected = {0, 0, 0, 0, 0, 0, 0, 1,   // only (0,0) is inside
                                  0, 0, 0, 0, 0, 1, 2, 3};  // (0,0) and (0,1) inside
  EXPECT_EQ(a, expected);
  v.m0 = 5, v.k0 = 3;  // pixel (1,1): window at (0,0); elements 3..7 of (0,0),(0,1),(1,0),(1,1)
  std::vector<int8_t> b(5);
  gather_activations(v, slab.data(), 1, 5, b.data());
  EXPECT_EQ(b, (std::vector<int8_t>{3, 6, 7, 8, 9}));
  // Group 1 of a grouped convolution: channel 1 only (c0 = 1, window_c = 1), pixel (1,1).
  v.c0 = 1, v.window_c = 1, v.k0 = 0;
  std::vector<int8_t> g(4);
  gather_activations(v, slab.data(), 1, 4, g.data());
  EXPECT_EQ(g, (std::vector<int8_t>{1, 3, 7, 9}));
}

TEST(UnitTiming, Im2colGathersAcrossDepth) {
  // A 2 x 1 x 2 x 1 slab {0, 1 | 2, 3}; a 2x1x2 window at the origin covers all four.
  std::vector<int8_t> slab = {0, 1, 2, 3};
  ActivationView v;
  v.slab_d = 2, v.slab_h = 1, v.slab_w = 2, v.slab_c = 1, v.window_c = 1;
  v.kernel_d = 2, v.kernel_h = 1, v.kernel_w = 2;
  v.out_w = 1;
  std::vector<int8_t> a(4);
  gather_activations(v, slab.data(), 1, 4, a.data());
  EXPECT_EQ(a, (std::vector<int8_t>{0, 1, 2, 3}));
  v.origin_z = 1;  // the second plane only; the window's second plane falls outside
  gather_activations(v, slab.data(), 1, 4, a.data());
  EXPECT_EQ(a, (std::vector<int8_t>{2, 3, 0, 0}));
}

}  // namespace
}  // namespace npusim
