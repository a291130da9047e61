// The indexed DMA (an embedding lookup, docs/isa.md "Indexed DMA") on the SoC with the
// command-level DRAM: the queue reads the ids off chip, then one table row per id at the address
// the id selects. Cycles are derived from the memory preset's own timing fields and the
// clock-crossing rule of models/dram_memory.hpp. Each test elaborates one design (its own process
// under ctest).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <variant>
#include <vector>

#include "arch/hw_config.hpp"
#include "arch/program.hpp"
#include "models/dma_core.hpp"
#include "models/dram/memory_system.hpp"
#include "models/dram_memory.hpp"
#include "models/soc.hpp"
#include "support/json_reader.hpp"
#include "tests/memsys/soc_run.hpp"

namespace npusim {
namespace {

// An 8x8 array at 700 MHz, one HBM2 channel (open pages, column bits lowest).
HwConfig small_chip() {
  const std::string text = R"({"schema_version": 1, "clock_mhz": 700,
    "matrix_unit": {"rows": 8, "cols": 8},
    "buffers": {"unified_buffer": {"capacity_bytes": 65536, "banks": 4},
                "weight_buffer": {"capacity_bytes": 4096, "banks": 1},
                "accumulators": {"capacity_bytes": 65536, "banks": 1}},
    "memory": {"model": "dram", "preset": "hbm2", "channels": 1, "max_outstanding_bursts": 64,
               "capacity_bytes": 1048576}})";
  return parse_hw_config(parse_json_text(text, "small.json"), "small.json");
}

constexpr uint64_t kIds = 0;       // the ids, at the start of DRAM row 0
constexpr uint64_t kTable = 4096;  // the table: rows of kRowBytes, kStride apart
constexpr uint32_t kRowBytes = 48;
constexpr uint64_t kStride = 64;
constexpr uint32_t kVocab = 200;

uint8_t table_byte(uint64_t addr) { return uint8_t(addr * 13 + 5); }

// A program of one indexed load of `ids.size()` rows into the unified buffer at 0; the DRAM image
// holds the ids and a table whose bytes are table_byte(address).
Program lookup_program(const std::vector<int32_t>& ids) {
  Instruction i;
  i.unit = UnitKind::kDmaLoad;
  DmaOp op;
  op.indexed = true;
  op.index_addr = kIds;
  op.index_rows = kVocab;
  op.dram_addr = kTable;
  op.dram_stride[0] = kStride;
  op.count[0] = kRowBytes;
  op.count[1] = uint32_t(ids.size());
  i.op = op;
  Program p;
  p.network = "lookup";
  p.instructions.push_back(i);
  LayerRecord layer;
  layer.name = "embedding";
  layer.op = "test";
  layer.end_instruction = 1;
  p.layers.push_back(layer);
  p.dram_bytes = 1 << 20;
  DramSegment seg;
  seg.addr = 0;
  seg.bytes.resize(kTable + kVocab * kStride);
  std::memcpy(seg.bytes.data() + kIds, ids.data(), ids.size() * 4);
  for (uint64_t a = kTable; a < seg.bytes.size(); ++a) seg.bytes[a] = table_byte(a);
  p.dram_init.push_back(seg);
  return p;
}

DramMemory& dram_of(Soc& soc) { return dynamic_cast<DramMemory&>(*soc.memory); }

// Its cycles: the ids (one 64-byte burst into an idle memory at core cycle 0) open DRAM row 0 and
// arrive at core cycle c1 = seen(a + fe + tRCD + tCL + burst); the queue then issues the table row
// (kTable + 2 * 64: another bank, idle) at c1, done at seen(entry(c1) + fe + tRCD + tCL + burst).
uint64_t one_id_end_cycle(const HwConfig& hw, const ClockCrossing& x) {
  const dram::MemoryConfig& cfg = *hw.memory.dram;
  const uint64_t open_read = uint64_t(cfg.controller.frontend_latency_cycles) +
                             uint64_t(cfg.timing.rcd_read) + uint64_t(cfg.timing.read_latency());
  const uint64_t c1 = x.seen_core_cycle(x.entry_memory_cycle(0) + open_read);
  return x.seen_core_cycle(x.entry_memory_cycle(c1) + open_read);
}

