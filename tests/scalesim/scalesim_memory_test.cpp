// SCALE-Sim's memory models on hand-derived request streams (docs/scalesim.md, "Memory models").
#include "compat/scalesim/scalesim_memory.hpp"

#include <gtest/gtest.h>

namespace npusim::scalesim {
namespace {

TEST(ScalesimMemory, CalcEstimatorFitsInOneEpoch) {
  // 1 kB: sets of floor(1024/100) = 10 words, epochs of 50 sets = 500 words. 336 distinct words
  // are 34 sets, fetched before cycle 0 at 10 words/cycle: cycles -34..-1.
  CalcReadEstimator est(1024, 0, 1000);
  for (int64_t i = 0; i < 336; ++i) est.request(i, i / 8);
  for (int64_t i = 0; i < 336; ++i) est.request(i, 100 + i / 8);  // all hits
  const DramActivity d = est.finish();
  EXPECT_EQ(d.accesses, 336);
  EXPECT_EQ(d.start_cycle, -34);
  EXPECT_EQ(d.stop_cycle, -1);
}

TEST(ScalesimMemory, CalcEstimatorEpochsAndTheirWindows) {
  // 1200 distinct words, 4 per cycle from cycle 5: epoch 0 completes with word 499 in cycle
  // 5 + 124 = 129, epoch 1 with word 999 in cycle 254; 200 words remain. The first epoch is
  // fetched in the 50 cycles before the first request (-45..4); the DRAM traffic ends one cycle
  // after the last completed epoch (255).
  CalcReadEstimator est(1024, 0, 2000);
  for (int64_t i = 0; i < 1200; ++i) est.request(i, 5 + i / 4);
  const DramActivity d = est.finish();
  EXPECT_EQ(d.accesses, 1200);
  EXPECT_EQ(d.start_cycle, 5 - 50);
  EXPECT_EQ(d.stop_cycle, 255);
}

TEST(ScalesimMemory, CalcEstimatorReReadsAfterAnEpoch) {
  // Two passes over 600 words: the first epoch takes words 0..499; the second starts with
  // 500..599 and then sees 0..399 again as new (it completes on word 399), the third holds
  // 400..599. DRAM reads = 500 + 500 + 200.
  CalcReadEstimator est(1024, 0, 600);
  int64_t cycle = 0;
  for (int pass = 0; pass < 2; ++pass)
    for (int64_t i = 0; i < 600; ++i) est.request(i, cycle++);
  EXPECT_EQ(est.finish().accesses, 1200);
}

TEST(ScalesimMemory, CalcEstimatorSurvivesEpochNumberWrapAround) {
  // More than 65535 epochs (the stamps are 16 bits): 70000 epochs of 500 words over a domain of
  // 1000 words requested round robin - every request is new, so reads = requests.
  CalcReadEstimator est(1024, 0, 1000);
  const int64_t requests = 70000LL * 500 + 123;
  for (int64_t i = 0; i < requests; ++i) est.request(i % 1000, i / 64);
  EXPECT_EQ(est.completions(), 70000);
  EXPECT_EQ(est.finish().accesses, requests);
}

TEST(ScalesimMemory, CalcEstimatorCountedRowsMatchAddresses) {
  // request_new_rows on rows of 7 new requests = request() on 7 distinct addresses per row.
  CalcReadEstimator a(2048, 0, 100000), b(2048, 0, 0);
  int64_t next = 0;
  for (int64_t row = 0; row < 3000; ++row)
    for (int j = 0; j < 7; ++j) a.request(next++, 10 + row);
  b.request_new_rows(7, 1000, 10);
  b.request_new_rows(7, 2000, 1010);
  const DramActivity da = a.finish(), db = b.finish();
  EXPECT_EQ(da.accesses, db.accesses);
  EXPECT_EQ(da.start_cycle, db.start_cycle);
  EXPECT_EQ(da.stop_cycle, db.stop_cycle);
  EXPECT_EQ(a.completions(), b.completions());
}

TEST(ScalesimMemory, WriteBufferDrainsHalfWhenMoreThanHalfFull) {
  // 1024 words, drain half 512, bandwidth 8: one row of 8 words per cycle. The 513th word
  // (first of row 64, cycle 64) closes a line holding just itself and starts a drain of the 64
  // full lines (512 words) in cycles 64..127; no stall (8 words/cycle in, 8 out). At the end
  // (cycle 200, 800 words written) 37 lines are left: the 1-word line, 35 full ones and a last
  // 7-word line, drained in cycles 200..236. SCALE-Sim counts the 7 padding slots of the 1-word
  // line as data (only the last drained line's padding is discounted): 512 + 37*8 - 1 = 807.
  WriteBuffer wb(1024, 8);
  for (int64_t row = 0; row < 100; ++row) EXPECT_EQ(wb.service_row(row, 8), row);
  wb.finish(200);
  EXPECT_EQ(wb.dram().accesses, 807);
  EXPECT_EQ(wb.dram().start_cycle, 64);
  EXPECT_EQ(wb.dram().stop_cycle, 236);
}

TEST(ScalesimMemory, WriteBufferStallsWhenFullDuringDrain) {
  // 1024 words, bandwidth 1: the 513th word starts a drain of 512 lines (cycles 1..512) and
  // frees 512 words at once. 512 words per row then fill the buffer in row 2 while the drain
  // still runs: that row waits for the drain's end (cycle 512).
  WriteBuffer wb(1024, 1);
  EXPECT_EQ(wb.service_row(0, 512), 0);
  EXPECT_EQ(wb.service_row(1, 1), 1);  // 513 words: drain 1..512 starts
  EXPECT_EQ(wb.service_row(2, 511), 2);
  EXPECT_EQ(wb.service_row(3, 512), 512);  // full at the 512th word of this row
}

}  // namespace
}  // namespace npusim::scalesim
