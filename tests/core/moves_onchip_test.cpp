// Moves between tensors resident in the unified buffer (compiler/lowering/move_lowering.cpp,
// docs/llm_bound.md "Moves on chip"): a move whose input and output stay on chip is copied by the
// vector unit and moves no off-chip byte; compile() lowers a graph with moves twice, their
// operands allowed on chip and kept off chip, and keeps the program that moves fewer off-chip
// bytes. Values: every e2e / zoo / LLM test that runs a move with values on.
#include <gtest/gtest.h>

#include <map>
#include <variant>

#include "arch/hw_config.hpp"
#include "compiler/lowering/lowering.hpp"
#include "compiler/lowering/lowering_context.hpp"
#include "prepared_workload.hpp"

namespace npusim {
namespace {

// bert-encoder: four head moves (query, key, value to heads, the context back).
Graph bert(DataType dtype) { return prepared_workload("bert-encoder", dtype); }

TEST(MovesOnChip, HeadMovesBetweenResidentTensorsUseTheVectorUnitOnly) {
  const Graph g = bert(DataType::kInt8);
  const CompileResult r = compile(g, load_hw_config("tpu-v4-like-core"));
  ASSERT_TRUE(r.ok) << r.reason;
  std::map<std::string, bool> on_chip;
  for (const TensorPlacement& t : r.program.tensors)
    on_chip[t.name] = t.buffer == BufferId::kUnified;
  int inside = 0;
  for (size_t i = 0; i < g.layers.size(); ++i) {
    const Layer& l = g.layers[i];
    const LayerRecord& rec = r.program.layers[i];
    ASSERT_EQ(rec.name, l.name);
    if (l.kind != OpKind::kMove || !on_chip[l.output] || !on_chip[l.inputs[0]]) continue;
    ++inside;
    EXPECT_EQ(rec.dram_read_bytes + rec.dram_write_bytes, 0u) << l.name;
    ASSERT_GT(rec.end_instruction, rec.first_instruction) << l.name;
    uint64_t copied = 0;
    for (uint32_t k = rec.first_instruction; k < rec.end_instruction; ++k) {
      const Instruction& in = r.program.instructions[k];
      EXPECT_EQ(in.unit, UnitKind::kVector) << l.name << " instruction " << k;
      const auto* e = std::get_if<EltwiseOp>(&in.op);
      ASSERT_NE(e, nullptr) << l.name << " instruction " << k;
      EXPECT_EQ(e->kind, EltwiseKind::kRescale);
      copied += uint64_t(e->rows) * uint64_t(e->cols);
    }
    EXPECT_EQ(copied, l.out_shape.elements() * uint64_t(g.batch)) << l.name;  // each element once
  }
  // query/key/value to heads, context back: the head tensors fit tpu-v4-like-core's 16 MiB.
  EXPECT_GE(inside, 2);
}

TEST(MovesOnChip, TheProgramMovingFewerOffChipBytesIsKept) {
  // On edge (512 KiB of unified buffer) in bf16, resident head tensors shrink the projections'
  // blocks: the plan that keeps the moves off chip moves fewer bytes. On tpu-v4-like-core the
  // resident plan does.
  for (const auto& [preset, dtype, resident_wins] :
       {std::tuple("edge", DataType::kBf16, false),
        std::tuple("tpu-v4-like-core", DataType::kBf16, true),
        std::tuple("edge", DataType::kInt8, true)}) {
    SCOPED_TRACE(preset);
    const Graph g = bert(dtype);
    const HwConfig hw = load_hw_config(preset);
    const CompileResult on = lowering::Lowering(g, hw, {}).run();
    const CompileResult off = lowering::Lowering(g, hw, {}).keep_moves_off_chip().run();
    const CompileResult chosen = compile(g, hw);
    ASSERT_TRUE(on.ok && off.ok && chosen.ok);
    const uint64_t on_bytes = off_chip_bytes(on.program), off_bytes = off_chip_bytes(off.program);
    EXPECT_EQ(on_bytes < off_bytes, resident_wins) << on_bytes << " vs " << off_bytes;
    EXPECT_EQ(off_chip_bytes(chosen.program), std::min(on_bytes, off_bytes));
    EXPECT_EQ(chosen.program.instructions.size(),
              (on_bytes <= off_bytes ? on : off).program.instructions.size());
  }
}

}  // namespace
}  // namespace npusim
