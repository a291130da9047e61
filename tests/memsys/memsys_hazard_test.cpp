// The hazard checker in a real run: a compiled network with one dependency token removed ends in
// an internal error that names both instructions, instead of a shorter cycle count.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "compiler/frontend/workload.hpp"
#include "compiler/lowering/lowering.hpp"
#include "compiler/passes/fusion.hpp"
#include "compiler/passes/parameters.hpp"
#include "compiler/passes/quantize.hpp"
#include "sim/simulate.hpp"
#include "support/error.hpp"

namespace npusim {
namespace {

TEST(MemsysHazard, RemovingADependencyTokenIsCaught) {
  HwConfig hw = load_hw_config("tpu-v1");
  Graph g = load_workload("mnist-cnn", std::nullopt);
  materialize_parameters(g, 1);
  optimize_graph(g);
  const std::vector<int8_t> input = make_random_input(g, 1);
  quantize_graph(g, input);
  CompileResult compiled = compile(g, hw);
  ASSERT_TRUE(compiled.ok) << compiled.reason;
  Program& p = compiled.program;
  // The first matrix instruction waits for its operands' loads, all on the one load queue, which
  // completes them in order, so one token (the latest load's) covers them: without it, the array
  // starts while that load is still writing its operand.
  auto mm = std::find_if(p.instructions.begin(), p.instructions.end(),
                         [](const Instruction& i) { return i.unit == UnitKind::kMatrix; });
  ASSERT_NE(mm, p.instructions.end());
  ASSERT_GE(mm->deps.size(), 1u);
  const uint32_t dropped = *std::max_element(mm->deps.begin(), mm->deps.end());
  ASSERT_EQ(p.instructions[dropped].unit, UnitKind::kDmaLoad);
  mm->deps.erase(std::find(mm->deps.begin(), mm->deps.end(), dropped));
  try {
    simulate(hw, p, g, std::vector<uint8_t>(input.begin(), input.end()), systolic::Fidelity::kFast,
             RunDescription{"tpu-v1", "mnist-cnn", "fast", 1});
    FAIL() << "the run ended without the hazard being reported";
  } catch (const InternalError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("RAW hazard"), std::string::npos) << what;
    EXPECT_NE(what.find(fmt::format("instruction {} (MATMUL", mm->id)), std::string::npos) << what;
    EXPECT_NE(what.find(fmt::format("instruction {} (DMA_LOAD", dropped)), std::string::npos)
        << what;
  }
}

}  // namespace
}  // namespace npusim
