// Descriptor pipelining of the DMA queues (models/dma_engine.hpp): a stream of independent loads
// is bound by the memory's bandwidth, not its latency, when the queue keeps several transfers in
// flight; completions stay in program order; a queue's writes to the same bytes land in program
// order; a load that depends on a store sees the stored bytes. Each test elaborates one design.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "arch/hw_config.hpp"
#include "arch/program.hpp"
#include "models/soc.hpp"
#include "run_npusim.hpp"
#include "support/json_reader.hpp"
#include "tests/memsys/soc_run.hpp"

namespace npusim {
namespace {

// One core at 1000 MHz over eight hbm2 channels (tCK 1 ns, 64-byte bursts, 32 GB/s each): the
// memory's peak is 256 bytes per core cycle. 1 MiB of unified buffer.
HwConfig chip(int transfers) {
  const std::string text = R"({"schema_version": 1, "clock_mhz": 1000,
    "matrix_unit": {"rows": 8, "cols": 8},
    "buffers": {"unified_buffer": {"capacity_bytes": 1048576, "banks": 16},
                "weight_buffer": {"capacity_bytes": 4096, "banks": 1},
                "accumulators": {"capacity_bytes": 65536, "banks": 1}},
    "memory": {"model": "dram", "preset": "hbm2", "channels": 8,
               "max_outstanding_bursts": 1024, "max_outstanding_transfers": )" +
                           std::to_string(transfers) + R"(, "capacity_bytes": 16777216}})";
  return parse_hw_config(parse_json_text(text, "pipelining.json"), "pipelining.json");
}

Instruction dma(uint32_t id, UnitKind unit, uint64_t buffer_addr, uint64_t dram_addr,
                uint32_t bytes, std::vector<uint32_t> deps = {}) {
  Instruction i;
  i.id = id;
  i.unit = unit;
  i.deps = std::move(deps);
  DmaOp op;
  op.buffer = BufferId::kUnified;
  op.buffer_addr = buffer_addr;
  op.dram_addr = dram_addr;
  op.count[0] = bytes;
  i.op = op;
  return i;
}

Program program_of(std::vector<Instruction> instructions) {
  Program p;
  p.network = "pipelining";
  p.instructions = std::move(instructions);
  LayerRecord layer;
  layer.name = "layer";
  layer.op = "test";
  layer.end_instruction = uint32_t(p.instructions.size());
  p.layers.push_back(layer);
  p.dram_bytes = 16 << 20;
  DramSegment seg;
  seg.addr = 0;
  for (int i = 0; i < (1 << 20); ++i) seg.bytes.push_back(uint8_t(i * 13 + i / 4096));
  p.dram_init.push_back(seg);
  return p;
}

// 32 independent loads of 16 KiB (512 KiB) into disjoint buffer bytes: the bandwidth bound is
// 512 KiB / 256 B per cycle = 2048 cycles.
constexpr uint32_t kLoads = 32, kBytes = 16384;
constexpr uint64_t kBound = uint64_t(kLoads) * kBytes / 256;

uint64_t stream_cycles(Soc& soc) {
  uint64_t end = 0;
  for (const auto& t : soc.scoreboard.timings()) end = std::max(end, t.end_cycle);
  return end;
}

Program stream() {
  std::vector<Instruction> loads;
  for (uint32_t i = 0; i < kLoads; ++i) {
    loads.push_back(dma(i, UnitKind::kDmaLoad, uint64_t(i) * kBytes, uint64_t(i) * kBytes, kBytes));
  }
  return program_of(std::move(loads));
}

// With four transfers in flight the stream runs within 15 % of the bandwidth bound (the first
// burst's latency and the refreshes are the rest); completions are reported in program order and
// every byte arrives.
TEST(DmaPipelining, IndependentLoadsReachTheBandwidthBound) {
  const HwConfig hw = chip(4);
  Program p = stream();
  Soc soc("soc", hw, p, systolic::Fidelity::kFast);
  run(soc);
  const uint64_t cycles = stream_cycles(soc);
  EXPECT_LE(cycles, kBound * 115 / 100) << "bound " << kBound;
  EXPECT_GE(cycles, kBound);
  const auto& t = soc.scoreboard.timings();
  for (uint32_t i = 1; i < kLoads; ++i) {
    EXPECT_GE(t[i].end_cycle, t[i - 1].end_cycle) << "completions in program order, " << i;
    EXPECT_LT(t[i].start_cycle, t[i - 1].end_cycle) << "load " << i << " overlaps the previous";
  }
  EXPECT_GT(soc.dma_load.max_in_flight(), 1u);
  EXPECT_LE(soc.dma_load.max_in_flight(), 4u);
  const uint8_t* ub = soc.buffers.bytes(BufferId::kUnified, 0, kLoads * kBytes, 0);
  for (uint32_t i = 0; i < kLoads * kBytes; ++i) {
    ASSERT_EQ(ub[i], p.dram_init[0].bytes[i]) << "byte " << i;
  }
}

// The same stream through a serial queue (one transfer in flight) pays the latency on every load
// and misses that bound: the test above fails without pipelining.
TEST(DmaPipelining, SerialQueueIsLatencyBound) {
  const HwConfig hw = chip(1);
  Program p = stream();
  Soc soc("soc", hw, p, systolic::Fidelity::kFast);
  run(soc);
  EXPECT_GT(stream_cycles(soc), kBound * 115 / 100) << "bound " << kBound;
  const auto& t = soc.scoreboard.timings();
  for (uint32_t i = 1; i < kLoads; ++i) EXPECT_GE(t[i].start_cycle, t[i - 1].end_cycle) << i;
  EXPECT_EQ(soc.dma_load.max_in_flight(), 1u);
}

// Two loads of the same queue into the same buffer bytes, no token between them: the second
// starts after the first completed and its bytes are the ones left. A store of those bytes, then
// a load of the stored bytes elsewhere (tokens: store after load 1, load 2 after the store) sees
// them.
TEST(DmaPipelining, SameDestinationAndStoreThenLoadKeepProgramOrder) {
  const HwConfig hw = chip(4);
  Program p = program_of({
      dma(0, UnitKind::kDmaLoad, 0, 0, kBytes),
      dma(1, UnitKind::kDmaLoad, 0, 4 * kBytes, kBytes),
      dma(2, UnitKind::kDmaStore, 0, 8u << 20, kBytes, {1}),
      dma(3, UnitKind::kDmaLoad, 2 * kBytes, 8u << 20, kBytes, {2}),
  });
  Soc soc("soc", hw, p, systolic::Fidelity::kFast);
  run(soc);
  const auto& t = soc.scoreboard.timings();
  EXPECT_GE(t[1].start_cycle, t[0].end_cycle);
  EXPECT_GE(t[3].start_cycle, t[2].end_cycle);
  const uint8_t* a = soc.buffers.bytes(BufferId::kUnified, 0, kBytes, 0);
  const uint8_t* b = soc.buffers.bytes(BufferId::kUnified, 2 * kBytes, kBytes, 0);
  for (uint32_t i = 0; i < kBytes; ++i) {
    ASSERT_EQ(a[i], p.dram_init[0].bytes[4 * kBytes + i]) << i;
    ASSERT_EQ(b[i], p.dram_init[0].bytes[4 * kBytes + i]) << i;
  }
}

}  // namespace
}  // namespace npusim

namespace {

using nlohmann::json;

// A zoo network whose weights stream (bert-encoder's feed-forward weights, 768 x 3072 int8, do not
// fit half of tpu-v4-like-core's weight buffer) with values on: transfers overlap, a load followed
// by dependent compute sees its data (every layer's output is bit-exact against the reference),
// and the hazard checker, which runs after every run, finds nothing.
TEST(DmaPipeliningEndToEnd, BertEncoderOnTpuV4CoreIsBitExactWithTransfersInFlight) {
  auto dir = fresh_dir("dma-pipelining-bert");
  CommandResult r = run_npusim(
      "run --hw tpu-v4-like-core --workload bert-encoder --dtype int8 --out " + dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("outputs match the reference bit for bit"), std::string::npos) << r.out;
  json stats = json::parse(slurp(dir / "stats.json"));
  EXPECT_GT(stats["units"]["dma_load"]["max_transfers_in_flight"].get<uint64_t>(), 1u);
}

}  // namespace
