// The SoC with the command-level DRAM: small hand-built programs whose cycles are derived from the
// memory preset's own timing fields and the clock-crossing rule of models/dram_memory.hpp. Each
// test elaborates one design (its own process under ctest).
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <optional>
#include <string>
#include <utility>
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

// A small chip: an 8x8 array at 700 MHz (a core period that is not a multiple of the memory's
// 1 ns), 64 KiB unified buffer in `ub_banks` banks, one HBM2 channel.
HwConfig small_chip(int ub_banks, int max_outstanding) {
  const std::string text = R"({"schema_version": 1, "clock_mhz": 700,
    "matrix_unit": {"rows": 8, "cols": 8},
    "buffers": {"unified_buffer": {"capacity_bytes": 65536, "banks": )" +
                           std::to_string(ub_banks) + R"(},
                "weight_buffer": {"capacity_bytes": 4096, "banks": 1},
                "accumulators": {"capacity_bytes": 65536, "banks": 1}},
    "memory": {"model": "dram", "preset": "hbm2", "channels": 1, "max_outstanding_bursts": )" +
                           std::to_string(max_outstanding) + R"(, "capacity_bytes": 1048576}})";
  return parse_hw_config(parse_json_text(text, "small.json"), "small.json");
}

DramMemory& dram_of(Soc& soc) { return dynamic_cast<DramMemory&>(*soc.memory); }

Instruction load(uint32_t id, BufferId buffer, uint64_t buffer_addr, uint64_t dram_addr,
                 uint32_t bytes, std::vector<uint32_t> deps = {}) {
  Instruction i;
  i.id = id;
  i.unit = UnitKind::kDmaLoad;
  i.deps = std::move(deps);
  DmaOp op;
  op.buffer = buffer;
  op.buffer_addr = buffer_addr;
  op.dram_addr = dram_addr;
  op.count[0] = bytes;
  i.op = op;
  return i;
}

// acc = A (m x 8, at ub_addr) x W (8 x 8 at weight buffer 0): a dense tile of m rows.
Instruction matmul(uint32_t id, uint64_t ub_addr, int m, std::vector<uint32_t> deps) {
  Instruction i;
  i.id = id;
  i.unit = UnitKind::kMatrix;
  i.deps = std::move(deps);
  MatmulOp op;
  op.a.ub_addr = ub_addr;
  op.a.slab_w = m;
  op.a.slab_c = 8;
  op.a.out_w = m;
  op.a.window_c = 8;
  op.w_ld = 8;
  op.acc_ld = 8;
  op.m = m;
  op.k = 8;
  op.n = 8;
  i.op = op;
  return i;
}

Program program_of(std::vector<Instruction> instructions) {
  Program p;
  p.network = "memsys";
  p.instructions = std::move(instructions);
  LayerRecord layer;
  layer.name = "layer";
  layer.op = "test";
  layer.end_instruction = uint32_t(p.instructions.size());
  p.layers.push_back(layer);
  p.dram_bytes = 1 << 20;
  DramSegment seg;
  seg.addr = 0;
  for (int i = 0; i < 65536; ++i) seg.bytes.push_back(uint8_t(i * 7 + 3));
  p.dram_init.push_back(seg);
  return p;
}

