// A timing-only compile (--values off) keeps no weight contents: the program has the same
// instructions and the same parameter segments (addresses and sizes) as a compile with values, the
// weights' segments without their bytes, so a timing-only run holds no memory in proportion to
// the weights (docs/performance.md). Simulating such a program with values is an internal error.
#include <gtest/gtest.h>

#include <string>

#include "arch/program.hpp"
#include "models/soc.hpp"
#include "npusim/compile_target.hpp"
#include "support/error.hpp"

namespace {

npusim::Target target(const std::string& hw, const std::string& workload,
                      const std::string& dtype) {
  npusim::Target t;
  t.hw = hw;
  t.workload = workload;
  t.dtype = dtype;
  return t;
}

struct Totals {
  uint64_t size = 0;      // bytes the segments occupy
  uint64_t contents = 0;  // bytes the program holds
};

Totals totals(const npusim::Program& p) {
  Totals t;
  for (const auto& s : p.dram_init) {
    t.size += s.size();
    t.contents += s.bytes.size();
  }
  return t;
}

void expect_same_program_without_weights(const npusim::Target& t) {
  const npusim::Compiled with = npusim::load_and_compile(t, false, true);
  const npusim::Compiled timing = npusim::load_and_compile(t, false, false);
  const npusim::Program &a = with.program, &b = timing.program;
  ASSERT_EQ(a.dram_init.size(), b.dram_init.size()) << t.workload;
  size_t without = 0;
  for (size_t i = 0; i < a.dram_init.size(); ++i) {
    const npusim::DramSegment &x = a.dram_init[i], &y = b.dram_init[i];
    EXPECT_EQ(x.addr, y.addr) << t.workload << " segment " << i;
    EXPECT_EQ(x.size(), y.size()) << t.workload << " segment " << i;
    EXPECT_TRUE(x.has_contents()) << t.workload << " segment " << i;
    EXPECT_EQ(x.bytes.size(), x.size());
    if (!y.has_contents()) {
      EXPECT_TRUE(y.bytes.empty());
      ++without;
    }
  }
  // Every matrix layer's weights (one segment each) lose their contents, biases keep theirs.
  size_t matrix_layers = 0;
  for (const auto& l : timing.graph.layers) matrix_layers += l.has_weights() && !l.on_host;
  EXPECT_EQ(without, matrix_layers) << t.workload;
  EXPECT_GT(without, 0u) << t.workload;
  EXPECT_EQ(a.dram_bytes, b.dram_bytes);
  EXPECT_EQ(npusim::to_assembly(a), npusim::to_assembly(b)) << t.workload;
  const Totals ta = totals(a), tb = totals(b);
  EXPECT_EQ(ta.size, tb.size);
  EXPECT_EQ(ta.contents, ta.size);
  // What remains are the biases (4 bytes per output channel): far below the weights.
  EXPECT_LT(tb.contents * 20, ta.contents) << t.workload;
  for (const auto& l : timing.graph.layers) {
    if (!l.has_weights()) continue;
    EXPECT_TRUE(l.qweights.empty() && l.bf16_weights.empty() && l.weights.empty()) << l.name;
  }
}

TEST(TimingOnlyProgram, Int8KeepsTheWeightsSizesWithoutContents) {
  expect_same_program_without_weights(target("tpu-v1", "resnet18", "int8"));
}

TEST(TimingOnlyProgram, Bf16KeepsTheWeightsSizesWithoutContents) {
  expect_same_program_without_weights(target("tpu-v1-hbm", "alexnet", "bf16"));
}

TEST(TimingOnlyProgram, DataParallelKeepsTheWeightsSizesWithoutContents) {
  npusim::Target t = target("tpu-v4-like", "mnist-cnn", "bf16");
  t.batch = 2;
  t.parallel = "data";
  expect_same_program_without_weights(t);
}

TEST(TimingOnlyProgram, PipelineKeepsTheWeightsSizesWithoutContents) {
  npusim::Target t = target("tpu-v4-like", "mnist-cnn", "int8");
  t.batch = 4;
  t.parallel = "pipeline";
  expect_same_program_without_weights(t);
}

TEST(TimingOnlyProgram, ValuesFromAProgramWithoutWeightsAreAnInternalError) {
  const npusim::Compiled timing =
      npusim::load_and_compile(target("tpu-v1", "mnist-cnn", "int8"), false, false);
  try {
    npusim::Soc soc("soc", timing.hw, timing.program, npusim::systolic::Fidelity::kFast, true);
    FAIL() << "a timing-only program was loaded to compute values";
  } catch (const npusim::InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("compiled for timing only"), std::string::npos)
        << e.what();
  }
}

}  // namespace
