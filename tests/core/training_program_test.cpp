// The training step compiled once (npusim/training_program.hpp): a step program compiled with one
// set of weights and labels, then given another set through write_parameters / write_constants, is
// the program (instructions, parameter segments) and the checked graph (weights, biases, the
// labels' constants) that compiling the step with the other set gives. So simulating it gives
// that step's values, step after step, without recompiling.
#include "npusim/training_program.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "arch/program.hpp"
#include "compiler/frontend/workload.hpp"
#include "compiler/passes/training_step.hpp"
#include "npusim/compile_target.hpp"
#include "npusim/training_state.hpp"
#include "support/error.hpp"

namespace {

using npusim::Compiled;
using npusim::Graph;
using npusim::Parameters;

struct Step {
  Compiled compiled;
  npusim::TrainingStep step;
};

Step compile_step(const Graph& forward, const Parameters& p, const std::vector<int>& labels) {
  Graph g = forward;
  npusim::set_layer_weights(g, p);
  Step s;
  s.step = npusim::build_training_step(g, int(labels.size()), labels);
  npusim::Target t;
  t.hw = "tpu-v4-like-core";
  t.dtype = "bf16";
  const npusim::HwConfig hw = npusim::target_hardware(t);
  const uint64_t elements = s.step.graph.input_shape.elements();
  s.compiled = npusim::compile_graph(hw, s.step.graph, std::vector<uint8_t>(elements * 2, 0),
                                     std::vector<float>(elements, 0.0f), t, /*values=*/true);
  return s;
}

void expect_rewritten_equals_compiled(const std::string& workload, int batch) {
  const Graph forward = npusim::load_workload(workload, std::nullopt);
  const Parameters p1 = npusim::initial_parameters(forward, 1);
  const Parameters p2 = npusim::initial_parameters(forward, 2);
  std::vector<int> l1, l2;
  for (int i = 0; i < batch; ++i) {
    l1.push_back(i % 10);
    l2.push_back((7 * i + 3) % 10);
  }
  Step first = compile_step(forward, p1, l1);
  npusim::TrainingProgram program(std::move(first.compiled), first.step.weight_uses, p1,
                                  first.step.labels_layer);
  program.write_parameters(p2);
  program.write_constants(npusim::minus_onehot(l2, first.step.classes));
  const Step fresh = compile_step(forward, p2, l2);

  const npusim::Program& a = program.compiled().program;
  const npusim::Program& b = fresh.compiled.program;
  EXPECT_EQ(npusim::to_assembly(a), npusim::to_assembly(b));
  ASSERT_EQ(a.dram_init.size(), b.dram_init.size());
  for (size_t i = 0; i < a.dram_init.size(); ++i) {
    EXPECT_EQ(a.dram_init[i].addr, b.dram_init[i].addr) << "segment " << i;
    EXPECT_EQ(a.dram_init[i].bytes, b.dram_init[i].bytes) << "segment " << i;
  }
  const Graph& ga = program.compiled().graph;
  const Graph& gb = fresh.compiled.graph;
  ASSERT_EQ(ga.layers.size(), gb.layers.size());
  size_t with_weights = 0;
  for (size_t i = 0; i < ga.layers.size(); ++i) {
    EXPECT_EQ(ga.layers[i].bf16_weights, gb.layers[i].bf16_weights) << ga.layers[i].name;
    EXPECT_EQ(ga.layers[i].bias, gb.layers[i].bias) << ga.layers[i].name;
    EXPECT_EQ(ga.layers[i].move_constants, gb.layers[i].move_constants) << ga.layers[i].name;
    with_weights += ga.layers[i].has_weights() ? 1 : 0;
  }
  // The forward layers' weights and the backward's transposed ones.
  EXPECT_EQ(with_weights, first.step.weight_uses.size());
  EXPECT_GT(with_weights, forward.layers.size() > 5 ? 3u : 2u);
}

TEST(TrainingProgram, RewrittenDenseStepIsTheStepCompiledWithItsWeightsAndLabels) {
  expect_rewritten_equals_compiled(
      std::string(NPUSIM_SOURCE_DIR) + "/workloads/training/digits-mlp.json", 8);
}

TEST(TrainingProgram, RewrittenConvolutionStepIsTheStepCompiledWithItsWeightsAndLabels) {
  expect_rewritten_equals_compiled("mnist-cnn", 2);
}

// Parameters given to the wrong layers are caught when the program is set up, not fed to it.
TEST(TrainingProgram, WeightsThatAreNotTheProgramsAreAnInternalError) {
  const Graph forward = npusim::load_workload(
      std::string(NPUSIM_SOURCE_DIR) + "/workloads/training/digits-mlp.json", std::nullopt);
  const Parameters p = npusim::initial_parameters(forward, 1);
  Step s = compile_step(forward, p, {1, 2});
  const Parameters other = npusim::initial_parameters(forward, 5);
  EXPECT_THROW(npusim::TrainingProgram(s.compiled, s.step.weight_uses, other, s.step.labels_layer),
               npusim::InternalError);
  std::vector<npusim::WeightUse> swapped = s.step.weight_uses;
  std::swap(swapped[0].parameter, swapped[1].parameter);
  EXPECT_THROW(npusim::TrainingProgram(s.compiled, swapped, p, s.step.labels_layer),
               npusim::InternalError);
}

}  // namespace
