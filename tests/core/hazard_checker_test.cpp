// The hazard checker on hand-made windows: each kind of hazard is found with both instructions
// named, legal overlaps are not, and the compiled zoo programs' accesses are what the ISA says.
#include "models/hazard_checker.hpp"

#include <gtest/gtest.h>

namespace npusim {
namespace {

Instruction load(uint32_t id, uint64_t ub, uint64_t dram, uint32_t bytes) {
  Instruction i;
  i.id = id;
  i.unit = UnitKind::kDmaLoad;
  DmaOp op;
  op.buffer = BufferId::kUnified;
  op.buffer_addr = ub;
  op.dram_addr = dram;
  op.count[0] = bytes;
  i.op = op;
  return i;
}

Instruction store(uint32_t id, uint64_t ub, uint64_t dram, uint32_t bytes) {
  Instruction i = load(id, ub, dram, bytes);
  i.unit = UnitKind::kDmaStore;
  return i;
}

// out[0, n) = lut(in[0, n)) on the vector unit.
Instruction lut(uint32_t id, uint64_t in, uint64_t out, uint64_t n) {
  Instruction i;
  i.id = id;
  i.unit = UnitKind::kVector;
  LutOp op;
  op.in_ub_addr = in;
  op.out_ub_addr = out;
  op.elements = n;
  i.op = op;
  return i;
}

Program program_of(std::vector<Instruction> instrs) {
  Program p;
  p.instructions = std::move(instrs);
  return p;
}

// Each core has buffers of its own: the same unified-buffer bytes on two cores are different
// bytes, while off-chip memory is one space for the chip.
TEST(HazardChecker, CoresHaveTheirOwnBuffersAndShareOffChipMemory) {
  Instruction other_core = lut(1, 0, 64, 64);
  other_core.core = 1;
  Program p = program_of({load(0, 0, 0, 64), other_core});
  p.cores = 2;
  EXPECT_FALSE(find_hazard(p, {{0, 10}, {5, 20}}));
  // Core 1's DMA load reads the off-chip bytes core 0's store is still writing.
  Instruction reader = load(1, 0, 0, 64);
  reader.core = 1;
  p = program_of({store(0, 128, 0, 64), reader});
  p.cores = 2;
  const auto h = find_hazard(p, {{0, 10}, {5, 20}});
  ASSERT_TRUE(h);
  EXPECT_EQ(h->kind, "RAW");
  EXPECT_EQ(h->range.space, BufferId::kDram);
  EXPECT_NE(h->message.find("on core1 dma_load"), std::string::npos) << h->message;
  // The same unit kind on two cores is two units: core 1's load waits for nobody's write on core
  // 0's buffers, but its own core's store of the same buffer bytes is a WAR when it overlaps.
  Instruction writer = load(2, 0, 4096, 64);
  writer.core = 1;
  Instruction store1 = store(1, 0, 8192, 64);
  store1.core = 1;
  p = program_of({store(0, 0, 12288, 64), store1, writer});
  p.cores = 2;
  const auto war = find_hazard(p, {{0, 30}, {0, 30}, {10, 40}});
  ASSERT_TRUE(war);
  EXPECT_EQ(war->kind, "WAR");
  EXPECT_EQ(war->earlier, 1u);
}

TEST(HazardChecker, ReadBeforeTheWriteCompletedIsRaw) {
  const Program p = program_of({load(0, 0, 0, 64), lut(1, 0, 64, 64)});
  EXPECT_FALSE(find_hazard(p, {{0, 10}, {10, 20}}));  // starts when the load completed
  const auto h = find_hazard(p, {{0, 10}, {9, 20}});
  ASSERT_TRUE(h);
  EXPECT_EQ(h->kind, "RAW");
  EXPECT_EQ(h->earlier, 0u);
  EXPECT_EQ(h->later, 1u);
  EXPECT_EQ(h->range.begin, 0u);
  EXPECT_EQ(h->range.end, 64u);
  EXPECT_NE(h->message.find("instruction 1 (LUT"), std::string::npos) << h->message;
  EXPECT_NE(h->message.find("instruction 0 (DMA_LOAD"), std::string::npos) << h->message;
  EXPECT_NE(h->message.find("until cycle 10"), std::string::npos) << h->message;
}

TEST(HazardChecker, WriteBeforeAnEarlierReadEndedIsWar) {
  // The store reads ub[64, 128) until cycle 30; the load overwrites ub[96, 160) from cycle 25.
  const Program p = program_of({store(0, 64, 4096, 64), load(1, 96, 0, 64)});
  const auto h = find_hazard(p, {{0, 30}, {25, 40}});
  ASSERT_TRUE(h);
  EXPECT_EQ(h->kind, "WAR");
  EXPECT_EQ(h->range.begin, 96u);
  EXPECT_EQ(h->range.end, 128u);
  EXPECT_FALSE(find_hazard(p, {{0, 30}, {30, 40}}));
}

TEST(HazardChecker, WriteBeforeAnEarlierWriteCompletedIsWaw) {
  const Program p = program_of({lut(0, 1000, 0, 64), load(1, 32, 0, 8)});
  const auto h = find_hazard(p, {{0, 30}, {29, 40}});
  ASSERT_TRUE(h);
  EXPECT_EQ(h->kind, "WAW");
}

TEST(HazardChecker, OffChipMemoryIsCheckedToo) {
  // A store writes dram[256, 320); a load reads it back before the store completed.
  const Program p = program_of({store(0, 0, 256, 64), load(1, 512, 288, 16)});
  const auto h = find_hazard(p, {{0, 50}, {40, 60}});
  ASSERT_TRUE(h);
  EXPECT_EQ(h->kind, "RAW");
  EXPECT_EQ(h->range.space, BufferId::kDram);
  EXPECT_EQ(h->range.begin, 288u);
}

// Off-chip reads of bytes no instruction writes are not recorded (they take part in no hazard);
// a read of written bytes still is, before or after the write, and only its written part counts.
TEST(HazardChecker, OffChipReadsOfWrittenBytesAreRecordedWhereverTheWriteComes) {
  // Load 0 reads dram[0, 256) until cycle 50; store 1 writes dram[32, 64) and store 2 (another
  // queue) dram[128, 160), both from cycle 40: the write after the read is a WAR on [32, 64).
  Instruction other_queue = store(2, 512, 128, 32);
  other_queue.unit_index = 1;
  Program p = program_of({load(0, 0, 0, 256), store(1, 256, 32, 32), other_queue});
  auto h = find_hazard(p, {{0, 50}, {40, 60}, {40, 60}});
  ASSERT_TRUE(h);
  EXPECT_EQ(h->kind, "WAR");
  EXPECT_EQ(h->earlier, 0u);
  EXPECT_EQ(h->later, 1u);
  EXPECT_EQ(h->range.space, BufferId::kDram);
  EXPECT_EQ(h->range.begin, 32u);
  EXPECT_EQ(h->range.end, 64u);
  EXPECT_FALSE(find_hazard(p, {{0, 50}, {50, 60}, {50, 60}}));
  // A read across two written ranges and the bytes between them that nobody writes: the second
  // range's writer is still caught (RAW), with the overlap of the read and that write.
  p = program_of({store(0, 256, 32, 32), store(1, 512, 128, 32), load(2, 0, 0, 256)});
  p.instructions[1].unit_index = 1;
  h = find_hazard(p, {{0, 30}, {0, 60}, {40, 70}});
  ASSERT_TRUE(h);
  EXPECT_EQ(h->kind, "RAW");
  EXPECT_EQ(h->earlier, 1u);
  EXPECT_EQ(h->range.begin, 128u);
  EXPECT_EQ(h->range.end, 160u);
  EXPECT_FALSE(find_hazard(p, {{0, 30}, {0, 40}, {40, 70}}));
}

TEST(HazardChecker, SameUnitAndDisjointOrReadOnlyOverlapsAreNotHazards) {
  // Two loads on one queue (in order by contract), two readers of the same bytes, and disjoint
  // ranges may all overlap in time.
  const Program p = program_of({load(0, 0, 0, 64), load(1, 0, 64, 64), lut(2, 512, 1024, 64),
                                store(3, 512, 8192, 64), lut(4, 2048, 4096, 64)});
  EXPECT_FALSE(find_hazard(p, {{0, 10}, {1, 20}, {0, 50}, {5, 60}, {0, 70}}));
}

TEST(HazardChecker, AWriteStillGuardsWhatItCovered) {
  // load 0 writes ub[0, 64); lut 1 reads it; load 2 (same queue as 0) rewrites it after lut 1;
  // a reader of ub[0, 64) that starts before load 2 completed is caught against load 2.
  const Program p =
      program_of({load(0, 0, 0, 64), lut(1, 0, 1024, 64), load(2, 0, 64, 64), lut(3, 0, 2048, 64)});
  EXPECT_FALSE(find_hazard(p, {{0, 10}, {10, 20}, {20, 30}, {30, 40}}));
  const auto h = find_hazard(p, {{0, 10}, {10, 20}, {20, 30}, {25, 40}});
  ASSERT_TRUE(h);
  EXPECT_EQ(h->earlier, 2u);
  EXPECT_EQ(h->later, 3u);
}

TEST(HazardChecker, StridedBoxesTouchOnlyTheirRows) {
  Instruction i = load(0, 0, 1000, 16);
  auto& op = std::get<DmaOp>(i.op);
  op.count[1] = 4;
  op.dram_stride[0] = 64;  // four rows of 16 bytes, 64 apart
  const std::vector<Access> a = accesses_of(i, DataType::kInt8);
  ASSERT_EQ(a.size(), 5u);  // the buffer side, then four off-chip rows
  EXPECT_EQ(a[0].space, BufferId::kUnified);
  EXPECT_TRUE(a[0].write);
  EXPECT_EQ(a[4].begin, 1000u + 3 * 64);
  EXPECT_EQ(a[4].end, 1000u + 3 * 64 + 16);
  EXPECT_FALSE(a[4].write);
  op.dram_stride[0] = 16;  // contiguous rows merge into one run
  EXPECT_EQ(accesses_of(i, DataType::kInt8).size(), 2u);
}

// Bytes read by more units than a segment keeps in place (three): every reader still counts.
TEST(HazardChecker, ManyReadersOfTheSameBytes) {
  std::vector<Instruction> instrs;
  std::vector<Window> windows;
  for (uint32_t u = 0; u < 5; ++u) {  // five vector units read [0, 10), until cycles 50..54
    Instruction i = lut(u, 0, 100 + 16 * u, 10);
    i.unit_index = int(u);
    instrs.push_back(i);
    windows.push_back({0, 50 + u});
  }
  instrs.push_back(load(5, 0, 0, 10));  // then a load writes [0, 10)
  const Program p = program_of(instrs);
  windows.push_back({54, 60});
  EXPECT_FALSE(find_hazard(p, windows));  // every read is over
  windows.back() = {52, 60};              // the readers until 53 and 54 are not
  const auto h = find_hazard(p, windows);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->kind, "WAR");
  EXPECT_EQ(h->earlier, 3u);
  EXPECT_EQ(h->later, 5u);
}

}  // namespace
}  // namespace npusim
