// The hazard checker in a real run: a compiled network with one dependency token removed ends in
// an internal error that names both instructions, instead of a shorter cycle count. A token that
// can never be met ends the run with every unit's state.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "compiler/frontend/workload.hpp"
#include "compiler/lowering/lowering.hpp"
#include "compiler/passes/fusion.hpp"
#include "compiler/passes/parameters.hpp"
#include "compiler/passes/quantize.hpp"
#include "npusim/simulate.hpp"
#include "support/error.hpp"

namespace npusim {
namespace {

struct Compiled {
  HwConfig hw = load_hw_config("tpu-v1");
  Graph g = load_workload("mnist-cnn", std::nullopt);
  std::vector<int8_t> input;
  CompileResult compiled;
  Compiled() {
    materialize_parameters(g, 1);
    optimize_graph(g);
    input = make_random_input(g, 1);
    quantize_graph(g, input);
    compiled = compile(g, hw);
  }
  void run() const {
    simulate(hw, compiled.program, g, std::vector<uint8_t>(input.begin(), input.end()),
             systolic::Fidelity::kFast, RunDescription{"tpu-v1", "mnist-cnn", "fast", 1});
  }
};

TEST(MemsysHazard, RemovingADependencyTokenIsCaught) {
  Compiled c;
  ASSERT_TRUE(c.compiled.ok) << c.compiled.reason;
  Program& p = c.compiled.program;
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
    c.run();
    FAIL() << "the run ended without the hazard being reported";
  } catch (const InternalError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("RAW hazard"), std::string::npos) << what;
    EXPECT_NE(what.find(fmt::format("instruction {} (MATMUL", mm->id)), std::string::npos) << what;
    EXPECT_NE(what.find(fmt::format("instruction {} (DMA_LOAD", dropped)), std::string::npos)
        << what;
  }
}

TEST(MemsysHazard, ADependencyNeverMetListsEveryUnitsState) {
  Compiled c;
  ASSERT_TRUE(c.compiled.ok) << c.compiled.reason;
  Program& p = c.compiled.program;
  // The first load waits for the last instruction, which depends on it through the whole network:
  // nothing can finish. The load queue waits on the last instruction; every other unit waits on
  // an instruction that (through others) needs that first load.
  Instruction& first = p.instructions.front();
  ASSERT_EQ(first.unit, UnitKind::kDmaLoad);
  const uint32_t last = uint32_t(p.instructions.size() - 1);
  first.deps.push_back(last);
  try {
    c.run();
    FAIL() << "the run ended although a dependency was never met";
  } catch (const InternalError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("a dependency was never met"), std::string::npos) << what;
    EXPECT_NE(what.find("dma_load: waits at instruction 0 (DMA_LOAD"), std::string::npos) << what;
    EXPECT_NE(what.find(fmt::format("tokens missing: instruction {} (", last)), std::string::npos)
        << what;
    // One line per unit, each waiting (none can have finished: all need the first load).
    for (const char* unit : {"dma_load", "dma_store", "matrix_unit0", "vector_unit"}) {
      EXPECT_NE(what.find(fmt::format("\n  {}: waits at instruction ", unit)), std::string::npos)
          << unit << ": " << what;
    }
  }
}

}  // namespace
}  // namespace npusim
