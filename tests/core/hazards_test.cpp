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

// Tensor parallelism's gather: two cores each store a slice of one off-chip tensor; a load of the
// whole tensor on either core waits for both stores (the token crosses cores), while the cores'
// on-chip buffers are spaces of their own (the same unified-buffer bytes on two cores never
// conflict).
TEST(Hazards, OffChipIsSharedByTheCoresAndTheirBuffersAreNot) {
  HazardTracker h;
  const int store = 3, per_core = 4096;
  const auto DRAM = BufferId::kDram;
  EXPECT_TRUE(h.add(0, kVpu, {{UB, 0, 64, true}}, 0).empty());
  EXPECT_TRUE(h.add(1, kVpu + per_core, {{UB, 0, 64, true}}, 1).empty()) << "core 1's own buffer";
  EXPECT_EQ(h.add(2, store, {{UB, 0, 64, false}, {DRAM, 0, 64, true}}, 0),
            std::vector<uint32_t>{0});
  EXPECT_EQ(h.add(3, store + per_core, {{UB, 0, 64, false}, {DRAM, 64, 128, true}}, 1),
            std::vector<uint32_t>{1});
  EXPECT_EQ(h.add(4, kDma + per_core, {{DRAM, 0, 128, false}, {UB, 256, 384, true}}, 1),
            (std::vector<uint32_t>{2, 3}));
  EXPECT_EQ(h.add(5, kDma, {{DRAM, 0, 128, false}, {UB, 256, 384, true}}, 0),
            (std::vector<uint32_t>{2, 3}));
}

// A core-to-core COPY (layers placed on cores, docs/multicore.md) reads the source core's buffer
// and writes the destination core's: its accesses name their cores. The copy waits for the
// source's writer on core 0 and the destination range's last reader on core 1; a reader on core 1
// waits for the copy, a reader of the same bytes on core 0 only for their writer.
TEST(Hazards, ACopyTouchesTwoCoresBuffers) {
  HazardTracker h;
  const int per_core = 4096, link = 6 * 256;
  EXPECT_TRUE(h.add(0, kVpu, {{UB, 0, 64, true}}, 0).empty());
  EXPECT_TRUE(h.add(1, kMxu + per_core, {{UB, 0, 64, false}}, 1).empty());
  EXPECT_EQ(h.add(2, link, {{UB, 0, 64, false, 0}, {UB, 0, 64, true, 1}}, 0),
            (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(h.add(3, kVpu + per_core, {{UB, 0, 64, false}}, 1), std::vector<uint32_t>{2});
  EXPECT_EQ(h.add(4, kMxu, {{UB, 0, 64, false}}, 0), std::vector<uint32_t>{0})
      << "core 0's reader waits for the writer, not for the copy";
  EXPECT_EQ(h.add(5, kVpu, {{UB, 0, 64, true}}, 0), (std::vector<uint32_t>{2, 4}))
      << "overwriting the source waits for the copy that reads it";
}

}  // namespace
}  // namespace npusim