TEST(IndexedDma, OneIdReadsItsRowAfterTheIds) {
  const HwConfig hw = small_chip();
  const Program p = lookup_program({2});
  Soc soc("soc", hw, p, systolic::Fidelity::kFast);
  run(soc);
  EXPECT_EQ(soc.scoreboard.timings()[0].start_cycle, 0u);
  EXPECT_EQ(soc.scoreboard.timings()[0].end_cycle, one_id_end_cycle(hw, dram_of(soc).crossing()));
  EXPECT_EQ(soc.dma_load.bursts(), 2u);
  EXPECT_EQ(dram_of(soc).bytes_read(), 4u + kRowBytes);
  const uint8_t* ub = soc.buffers.bytes(BufferId::kUnified, 0, kRowBytes, 0);
  for (uint64_t j = 0; j < kRowBytes; ++j) EXPECT_EQ(ub[j], table_byte(kTable + 2 * kStride + j));
}

// Timing only (values off): the memory moves no byte, but the queue still learns the ids (written
// into the image, as the run driver does) and reads the same row at the same cycles.
TEST(IndexedDma, ValuesOffKeepsTheTiming) {
  const HwConfig hw = small_chip();
  const Program p = lookup_program({2});
  Soc soc("soc", hw, p, systolic::Fidelity::kFast, /*compute_values=*/false);
  const int32_t id = 2;
  std::memcpy(soc.memory_contents().data() + kIds, &id, 4);
  run(soc);
  EXPECT_EQ(soc.scoreboard.timings()[0].end_cycle, one_id_end_cycle(hw, dram_of(soc).crossing()));
  EXPECT_EQ(dram_of(soc).bytes_read(), 4u + kRowBytes);
}

// Many ids, repeated and out of order: every row lands in id order, packed; the memory served one
// burst for the ids (64 bytes) and one per row (48 bytes inside a 64-byte burst).
TEST(IndexedDma, RowsLandInIdOrder) {
  const HwConfig hw = small_chip();
  const std::vector<int32_t> ids = {199, 0, 5, 5, 120, 3, 77, 0, 31, 64, 64, 1, 150, 9, 2, 199};
  const Program p = lookup_program(ids);
  Soc soc("soc", hw, p, systolic::Fidelity::kFast);
  run(soc);
  const uint8_t* ub = soc.buffers.bytes(BufferId::kUnified, 0, ids.size() * kRowBytes, 0);
  for (size_t i = 0; i < ids.size(); ++i) {
    for (uint64_t j = 0; j < kRowBytes; ++j) {
      ASSERT_EQ(ub[i * kRowBytes + j], table_byte(kTable + uint64_t(ids[i]) * kStride + j))
          << "row " << i;
    }
  }
  EXPECT_EQ(soc.dma_load.bursts(), 1 + ids.size());
  EXPECT_EQ(dram_of(soc).memory().stats().reads, 1 + ids.size());
  EXPECT_EQ(dram_of(soc).bytes_read(), ids.size() * (4 + kRowBytes));
}

// An id outside [0, index_rows) is a broken invariant (the run driver checks the user's ids
// first): the queue stops with a message naming the id and its position.
TEST(IndexedDma, IdOutsideTheTableIsCaught) {
  const HwConfig hw = small_chip();
  const Program p = lookup_program({4, int32_t(kVocab)});
  Soc soc("soc", hw, p, systolic::Fidelity::kFast);
  sc_core::sc_start();
  auto failure = ExecutionUnit::failure();
  ASSERT_TRUE(failure);
  try {
    std::rethrow_exception(failure);
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("id 200 (position 1) outside [0, 200)"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace npusim
