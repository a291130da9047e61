// Dependency tokens derived from buffer accesses.
#include "compiler/lowering/hazards.hpp"

#include <gtest/gtest.h>

namespace npusim {
namespace {

constexpr int kDma = 0, kMxu = 1, kVpu = 2;
const auto UB = BufferId::kUnified;

TEST(Hazards, ReadAfterWriteWaitsForTheWriter) {
  HazardTracker h;
  EXPECT_TRUE(h.add(0, kDma, {{UB, 0, 100, true}}).empty());
  EXPECT_EQ(h.add(1, kMxu, {{UB, 50, 60, false}}), std::vector<uint32_t>{0});
  EXPECT_TRUE(h.add(2, kMxu, {{UB, 100, 200, false}}).empty()) << "no overlap, no token";
}

TEST(Hazards, WriteAfterReadWaitsForTheLatestReaderOfEachUnit) {
  HazardTracker h;
  h.add(0, kDma, {{UB, 0, 100, true}});
  h.add(1, kMxu, {{UB, 0, 100, false}});
  h.add(2, kMxu, {{UB, 0, 100, false}});
  h.add(3, kVpu, {{UB, 0, 10, false}});
  EXPECT_EQ(h.add(4, kDma, {{UB, 0, 100, true}}), (std::vector<uint32_t>{2, 3}));
  // The write covered everything: a later reader waits only for it.
  EXPECT_EQ(h.add(5, kVpu, {{UB, 0, 100, false}}), std::vector<uint32_t>{4});
}

TEST(Hazards, SameUnitNeedsNoToken) {
  HazardTracker h;
  h.add(0, kMxu, {{BufferId::kAccumulator, 0, 64, true}});
  EXPECT_TRUE(h.add(1, kMxu, {{BufferId::kAccumulator, 0, 64, true}}).empty());
  EXPECT_EQ(h.add(2, kVpu, {{BufferId::kAccumulator, 0, 64, false}}), std::vector<uint32_t>{1});
}

TEST(Hazards, BuffersAreIndependent) {
  HazardTracker h;
  h.add(0, kDma, {{BufferId::kWeight, 0, 64, true}});
  EXPECT_TRUE(h.add(1, kMxu, {{UB, 0, 64, false}}).empty());
  EXPECT_EQ(h.add(2, kMxu, {{BufferId::kWeight, 0, 1, false}}), std::vector<uint32_t>{0});
}

}  // namespace
}  // namespace npusim