// One 64-byte burst into an idle memory. Issued at core cycle 0, it enters at memory cycle
// a = floor(0 * Pc / Pm) + 1; the controller sees it fe cycles later, opens the row (tRCD) and
// reads (tCL + BL/2): done at e = a + fe + tRCD + tCL + burst; the DMA sees it at ceil(e*Pm/Pc).
TEST(MemsysSoc, SingleBurstLoadTimingFollowsThePreset) {
  const HwConfig hw = small_chip(4, 64);
  Program p = program_of({load(0, BufferId::kUnified, 0, 128, 64)});
  Soc soc("soc", hw, p, systolic::Fidelity::kFast);
  run(soc);
  const dram::MemoryConfig& cfg = *hw.memory.dram;
  const ClockCrossing& x = dram_of(soc).crossing();
  const uint64_t a = x.entry_memory_cycle(0);
  const uint64_t e = a + uint64_t(cfg.controller.frontend_latency_cycles) +
                     uint64_t(cfg.timing.rcd_read) + uint64_t(cfg.timing.read_latency());
  EXPECT_EQ(soc.scoreboard.timings()[0].start_cycle, 0u);
  EXPECT_EQ(soc.scoreboard.timings()[0].end_cycle, x.seen_core_cycle(e));
  EXPECT_EQ(soc.dma_load.bursts(), 1u);
  for (int i = 0; i < 64; ++i) {
    EXPECT_EQ(soc.buffers.bytes(BufferId::kUnified, 0, 64, 0)[i], p.dram_init[0].bytes[128 + i]);
  }
}

// A 3-D box (2 planes of 3 rows of 100 bytes, rows 1000 bytes apart, planes 8192 apart, starting
// mid-burst) lands contiguously in the buffer; each row is cut at the 64-byte burst boundaries.
TEST(MemsysSoc, StridedBoxLandsContiguouslyInBursts) {
  const HwConfig hw = small_chip(4, 8);
  Instruction i = load(0, BufferId::kUnified, 256, 30, 100);
  auto& op = std::get<DmaOp>(i.op);
  op.count[1] = 3;
  op.count[2] = 2;
  op.dram_stride[0] = 1000;
  op.dram_stride[1] = 8192;
  Program p = program_of({i});
  Soc soc("soc", hw, p, systolic::Fidelity::kFast);
  run(soc);
  const uint64_t burst = uint64_t(hw.memory.dram->org.access_bytes());
  uint64_t bursts = 0;
  const uint8_t* ub = soc.buffers.bytes(BufferId::kUnified, 256, 600, 0);
  for (uint64_t i2 = 0; i2 < 2; ++i2) {
    for (uint64_t i1 = 0; i1 < 3; ++i1) {
      const uint64_t addr = 30 + i2 * 8192 + i1 * 1000;
      split_into_bursts(addr, 100, burst, [&](uint64_t, uint64_t) { ++bursts; });
      for (uint64_t j = 0; j < 100; ++j) {
        ASSERT_EQ(ub[(i2 * 3 + i1) * 100 + j], p.dram_init[0].bytes[addr + j]) << i2 << " " << i1;
      }
    }
  }
  EXPECT_EQ(soc.dma_load.bursts(), bursts);
  EXPECT_EQ(dram_of(soc).memory().stats().reads, bursts);
  EXPECT_EQ(dram_of(soc).bytes_read(), 600u);
}

// Two load queues (unit_index 0 and 1) move 8 KiB each at the same time; with one burst in
// flight per queue, each is bound by its own round trips, so together they take about as long as
// one alone (not twice), and each queue's data lands where it should.
TEST(MemsysSoc, TwoLoadQueuesRunConcurrently) {
  const HwConfig hw = small_chip(4, 1);
  Instruction a = load(0, BufferId::kUnified, 0, 0, 8192);
  Instruction b = load(1, BufferId::kUnified, 16384, 32768, 8192);
  b.unit_index = 1;
  Program p = program_of({a, b});
  Soc soc("soc", hw, p, systolic::Fidelity::kFast);
  run(soc);
  ASSERT_EQ(soc.load_queues.size(), 2u);
  EXPECT_EQ(soc.load_queues[0]->bursts(), 128u);
  EXPECT_EQ(soc.load_queues[1]->bursts(), 128u);
  const auto& tm = soc.scoreboard.timings();
  EXPECT_EQ(tm[0].start_cycle, 0u);
  EXPECT_EQ(tm[1].start_cycle, 0u);
  const uint64_t longest = std::max(tm[0].end_cycle, tm[1].end_cycle);
  const uint64_t shortest = std::min(tm[0].end_cycle, tm[1].end_cycle);
  EXPECT_LT(longest, shortest + shortest / 2) << "the queues did not overlap";
  const uint8_t* ub = soc.buffers.bytes(BufferId::kUnified, 0, 65536, 0);
  for (int i = 0; i < 8192; ++i) {
    ASSERT_EQ(ub[i], p.dram_init[0].bytes[size_t(i)]);
    ASSERT_EQ(ub[16384 + i], p.dram_init[0].bytes[size_t(32768 + i)]);
  }
}

