// Epilogue fusion with the unified-buffer memory plan (compiler/passes/fusion.hpp,
// docs/memory_plan.md): when the tensors a fused layer touches stay on chip, the fused ADD reads
// the resident residual in place (no DMA), REQUANT / ADD / POOL write the resident output in place
// (no store), the plan sizes the output by the last stage's shape, and the layer's off-chip lower
// bound is its parameters only. Values: tests/e2e/epilogue_fusion_e2e_test.cpp.
#include <gtest/gtest.h>

#include <map>
#include <variant>

#include "arch/hw_config.hpp"
#include "compiler/frontend/workload.hpp"
#include "compiler/lowering/lowering.hpp"
#include "compiler/lowering/tiling.hpp"
#include "compiler/passes/fusion.hpp"
#include "compiler/passes/parameters.hpp"
#include "compiler/passes/quantize.hpp"
#include "prepared_workload.hpp"

namespace npusim {
namespace {

struct Fused {
  Graph graph;
  CompileResult result;
};

// tests/e2e/data/fusion.json (every fusion case, batch 2) fused and compiled on `hw`.
Fused compile_fusion_workload(const HwConfig& hw, DataType dtype) {
  Fused f;
  Graph& g = f.graph;
  g = prepared_workload(std::string(NPUSIM_E2E_DATA) + "/fusion.json", dtype);
  const int es = dtype == DataType::kBf16 ? 2 : 1;
  fuse_epilogues(g, [&](const Layer& l) { return matrix_layer_fits(hw, l, g.batch, es); });
  f.result = compile(g, hw);
  return f;
}

bool within(uint64_t addr, uint64_t bytes, const TensorPlacement& t) {
  return t.buffer == BufferId::kUnified && addr >= t.ub_addr &&
         addr + bytes <= t.ub_addr + t.bytes();
}

TEST(FusionOnChip, ResidentOperandsAreReadAndWrittenInPlace) {
  const HwConfig hw = load_hw_config("tpu-v1");
  for (DataType dtype : {DataType::kInt8, DataType::kBf16}) {
    const Fused f = compile_fusion_workload(hw, dtype);
    ASSERT_TRUE(f.result.ok) << f.result.reason;
    const Program& p = f.result.program;
    const uint64_t es = dtype == DataType::kBf16 ? 2 : 1;
    std::map<std::string, TensorPlacement> where;
    for (const TensorPlacement& t : p.tensors) where[t.name] = t;
    int adds = 0, pools = 0;
    for (size_t i = 0; i < f.graph.layers.size(); ++i) {
      const Layer& l = f.graph.layers[i];
      if (l.epilogue.empty()) continue;
      const LayerRecord& rec = p.layers.at(i);
      ASSERT_EQ(rec.name, l.name);
      // tpu-v1's 24 MiB hold every tensor of this small network that may stay on chip.
      const TensorPlacement& out = where.at(l.output);
      ASSERT_EQ(out.buffer, BufferId::kUnified) << l.name;
      EXPECT_EQ(out.bytes(), l.last_stage().out_shape.elements() * f.graph.batch * es) << l.name;
      // Parameters are all the layer moves off chip, and all its lower bound counts.
      const uint64_t params = (l.qweights.size() + l.bf16_weights.size()) * es + 4 * l.bias.size();
      EXPECT_EQ(rec.dram_write_bytes, 0u) << l.name;
      EXPECT_EQ(rec.dram_read_bytes, params) << l.name;
      EXPECT_EQ(rec.dram_bytes_lower_bound, params) << l.name;
      for (uint32_t k = rec.first_instruction; k < rec.end_instruction; ++k) {
        const Operation& op = p.instructions[k].op;
        if (const auto* e = std::get_if<EltwiseOp>(&op)) {
          const Layer& s = l.epilogue.front();
          ASSERT_EQ(s.kind, OpKind::kAdd) << l.name;
          const TensorPlacement& r = where.at(l.inputs[s.residual_input]);
          ASSERT_EQ(r.buffer, BufferId::kUnified) << l.name;
          const uint64_t r_addr = s.chain_operand == 0 ? e->b_ub_addr : e->a_ub_addr;
          const int r_ld = s.chain_operand == 0 ? e->b_ld : e->a_ld;
          EXPECT_TRUE(within(r_addr, (uint64_t(e->rows - 1) * r_ld + e->cols) * es, r)) << l.name;
          EXPECT_TRUE(
              within(e->out_ub_addr, (uint64_t(e->rows - 1) * e->out_ld + e->cols) * es, out))
              << l.name;
          ++adds;
        }
        if (const auto* pool = std::get_if<PoolOp>(&op)) {
          EXPECT_TRUE(within(pool->out_ub_addr, pool->out_span() * es, out)) << l.name;
          EXPECT_EQ(pool->out_stride(), out.dims.back()) << l.name;
          ++pools;
        }
      }
    }
    EXPECT_GT(adds, 0);
    EXPECT_GT(pools, 0);
  }
}

// With the fused tensors off chip (a 12 KiB unified buffer), the same layers load the residual
// block by DMA and store the pooled blocks, within their scratch.
TEST(FusionOnChip, OffChipOperandsStillStream) {
  const HwConfig hw = load_hw_config(std::string(NPUSIM_E2E_DATA) + "/fusion_small_hw.json");
  const Fused f = compile_fusion_workload(hw, DataType::kInt8);
  ASSERT_TRUE(f.result.ok) << f.result.reason;
  const Program& p = f.result.program;
  uint64_t written = 0;
  for (size_t i = 0; i < f.graph.layers.size(); ++i) {
    if (!f.graph.layers[i].epilogue.empty()) written += p.layers[i].dram_write_bytes;
  }
  EXPECT_GT(written, 0u);
  for (const LayerRecord& rec : p.layers) {
    EXPECT_GE(rec.dram_read_bytes + rec.dram_write_bytes, rec.dram_bytes_lower_bound) << rec.name;
  }
}

}  // namespace
}  // namespace npusim
