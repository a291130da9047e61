// The unified-buffer allocator on hand-made live ranges and on random ones.
#include "compiler/lowering/ub_allocator.hpp"

#include <gtest/gtest.h>

#include <random>

namespace npusim::lowering {
namespace {

ScratchNeed fixed(uint64_t bytes) {
  return [bytes](int, const std::vector<bool>&) { return bytes; };
}

TEST(UbAllocator, AChainReusesTheBytesOfDeadTensors) {
  // a -> b -> c -> d: each tensor lives two steps; two of them at a time fit.
  std::vector<UbBuffer> chain = {{1000, 0, 1, true, 2000},
                                 {1000, 1, 2, true, 2000},
                                 {1000, 2, 3, true, 2000},
                                 {1000, 3, 4, true, 2000}};
  const UbPlan plan = plan_unified_buffer(2048 + 256, 5, chain, fixed(256));
  ASSERT_TRUE(plan.ok);
  EXPECT_EQ(plan.spills, 0);
  for (const auto& o : plan.offset) EXPECT_TRUE(o.has_value());
  EXPECT_EQ(check_ub_plan(2048 + 256, chain, plan), "");
  EXPECT_EQ(*plan.offset[0], *plan.offset[2]) << "c takes a's bytes once a is dead";
}

TEST(UbAllocator, ResidualBranchStaysLiveAcrossTheBlock) {
  // x (step 0) is read at steps 1 and 3 (the residual add); y, z in between.
  std::vector<UbBuffer> net = {
      {4096, 0, 3, true, 3 * 4096}, {4096, 1, 2, true, 2 * 4096}, {4096, 2, 3, true, 2 * 4096}};
  const UbPlan plan = plan_unified_buffer(3 * 4096, 4, net, fixed(0));
  ASSERT_TRUE(plan.ok);
  EXPECT_EQ(plan.spills, 0);
  EXPECT_EQ(check_ub_plan(3 * 4096, net, plan), "");
  EXPECT_NE(*plan.offset[0], *plan.offset[2]);
}

TEST(UbAllocator, SpillsTheTensorThatSavesLeastTrafficPerByteStep) {
  // The long-lived residual x (4 steps) saves as much traffic per byte as y, z, but occupies the
  // buffer longer: it goes off chip first.
  std::vector<UbBuffer> net = {
      {4096, 0, 3, true, 2 * 4096}, {4096, 1, 2, true, 2 * 4096}, {4096, 2, 3, true, 2 * 4096}};
  const UbPlan plan = plan_unified_buffer(2 * 4096, 4, net, fixed(0));
  ASSERT_TRUE(plan.ok);
  EXPECT_EQ(plan.spills, 1);
  EXPECT_FALSE(plan.offset[0].has_value());
  EXPECT_TRUE(plan.offset[1].has_value());
  EXPECT_TRUE(plan.offset[2].has_value());
  EXPECT_EQ(check_ub_plan(2 * 4096, net, plan), "");
}

TEST(UbAllocator, ScratchDependsOnWhatIsResident) {
  // One layer (step 1) whose input spilled needs 3000 bytes of slabs, else 100.
  std::vector<UbBuffer> net = {{2000, 0, 1, true, 4000}, {2000, 1, 2, true, 4000}};
  auto need = [](int step, const std::vector<bool>& resident) -> uint64_t {
    return step == 1 && !resident[0] ? 3000 : 100;
  };
  const UbPlan roomy = plan_unified_buffer(8192, 3, net, need);
  ASSERT_TRUE(roomy.ok);
  EXPECT_EQ(roomy.spills, 0);
  // The scratch grows to the largest free range: 8192 - 2 x 2048 at step 1.
  EXPECT_EQ(roomy.scratch[1].bytes(), 8192 - 2 * 2048);
  const UbPlan tight = plan_unified_buffer(4096, 3, net, need);
  ASSERT_TRUE(tight.ok);
  EXPECT_GE(tight.spills, 1);
  EXPECT_EQ(check_ub_plan(4096, net, tight), "");
  EXPECT_GE(tight.scratch[1].bytes(), need(1, {tight.offset[0].has_value(), true}));
}

TEST(UbAllocator, OffChipByRuleAndScratchThatCannotFit) {
  std::vector<UbBuffer> net = {{100, 0, 1, false, 200}};
  const UbPlan plan = plan_unified_buffer(1024, 2, net, fixed(64));
  ASSERT_TRUE(plan.ok);
  EXPECT_FALSE(plan.offset[0].has_value());
  EXPECT_EQ(plan.scratch[0].bytes(), 1024u);
  const UbPlan none = plan_unified_buffer(1024, 2, net, fixed(2048));
  EXPECT_FALSE(none.ok);
  EXPECT_EQ(none.failed_step, 0);
}

TEST(UbAllocator, RandomLiveRangesNeverOverlapAndSpillWhenSmall) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const int steps = 2 + static_cast<int>(rng() % 30);
    std::vector<UbBuffer> bufs;
    for (int s = 0; s < steps; ++s) {
      const int last = std::min(steps - 1, s + static_cast<int>(rng() % 6));
      const uint64_t bytes = 64 + rng() % 20000;
      bufs.push_back({bytes, s, last, rng() % 8 != 0, bytes * (1 + rng() % 3)});
    }
    const uint64_t capacity = 4096 + rng() % 100000;
    const uint64_t scratch = 64 + rng() % 2048;
    const UbPlan plan = plan_unified_buffer(capacity, steps, bufs, fixed(scratch));
    ASSERT_TRUE(plan.ok) << trial;
    EXPECT_EQ(check_ub_plan(capacity, bufs, plan), "") << trial;
    uint64_t live_peak = 0;
    for (int s = 0; s < steps; ++s) {
      uint64_t live = 0;
      for (const auto& b : bufs)
        if (b.may_reside && b.first <= s && s <= b.last) live += (b.bytes + 63) / 64 * 64;
      live_peak = std::max(live_peak, live + (scratch + 63) / 64 * 64);
      EXPECT_GE(plan.scratch[s].bytes(), scratch) << trial << " step " << s;
    }
    if (live_peak > capacity) {
      EXPECT_GT(plan.spills, 0) << trial;
    }
    for (size_t i = 0; i < bufs.size(); ++i) {
      if (!bufs[i].may_reside) {
        EXPECT_FALSE(plan.offset[i].has_value());
      }
    }
  }
}

}  // namespace
}  // namespace npusim::lowering