// Simultaneous requests enter by initiator: load queue 0 before load queue 1. Both read the same
// closed row at core cycle 0: queue 0's burst opens it and reads first; queue 1's reads one
// read-to-read delay (same bank group: tCCD_L, at least the burst) later.
TEST(MemsysSoc, SimultaneousRequestsEnterInQueueOrder) {
  const HwConfig hw = small_chip(4, 8);
  Instruction a = load(0, BufferId::kUnified, 0, 0, 64);
  Instruction b = load(1, BufferId::kUnified, 64, 64, 64);
  b.unit_index = 1;
  Program p = program_of({a, b});
  Soc soc("soc", hw, p, systolic::Fidelity::kFast);
  run(soc);
  const dram::MemoryConfig& cfg = *hw.memory.dram;
  const ClockCrossing& x = dram_of(soc).crossing();
  const uint64_t first = x.entry_memory_cycle(0) +
                         uint64_t(cfg.controller.frontend_latency_cycles) +
                         uint64_t(cfg.timing.rcd_read) + uint64_t(cfg.timing.read_latency());
  const uint64_t second = first + uint64_t(cfg.timing.read_to_read_l());
  EXPECT_EQ(soc.scoreboard.timings()[0].end_cycle, x.seen_core_cycle(first));
  EXPECT_EQ(soc.scoreboard.timings()[1].end_cycle, x.seen_core_cycle(second));
}

// The simple memory keeps its rule: one transaction per row, row i issued at cycle i, each holding
// the bus for bytes / bytes_per_cycle. 700 MHz and 44.8 GB/s give 64 bytes per cycle, 100 ns gives
// ceil(70) = 70 cycles of latency. Three 128-byte rows: the bus is busy until 2, 4, 6, so the last
// completes at 6 + 70.
TEST(MemsysSoc, SimpleMemoryKeepsOneTransactionPerRow) {
  const std::string text = R"({"schema_version": 1, "clock_mhz": 700,
    "matrix_unit": {"rows": 8, "cols": 8},
    "buffers": {"unified_buffer": {"capacity_bytes": 65536, "banks": 4},
                "weight_buffer": {"capacity_bytes": 4096, "banks": 1},
                "accumulators": {"capacity_bytes": 65536, "banks": 1}},
    "memory": {"model": "simple", "bandwidth_gbps": 44.8, "latency_ns": 100}})";
  const HwConfig hw = parse_hw_config(parse_json_text(text, "simple.json"), "simple.json");
  ASSERT_DOUBLE_EQ(hw.memory_bytes_per_cycle(), 64.0);
  ASSERT_EQ(hw.memory_latency_cycles(), 70u);
  Instruction i = load(0, BufferId::kUnified, 0, 100, 128);
  std::get<DmaOp>(i.op).count[1] = 3;
  std::get<DmaOp>(i.op).dram_stride[0] = 1000;
  Program p = program_of({i});
  Soc soc("soc", hw, p, systolic::Fidelity::kFast);
  run(soc);
  EXPECT_EQ(soc.dma_load.bursts(), 3u);
  EXPECT_EQ(soc.scoreboard.timings()[0].end_cycle, 6u + 70u);
  EXPECT_EQ(dynamic_cast<DramMemory*>(soc.memory.get()), nullptr);
}

