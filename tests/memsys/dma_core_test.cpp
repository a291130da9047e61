// The DMA core (models/dma_core.hpp) without a SystemC kernel: rows one per cycle, bursts cut at
// the memory's burst size, the bounded window and the cycles each costs, against memories written
// here in a few lines. MemsysSoc.DmaCoreTimingEqualsTheSoc shows the SoC measures the same.
#include "models/dma_core.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <vector>

#include "models/offchip_memory.hpp"

namespace npusim {
namespace {

DmaOp box(uint64_t dram_addr, uint32_t row_bytes, uint32_t rows, uint32_t planes,
          uint64_t row_stride, uint64_t plane_stride) {
  DmaOp op;
  op.dram_addr = dram_addr;
  op.count[0] = row_bytes;
  op.count[1] = rows;
  op.count[2] = planes;
  op.dram_stride[0] = row_stride;
  op.dram_stride[1] = plane_stride;
  return op;
}

// Runs `t` from `start` against a memory that accepts every burst and completes it `latency`
// cycles after it issues, reporting completions one at a time as the SoC's memory does. Returns
// the bursts in the order they were sent.
std::vector<DmaBurst> run_fixed_latency(DmaTransfer& t, uint64_t start, uint64_t latency) {
  std::vector<DmaBurst> sent;
  std::multiset<uint64_t> due;
  auto send = [&](const DmaBurst& b) -> std::optional<uint64_t> {
    sent.push_back(b);
    due.insert(b.issue_cycle + latency);
    return std::nullopt;
  };
  t.pump(start, send);
  for (int steps = 0; !due.empty() && steps < 100000; ++steps) {
    const uint64_t c = *due.begin();
    due.erase(due.begin());
    t.completed(c);
    t.pump(c, send);
  }
  return sent;
}

// Plane-major, then row, then the row's bursts: a 100-byte row at 50 + i1 * 1000 + i2 * 10000 is
// cut at the multiples of 64; without a window each row issues in its own cycle from the start.
TEST(DmaCore, StridedBoxBecomesRowsThenBursts) {
  const DmaOp op = box(50, 100, 3, 2, 1000, 10000);
  DmaTransfer t(op, DmaParams{64, 0}, 7);
  const std::vector<DmaBurst> sent = run_fixed_latency(t, 7, 20);
  std::vector<DmaBurst> want;
  uint64_t row = 0;
  for (uint64_t i2 = 0; i2 < 2; ++i2) {
    for (uint64_t i1 = 0; i1 < 3; ++i1, ++row) {
      const uint64_t addr = 50 + i1 * 1000 + i2 * 10000;
      split_into_bursts(addr, 100, 64, [&](uint64_t off, uint64_t n) {
        want.push_back({addr + off, row * 100 + off, n, 7 + row});
      });
    }
  }
  ASSERT_EQ(sent.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(sent[i].dram_addr, want[i].dram_addr) << i;
    EXPECT_EQ(sent[i].box_offset, want[i].box_offset) << i;
    EXPECT_EQ(sent[i].bytes, want[i].bytes) << i;
    EXPECT_EQ(sent[i].issue_cycle, want[i].issue_cycle) << i;
  }
  EXPECT_TRUE(t.finished());
  EXPECT_EQ(t.bursts(), want.size());
  EXPECT_EQ(t.end_cycle(), 7 + 5 + 20);  // the last row issues at 7 + 5
  EXPECT_EQ(t.window_full_cycles(), 0u);
}

// The simple memory completes each request at once and never fills the window: three 128-byte
// rows at 64 bytes per cycle hold the bus until 2, 4 and 6; with 70 cycles of latency the last
// completes at 76 (the figure MemsysSoc.SimpleMemoryKeepsOneTransactionPerRow measures).
TEST(DmaCore, EarlyCompletionsFollowTheSimpleMemory) {
  const DmaOp op = box(100, 128, 3, 1, 1000, 0);
  DmaTransfer t(op, DmaParams{0, 1}, 0);
  BandwidthLatencyTiming memory(64.0, 70);
  t.pump(0, [&](const DmaBurst& b) -> std::optional<uint64_t> {
    return memory.access(b.issue_cycle, b.bytes);
  });
  EXPECT_TRUE(t.finished());
  EXPECT_EQ(t.bursts(), 3u);
  EXPECT_EQ(t.end_cycle(), 6u + 70u);
}

// 16 bursts of one row, 4 in flight, each done 10 cycles after it issues: four groups issued at
// 0, 10, 20, 30, so the transfer ends at 40; groups 2 to 4 each waited 10 cycles for the window.
TEST(DmaCore, WindowHoldsBurstsUntilCompletions) {
  const DmaOp op = box(0, 1024, 1, 1, 0, 0);
  DmaTransfer t(op, DmaParams{64, 4}, 0);
  const std::vector<DmaBurst> sent = run_fixed_latency(t, 0, 10);
  ASSERT_EQ(sent.size(), 16u);
  for (size_t i = 0; i < sent.size(); ++i) EXPECT_EQ(sent[i].issue_cycle, 10 * (i / 4)) << i;
  EXPECT_EQ(t.end_cycle(), 40u);
  EXPECT_EQ(t.window_full_cycles(), 30u);
}

// A full window delays the next row too: one burst in flight, 5 cycles each, three one-burst rows
// issue at 0, 5 and 10 (not 0, 1, 2) and the transfer ends at 15.
TEST(DmaCore, FullWindowShiftsTheFollowingRows) {
  const DmaOp op = box(0, 64, 3, 1, 4096, 0);
  DmaTransfer t(op, DmaParams{64, 1}, 0);
  const std::vector<DmaBurst> sent = run_fixed_latency(t, 0, 5);
  ASSERT_EQ(sent.size(), 3u);
  EXPECT_EQ(sent[1].issue_cycle, 5u);
  EXPECT_EQ(sent[2].issue_cycle, 10u);
  EXPECT_EQ(t.end_cycle(), 15u);
  EXPECT_EQ(t.window_full_cycles(), 10u);
}

// An empty box sends nothing and still takes its one cycle.
TEST(DmaCore, EmptyBoxTakesOneCycle) {
  const DmaOp op = box(0, 0, 4, 1, 64, 0);
  DmaTransfer t(op, DmaParams{64, 4}, 12);
  EXPECT_TRUE(run_fixed_latency(t, 12, 5).empty());
  EXPECT_TRUE(t.finished());
  EXPECT_EQ(t.end_cycle(), 13u);
}

// An indexed load's rows follow its ids, not their position: row i1 (40 bytes, cut at 64) comes
// from 1000 + ids[i1] * 96, one row per cycle from the start as for any box.
TEST(DmaCore, IndexedRowsFollowTheIds) {
  DmaOp op = box(1000, 40, 4, 1, 96, 0);
  op.indexed = true;
  op.index_rows = 10;
  const int32_t ids[4] = {7, 0, 7, 3};
  DmaTransfer t(op, DmaParams{64, 0}, 3, ids);
  const std::vector<DmaBurst> sent = run_fixed_latency(t, 3, 9);
  std::vector<DmaBurst> want;
  for (uint64_t i1 = 0; i1 < 4; ++i1) {
    const uint64_t addr = 1000 + uint64_t(ids[i1]) * 96;
    split_into_bursts(addr, 40, 64, [&](uint64_t off, uint64_t bytes) {
      want.push_back({addr + off, i1 * 40 + off, bytes, 3 + i1});
    });
  }
  ASSERT_EQ(sent.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(sent[i].dram_addr, want[i].dram_addr) << i;
    EXPECT_EQ(sent[i].box_offset, want[i].box_offset) << i;
    EXPECT_EQ(sent[i].bytes, want[i].bytes) << i;
    EXPECT_EQ(sent[i].issue_cycle, want[i].issue_cycle) << i;
  }
  EXPECT_EQ(t.end_cycle(), 3 + 3 + 9u);  // the last row issues at 6 and completes 9 later
}

}  // namespace
}  // namespace npusim
