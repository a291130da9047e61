// Dependency tokens derived from buffer accesses.
#include "compiler/lowering/hazards.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

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

// The tracker's index (records by length class and start address) against the definition: every
// live record of the space scanned for each access, covered records dropped as the contract says.
// Random accesses of lengths from 1 byte to 1 MiB over a few spaces, by several units, must get
// the same tokens from both.
class ScanningTracker {
 public:
  std::vector<uint32_t> add(uint32_t id, int unit, const std::vector<BufferAccess>& accesses) {
    std::map<int, uint32_t> latest;
    for (const auto& a : accesses) {
      for (const Record& r : records_[a.buffer]) {
        if (r.begin < a.end && a.begin < r.end && r.unit != unit && (r.write || a.write)) {
          latest[r.unit] = std::max(latest[r.unit], r.id);
        }
      }
    }
    for (const auto& a : accesses) {
      std::erase_if(records_[a.buffer], [&](const Record& r) {
        return a.begin <= r.begin && r.end <= a.end && (a.write || (!r.write && r.unit == unit));
      });
      records_[a.buffer].push_back({a.begin, a.end, id, unit, a.write});
    }
    std::vector<uint32_t> deps;
    for (const auto& [u, dep] : latest) deps.push_back(dep);
    std::sort(deps.begin(), deps.end());
    return deps;
  }

 private:
  struct Record {
    uint64_t begin, end;
    uint32_t id;
    int unit;
    bool write;
  };
  std::map<BufferId, std::vector<Record>> records_;
};

TEST(Hazards, IndexedRecordsGiveTheTokensOfAFullScan) {
  std::mt19937_64 rng(22);
  const BufferId spaces[] = {UB, BufferId::kWeight, BufferId::kDram};
  HazardTracker indexed;
  ScanningTracker scanning;
  size_t tokens = 0;
  for (uint32_t id = 0; id < 4000; ++id) {
    const int unit = int(rng() % 4);
    std::vector<BufferAccess> accesses;
    for (size_t n = 1 + rng() % 2; n > 0; --n) {
      // Lengths of every class up to 1 MiB, starts that often coincide (tiles reused).
      const uint64_t length = 1 + (rng() % (uint64_t(1) << (rng() % 21)));
      const uint64_t begin = (rng() % 64) * ((uint64_t(1) << (rng() % 16)));
      accesses.push_back({spaces[rng() % 3], begin, begin + length, rng() % 3 == 0});
    }
    const std::vector<uint32_t> expected = scanning.add(id, unit, accesses);
    ASSERT_EQ(indexed.add(id, unit, accesses), expected) << "instruction " << id;
    tokens += expected.size();
  }
  EXPECT_GT(tokens, 2000u) << "the accesses conflict often enough to test something";
}

}  // namespace
}  // namespace npusim