// A 4 KiB row with one burst in flight: each burst issues in the core cycle the previous one is
// seen complete. Bursts 0 and 32 open a row (hbm2 rows hold 2 KiB: burst 32 is in the next bank,
// nothing else open there); the others hit the open row. Per burst, from issue cycle t:
// e = entry(t) + fe + [tRCD if it opens a row] + tCL + BL/2, and the next issues at seen(e).
TEST(MemsysSoc, OutstandingWindowOfOneSerializesBursts) {
  const HwConfig hw = small_chip(4, 1);
  Program p = program_of({load(0, BufferId::kUnified, 0, 0, 4096)});
  Soc soc("soc", hw, p, systolic::Fidelity::kFast);
  run(soc);
  const dram::MemoryConfig& cfg = *hw.memory.dram;
  const ClockCrossing& x = dram_of(soc).crossing();
  const uint64_t bursts_per_row = uint64_t(cfg.org.row_bytes() / cfg.org.access_bytes());
  uint64_t t = 0;
  for (uint64_t b = 0; b < 4096 / uint64_t(cfg.org.access_bytes()); ++b) {
    const uint64_t opens = b % bursts_per_row == 0 ? uint64_t(cfg.timing.rcd_read) : 0;
    t = x.seen_core_cycle(x.entry_memory_cycle(t) +
                          uint64_t(cfg.controller.frontend_latency_cycles) + opens +
                          uint64_t(cfg.timing.read_latency()));
  }
  EXPECT_EQ(soc.scoreboard.timings()[0].end_cycle, t);
  EXPECT_EQ(soc.dma_load.bursts(), 64u);
  EXPECT_GT(soc.dma_load.window_full_cycles(), 0u);
}

// The DMA core alone (models/dma_core.hpp) gives the cycles the SoC measures: a loop of plain C++
// around the DRAM model that follows DramMemory's rule (a burst issued at core cycle c enters at
// entry(c), after the completions seen at c have been handed back one by one; a completion at
// memory cycle e is seen at seen(e)) drives a 2 x 4 x 600-byte strided box with 8 bursts in flight.
TEST(MemsysSoc, DmaCoreTimingEqualsTheSoc) {
  const HwConfig hw = small_chip(4, 8);
  Instruction i = load(0, BufferId::kUnified, 256, 40, 600);
  DmaOp& op = std::get<DmaOp>(i.op);
  op.count[1] = 4;
  op.count[2] = 2;
  op.dram_stride[0] = 3000;
  op.dram_stride[1] = 20000;
  Program p = program_of({i});
  Soc soc("soc", hw, p, systolic::Fidelity::kFast);
  run(soc);
  const dram::MemoryConfig& cfg = *hw.memory.dram;
  const ClockCrossing& x = dram_of(soc).crossing();

  std::vector<uint64_t> done;  // memory cycles of the completions not yet handed back
  dram::MemorySystem memory(cfg, [&](uint64_t, uint64_t e) { done.push_back(e); });
  DmaTransfer t(op, DmaParams{uint64_t(cfg.org.access_bytes()), 8}, 0);
  std::deque<DmaBurst> sent;  // issued, not yet in the memory
  auto send = [&](const DmaBurst& b) -> std::optional<uint64_t> {
    sent.push_back(b);
    return std::nullopt;
  };
  t.pump(0, send);
  uint64_t id = 0, completion_cycles = 0;
  for (uint64_t c = 0, steps = 0; !t.finished(); ++steps) {
    ASSERT_LT(steps, 100000u);
    if (x.entry_memory_cycle(c) > memory.now()) memory.advance_to(x.entry_memory_cycle(c));
    if (!done.empty()) ++completion_cycles;
    for (const uint64_t e : std::exchange(done, {})) {
      ASSERT_EQ(x.seen_core_cycle(e), c);
      t.completed(c);
      t.pump(c, send);
    }
    for (; !sent.empty() && sent.front().issue_cycle == c; sent.pop_front()) {
      ASSERT_TRUE(memory.will_accept(sent.front().dram_addr, false));
      memory.add_request(sent.front().dram_addr, false, id++);
    }
    uint64_t next = sent.empty() ? dram::kNever : sent.front().issue_cycle;
    ASSERT_GT(next, c);
    if (memory.outstanding() > 0) {
      next = std::min(next, std::max(c + 1, x.seen_core_cycle(memory.next_event_cycle())));
    }
    if (t.finished()) break;
    ASSERT_NE(next, dram::kNever);
    c = next;
  }
  // Early responses (models/early_response.hpp): the memory's process woke fewer times than
  // there were cycles with completions, and the cycles are the loop's all the same.
  EXPECT_LT(dram_of(soc).wake_ups(), completion_cycles);
  EXPECT_EQ(t.bursts(), soc.dma_load.bursts());
  EXPECT_GT(t.window_full_cycles(), 0u);
  EXPECT_EQ(t.window_full_cycles(), soc.dma_load.window_full_cycles());
  EXPECT_EQ(soc.dma_load.bank_conflict_cycles(), 0u);
  EXPECT_EQ(t.end_cycle(), soc.scoreboard.timings()[0].end_cycle);
}

