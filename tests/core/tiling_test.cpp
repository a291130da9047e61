// The compiler's tiling: layers larger than the on-chip buffers are split into blocks whose
// double-buffered working sets fit, every MAC is issued exactly once, and a layer that cannot fit
// at all gets an actionable message.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "arch/hw_config.hpp"
#include "compiler/frontend/workload.hpp"
#include "compiler/lowering/lowering.hpp"
#include "compiler/passes/fusion.hpp"
#include "compiler/passes/parameters.hpp"
#include "compiler/passes/quantize.hpp"
#include "support/json_reader.hpp"

namespace npusim {
namespace {

// Parameters, fusion and int8 calibration on a random input, as `npusim run` does.
void prepare(Graph& g) {
  materialize_parameters(g, 1);
  optimize_graph(g);
  quantize_graph(g, make_random_input(g, 1));
}

Graph one_conv(int h, int w, int c, int filters, int kernel, int stride, const char* padding) {
  json j = {{"schema_version", 1},
            {"input", {{"shape", {h, w, c}}}},
            {"layers",
             {{{"name", "conv"},
               {"op", "conv2d"},
               {"filters", filters},
               {"kernel", {kernel, kernel}},
               {"strides", {stride, stride}},
               {"padding", padding},
               {"activation", "relu"}}}}};
  Graph g = parse_workload(j, "test");
  prepare(g);
  return g;
}

// Sums MACs of every MATMUL, checks each tile's shape fits the array, and checks that every
// buffer access stays within its buffer.
uint64_t check_program(const Program& p, const HwConfig& hw) {
  uint64_t macs = 0;
  for (const auto& instr : p.instructions) {
    for (uint32_t d : instr.deps) EXPECT_LT(d, instr.id) << "deps must point backwards";
    if (const auto* m = std::get_if<MatmulOp>(&instr.op)) {
      macs += uint64_t(m->m) * m->k * m->n;
      const auto& mu = hw.matrix_unit;
      switch (mu.dataflow) {
        case Dataflow::kWeightStationary:
          EXPECT_TRUE(m->k <= mu.rows && m->n <= mu.cols);
          break;
        case Dataflow::kOutputStationary:
          EXPECT_TRUE(m->m <= mu.rows && m->n <= mu.cols);
          break;
        case Dataflow::kInputStationary:
          EXPECT_TRUE(m->k <= mu.rows && m->m <= mu.cols);
          break;
      }
      EXPECT_LE(m->acc_addr + (uint64_t(m->m - 1) * m->acc_ld + m->n) * 4,
                hw.accumulators.capacity_bytes);
      EXPECT_LE(m->wb_addr + uint64_t(m->k - 1) * m->w_ld + m->n, hw.weight_buffer.capacity_bytes);
      EXPECT_LE(m->a.ub_addr + uint64_t(m->a.slab_h) * m->a.slab_w * m->a.slab_c,
                hw.unified_buffer.capacity_bytes);
    }
    if (const auto* d = std::get_if<DmaOp>(&instr.op)) {
      uint64_t cap = d->buffer == BufferId::kUnified  ? hw.unified_buffer.capacity_bytes
                     : d->buffer == BufferId::kWeight ? hw.weight_buffer.capacity_bytes
                                                      : hw.accumulators.capacity_bytes;
      EXPECT_LE(d->buffer_addr + d->bytes(), cap) << to_assembly(instr);
      EXPECT_LE(d->dram_addr + uint64_t(d->count[1] - 1) * d->dram_stride[0] + d->count[0],
                p.dram_bytes);
    }
  }
  return macs;
}

TEST(Tiling, ConvLargerThanTheEdgeBuffersIsSplit) {
  // 56x56x64 input (200 KiB) and 3x3x64x128 weights (72 KiB) on a 512 KiB unified buffer, a
  // 64 KiB weight buffer and 64 KiB of accumulators: neither the double-buffered input, the
  // weights nor the output fit whole.
  HwConfig hw = load_hw_config("edge");
  Graph g = one_conv(56, 56, 64, 128, 3, 1, "same");
  ConvGeometry geo = conv_geometry(g.layers[0], 1);
  TilingResult t =
      choose_conv_tiling(hw, geo, "conv", ConvOperands{hw.unified_buffer.capacity_bytes});
  ASSERT_TRUE(t.ok) << t.reason;
  EXPECT_FALSE(t.tiling.weights_resident);
  EXPECT_LT(t.tiling.out_rows, 56);
  EXPECT_LT(t.tiling.n_tile, 128);
  EXPECT_LE(t.tiling.ub_bytes, hw.unified_buffer.capacity_bytes);
  EXPECT_LE(t.tiling.wb_bytes, hw.weight_buffer.capacity_bytes);
  EXPECT_LE(t.tiling.acc_bytes, hw.accumulators.capacity_bytes);
  // The chosen loop order moves fewer bytes than the other one, and at least the input and the
  // weights once.
  EXPECT_LE(t.tiling.dram_bytes, t.tiling.dram_bytes_other_order);
  EXPECT_GE(t.tiling.dram_bytes, 56u * 56 * 64 + 3 * 3 * 64 * 128);

  CompileResult r = compile(g, hw);
  ASSERT_TRUE(r.ok) << r.reason;
  EXPECT_EQ(check_program(r.program, hw), g.total_macs());
  // The program reads exactly what the tiler estimated, plus the 128 int32 biases.
  EXPECT_EQ(r.program.layers[0].dram_read_bytes, t.tiling.dram_bytes + 128 * 4);
  EXPECT_EQ(r.program.layers[0].dram_write_bytes, 56u * 56 * 128);
}

TEST(Tiling, ChannelBlocksOutsideWhenWeightsDominate) {
  // 3x3x64 -> 128 on 56x56 on the edge preset: the accumulators limit a block of 32 channels to
  // 4 output rows, so there are 14 spatial blocks; streaming the weights once per spatial block
  // (14 x 72 KiB) costs more than re-reading the 200 KiB input once per channel block (4 x) and
  // loading each block's 18 KiB of weights once.
  HwConfig hw = load_hw_config("edge");
  Graph g = one_conv(56, 56, 64, 128, 3, 1, "same");
  TilingResult t = choose_conv_tiling(hw, conv_geometry(g.layers[0], 1), "conv",
                                      ConvOperands{hw.unified_buffer.capacity_bytes});
  ASSERT_TRUE(t.ok);
  EXPECT_TRUE(t.tiling.channels_outside);
  EXPECT_LT(t.tiling.dram_bytes, t.tiling.dram_bytes_other_order);
  CompileResult r = compile(g, hw);
  ASSERT_TRUE(r.ok) << r.reason;
  EXPECT_EQ(check_program(r.program, hw), g.total_macs());
  EXPECT_EQ(r.program.layers[0].dram_read_bytes, t.tiling.dram_bytes + 128 * 4);
}

TEST(Tiling, EveryDataflowCoversEveryMacOnce) {
  for (const char* df : {"ws", "os", "is"}) {
    json hwj = {{"schema_version", 1},
                {"matrix_unit", {{"rows", 8}, {"cols", 16}, {"dataflow", df}}},
                {"buffers",
                 {{"unified_buffer", {{"capacity_bytes", 16384}}},
                  {"weight_buffer", {{"capacity_bytes", 1024}}},
                  {"accumulators", {{"capacity_bytes", 8192}}}}}};
    HwConfig hw = parse_hw_config(hwj, "test");
    Graph g = one_conv(20, 18, 5, 37, 3, 2, "same");
    CompileResult r = compile(g, hw);
    ASSERT_TRUE(r.ok) << df << ": " << r.reason;
    EXPECT_EQ(check_program(r.program, hw), g.total_macs()) << df;
  }
}

TEST(Tiling, ResidentWeightsAreLoadedOnce) {
  HwConfig hw = load_hw_config("tpu-v1");
  Graph g = one_conv(28, 28, 1, 32, 3, 1, "valid");
  CompileResult r = compile(g, hw);
  ASSERT_TRUE(r.ok);
  int weight_loads = 0;
  for (const auto& instr : r.program.instructions) {
    const auto* d = std::get_if<DmaOp>(&instr.op);
    if (d && d->buffer == BufferId::kWeight) ++weight_loads;
  }
  EXPECT_EQ(weight_loads, 1);
}

TEST(Tiling, LayerThatCannotFitSaysWhichBufferAndWhatToChange) {
  json hwj = {{"schema_version", 1},
              {"matrix_unit", {{"rows", 8}, {"cols", 8}}},
              {"buffers",
               {{"unified_buffer", {{"capacity_bytes", 4096}}},
                {"weight_buffer", {{"capacity_bytes", 1024}}},
                {"accumulators", {{"capacity_bytes", 65536}}}}}};
  HwConfig hw = parse_hw_config(hwj, "test");
  // One output row reads 3 input rows of 64x16 = 3072 bytes and writes 64x8 = 512 bytes; both
  // double-buffered, plus 8 int32 biases (aligned to 64): 2*3072 + 2*512 + 64 = 7232 bytes.
  Graph g = one_conv(64, 64, 16, 8, 3, 1, "same");
  CompileResult r = compile(g, hw);
  ASSERT_FALSE(r.ok);
  EXPECT_EQ(r.reason,
            "layer 'conv' does not fit: one output row needs 7232 bytes of unified buffer (3 input "
            "rows of 64x16 bytes and one output row, both double-buffered, plus 64 bytes of bias), "
            "the hardware has 4096: raise buffers.unified_buffer.capacity_bytes to at least 7232");
}

TEST(Tiling, ProgramHasExplicitDependencies) {
  HwConfig hw = load_hw_config("edge");
  Graph g = load_workload("mnist-cnn", std::nullopt);
  prepare(g);
  CompileResult r = compile(g, hw);
  ASSERT_TRUE(r.ok);
  // Every MATMUL waits for the DMA that brought its input slab; every REQUANT for a MATMUL.
  for (const auto& instr : r.program.instructions) {
    if (std::holds_alternative<MatmulOp>(instr.op) || std::holds_alternative<RequantOp>(instr.op)) {
      EXPECT_FALSE(instr.deps.empty()) << to_assembly(instr);
    }
  }
  std::string text = to_assembly(r.program);
  EXPECT_NE(text.find("; ---- layer conv1 (conv2d)"), std::string::npos);
  EXPECT_NE(text.find("MATMUL"), std::string::npos);
  EXPECT_NE(text.find("wait("), std::string::npos);
}

}  // namespace
}  // namespace npusim
