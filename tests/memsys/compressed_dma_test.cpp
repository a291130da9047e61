// Compressed weight loads (DmaOp::format, docs/compression.md) on the SoC with the simple memory:
// the queue reads the compressed box and its decompressor writes the dense one into the weight
// buffer, one dense row per cycle from the load's start, its last row no earlier than one cycle
// after the last compressed byte arrived (models/dma_engine.hpp). Each test elaborates one design
// (its own process under ctest).
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <variant>
#include <vector>

#include "arch/compressed_weights.hpp"
#include "arch/hw_config.hpp"
#include "arch/program.hpp"
#include "models/soc.hpp"
#include "support/json_reader.hpp"
#include "tests/memsys/soc_run.hpp"

namespace npusim {
namespace {

// 700 MHz and 44.8 GB/s: 64 bytes per cycle; 100 ns: 70 cycles of latency (memsys_soc_test.cpp);
// one DMA instruction in flight per queue (a serial queue).
HwConfig simple_chip() {
  const std::string text = R"({"schema_version": 1, "clock_mhz": 700,
    "matrix_unit": {"rows": 8, "cols": 8},
    "buffers": {"unified_buffer": {"capacity_bytes": 65536, "banks": 4},
                "weight_buffer": {"capacity_bytes": 4096, "banks": 1},
                "accumulators": {"capacity_bytes": 65536, "banks": 1}},
    "memory": {"model": "simple", "bandwidth_gbps": 44.8, "latency_ns": 100,
               "max_outstanding_transfers": 1}})";
  return parse_hw_config(parse_json_text(text, "simple.json"), "simple.json");
}

constexpr uint32_t kWidth = 8;  // weights per dense row (int8)

// A dense box of `rows` rows with `per_row` non-zeros per row.
std::vector<uint8_t> sparse_box(uint32_t rows, uint32_t per_row) {
  std::mt19937 rng(rows * 31 + per_row);
  std::vector<uint8_t> box(uint64_t(rows) * kWidth, 0);
  for (uint32_t r = 0; r < rows; ++r) {
    for (uint32_t i = 0; i < per_row; ++i) box[r * kWidth + (r + 3 * i) % kWidth] = 1 + rng() % 250;
  }
  return box;
}

// A program whose DRAM holds `compressed` at 0, padded to whole rows of kWidth bytes, and whose
// instructions are `loads` (their op's box to be filled in by the caller).
Program program_of(const std::vector<uint8_t>& compressed, std::vector<Instruction> loads) {
  Program p;
  p.network = "compressed";
  p.instructions = std::move(loads);
  LayerRecord layer;
  layer.name = "layer";
  layer.op = "test";
  layer.end_instruction = uint32_t(p.instructions.size());
  p.layers.push_back(layer);
  p.dram_bytes = 1 << 20;
  DramSegment seg;
  seg.addr = 0;
  seg.bytes = compressed;
  seg.bytes.resize((compressed.size() + kWidth - 1) / kWidth * kWidth, 0);
  p.dram_init.push_back(seg);
  return p;
}

// A load of `rows` rows of kWidth bytes at DRAM 0 into the weight buffer at `wb`, expanded from
// `format` into a dense box of `dense_rows` rows when format is not dense.
Instruction load(uint32_t id, uint64_t wb, uint32_t rows, WeightFormat format,
                 uint32_t dense_rows) {
  Instruction i;
  i.id = id;
  i.unit = UnitKind::kDmaLoad;
  DmaOp op;
  op.buffer = BufferId::kWeight;
  op.buffer_addr = wb;
  op.count[0] = kWidth;
  op.count[1] = rows;
  op.dram_stride[0] = kWidth;
  op.format = format;
  op.dense = WeightBoxShape{dense_rows, kWidth, 1, 0, 0};
  i.op = op;
  return i;
}

// 200 dense rows with 2 non-zeros each: a bitmap byte and 2 bytes per row, 600 bytes in 75 rows
// of 8. The reads end near 74 + 70 cycles; the decompressor's 200 rows from cycle 0 end at 200.
TEST(CompressedDma, DecompressorBoundLoadTakesADenseRowPerCycle) {
  const HwConfig hw = simple_chip();
  const std::vector<uint8_t> dense = sparse_box(200, 2);
  const WeightBoxShape shape{200, kWidth, 1, 0, 0};
  const std::vector<uint8_t> c = compress_weight_box(dense, shape, WeightFormat::kBitmap);
  ASSERT_EQ(c.size(), 600u);
  Program p = program_of(c, {load(0, 0, 75, WeightFormat::kBitmap, 200)});
  Soc soc("soc", hw, p, systolic::Fidelity::kFast);
  run(soc);
  EXPECT_EQ(soc.scoreboard.timings()[0].start_cycle, 0u);
  EXPECT_EQ(soc.scoreboard.timings()[0].end_cycle, 200u);
  EXPECT_EQ(soc.dma_load.bytes_moved(), 600u);
  const uint8_t* wb = soc.buffers.bytes(BufferId::kWeight, 0, dense.size(), 0);
  EXPECT_TRUE(std::equal(dense.begin(), dense.end(), wb));
}

// Read-bound: 8 dense rows with every weight non-zero take 72 compressed bytes (9 rows), more
// than their dense rows. Instruction 0 reads those 9 rows plainly (into the buffer at 1024);
// instruction 1, the compressed load, starts when it ends (a serial queue) and reads the same rows
// from an idle memory, so it takes one cycle longer: the decompressor's last row.
TEST(CompressedDma, ReadBoundLoadEndsOneCycleAfterItsLastByte) {
  const HwConfig hw = simple_chip();
  ASSERT_EQ(hw.memory.max_outstanding_transfers, 1);
  const std::vector<uint8_t> dense = sparse_box(8, kWidth);
  const WeightBoxShape shape{8, kWidth, 1, 0, 0};
  const std::vector<uint8_t> c = compress_weight_box(dense, shape, WeightFormat::kBitmap);
  ASSERT_EQ(c.size(), 72u);
  Program p = program_of(
      c, {load(0, 1024, 9, WeightFormat::kDense, 0), load(1, 0, 9, WeightFormat::kBitmap, 8)});
  Soc soc("soc", hw, p, systolic::Fidelity::kFast);
  run(soc);
  const auto& t = soc.scoreboard.timings();
  const uint64_t plain = t[0].end_cycle - t[0].start_cycle;
  EXPECT_GT(plain, 8u);
  EXPECT_EQ(t[1].start_cycle, t[0].end_cycle);
  EXPECT_EQ(t[1].end_cycle - t[1].start_cycle, plain + 1);
  const uint8_t* wb = soc.buffers.bytes(BufferId::kWeight, 0, dense.size(), 1);
  EXPECT_TRUE(std::equal(dense.begin(), dense.end(), wb));
}

}  // namespace
}  // namespace npusim