// Tile 0 (A0 at UB 0, bank 0) computes while the DMA loads tile 1's 8 KiB: into bank 1 (the
// double-buffered layout) or into bank 0, which tile 0 is reading.
struct TwoTiles {
  uint64_t a1_addr;
  int banks;
};

void two_tiles(const TwoTiles& t, bool expect_conflicts) {
  const HwConfig hw = small_chip(t.banks, 64);
  const int m = 1024;  // 1024 x 8 bytes = 8 KiB per A tile; the tile computes for > m cycles
  Program p = program_of({
      load(0, BufferId::kUnified, 0, 0, 8192),              // A0
      load(1, BufferId::kWeight, 0, 16384, 64),             // W
      matmul(2, 0, m, {0, 1}),                              // tile 0
      load(3, BufferId::kUnified, t.a1_addr, 32768, 8192),  // A1, no dependency on tile 0
      matmul(4, t.a1_addr, m, {2, 3}),                      // tile 1
  });
  Soc soc("soc", hw, p, systolic::Fidelity::kFast);
  run(soc);
  const auto& tm = soc.scoreboard.timings();
  const uint64_t conflicts = soc.dma_load.bank_conflict_cycles();
  // The load of tile 1 runs inside tile 0's compute: overlap, not serialization.
  EXPECT_LT(tm[3].start_cycle, tm[2].end_cycle);
  EXPECT_GT(tm[3].end_cycle, tm[2].start_cycle);
  EXPECT_LE(tm[3].end_cycle - conflicts, tm[2].end_cycle) << "every burst landed during tile 0";
  if (expect_conflicts) {
    // Every one of A1's 128 bursts lands in bank 0 while tile 0 holds it: one cycle each.
    EXPECT_EQ(conflicts, 8192u / 64u);
    EXPECT_EQ(soc.buffers.conflict_cycles(BufferId::kUnified), conflicts);
  } else {
    EXPECT_EQ(conflicts, 0u);
  }
  // Tile 1 starts once both tile 0 is done and A1 is in.
  EXPECT_GE(tm[4].start_cycle, std::max(tm[2].end_cycle, tm[3].end_cycle));
}

TEST(MemsysSoc, DoubleBufferedLoadOverlapsComputeWithoutBankConflicts) {
  two_tiles({16384, 4}, false);  // 4 banks of 16 KiB: A1 in bank 1
}

TEST(MemsysSoc, LoadIntoTheBankUnderComputeStallsOneCyclePerBurst) {
  two_tiles({8192, 4}, true);  // A1 right after A0, still in bank 0
}

}  // namespace
}  // namespace npusim
