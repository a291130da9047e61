// The pipeline's stage balancing (compiler/lowering/pipeline_parallel.hpp): consecutive layers cut
// into non-empty stages minimizing the largest stage's estimated cycles, and the per-layer estimate
// from the instructions' work.
#include <gtest/gtest.h>

#include "compiler/lowering/pipeline_parallel.hpp"

namespace npusim {
namespace {

std::vector<std::pair<int, int>> cuts(const std::vector<PipelineStage>& stages) {
  std::vector<std::pair<int, int>> out;
  for (const PipelineStage& s : stages) out.push_back({s.first, s.end});
  return out;
}

TEST(PipelineStages, CutsMinimizeTheLargestStage) {
  // {5 | 1 1 5}: 7; {5 1 | 1 5}: 6; {5 1 1 | 5}: 7 -> the middle cut.
  const auto two = balance_stages({5, 1, 1, 5}, 2);
  EXPECT_EQ(cuts(two), (std::vector<std::pair<int, int>>{{0, 2}, {2, 4}}));
  EXPECT_EQ(two[0].estimated_cycles, 6u);
  EXPECT_EQ(two[1].estimated_cycles, 6u);
  // One dominant layer bounds every cut: it gets a stage of its own, the rest share the others.
  const auto three = balance_stages({1, 2, 100, 3, 4}, 3);
  EXPECT_EQ(three[1].estimated_cycles, 100u);
  EXPECT_EQ(cuts(three), (std::vector<std::pair<int, int>>{{0, 2}, {2, 3}, {3, 5}}));
  // As many stages as layers: one each; one stage: everything.
  EXPECT_EQ(cuts(balance_stages({3, 3, 3}, 3)),
            (std::vector<std::pair<int, int>>{{0, 1}, {1, 2}, {2, 3}}));
  EXPECT_EQ(cuts(balance_stages({3, 3, 3}, 1)), (std::vector<std::pair<int, int>>{{0, 3}}));
}

TEST(PipelineStages, EstimateTakesTheLargestOfMatrixVectorAndMemoryWork) {
  HwConfig hw;
  hw.matrix_unit.rows = hw.matrix_unit.cols = 16;
  hw.vector_unit.lanes = 32;
  hw.clock_mhz = 1000;
  hw.memory.bandwidth_gbps = 64;  // 64 bytes per cycle
  Program p;
  Instruction mm;
  MatmulOp m;
  m.m = 100;
  mm.op = m;
  Instruction rq;
  RequantOp r;
  r.m = 100, r.n = 64;  // 6400 elements / 32 lanes = 200 cycles
  rq.op = r;
  p.instructions = {mm, mm, rq};
  LayerRecord compute;
  compute.end_instruction = 3;
  LayerRecord memory;  // no instructions: 6400 B / 64 = 100 cycles
  memory.first_instruction = memory.end_instruction = 3;
  memory.dram_read_bytes = 6400;
  p.layers = {compute, memory};
  // Matrix: 2 x (100 + 16 + 16) = 264 > vector 200; memory 0.
  EXPECT_EQ(estimate_layer_cycles(p, hw), (std::vector<uint64_t>{264, 100}));
}

}  // namespace
}  // namespace npusim
