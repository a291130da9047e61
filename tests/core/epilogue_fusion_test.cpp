// Fusion into the matrix epilogue (compiler/passes/fusion.hpp, fuse_epilogues): residual adds and
// whole-window pools leave the layer list where they apply and stay where they do not, the fused
// program keeps the layer order valid, and its off-chip traffic drops by exactly the bytes of the
// tensors that are no longer stored and read back. Values: tests/e2e/epilogue_fusion_e2e_test.cpp
// and the zoo suite.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "arch/hw_config.hpp"
#include "compiler/frontend/workload.hpp"
#include "compiler/lowering/lowering.hpp"
#include "compiler/passes/fusion.hpp"
#include "compiler/passes/parameters.hpp"
#include "compiler/passes/quantize.hpp"
#include "prepared_workload.hpp"
#include "support/json_reader.hpp"

namespace npusim {
namespace {

// A zoo network as `npusim run` prepares it, before fuse_epilogues.
Graph prepared(const std::string& network, DataType dtype) {
  return prepared_workload(network, dtype);
}

int element_bytes(const Graph& g) { return g.dtype == DataType::kBf16 ? 2 : 1; }

void fuse(Graph& g, const HwConfig& hw) {
  fuse_epilogues(
      g, [&](const Layer& l) { return matrix_layer_fits(hw, l, g.batch, element_bytes(g)); });
}

int layers_of(const Graph& g, std::initializer_list<OpKind> kinds) {
  int n = 0;
  for (const Layer& l : g.layers) n += std::count(kinds.begin(), kinds.end(), l.kind);
  return n;
}

int stages_of(const Graph& g, std::initializer_list<OpKind> kinds) {
  int n = 0;
  for (const Layer& l : g.layers) {
    for (const Layer& s : l.epilogue) n += std::count(kinds.begin(), kinds.end(), s.kind);
  }
  return n;
}

// Every layer reads only tensors produced before it, and a fused layer names its stages.
void expect_valid_order(const Graph& g) {
  std::set<std::string> ready{g.input_name};
  for (const Layer& l : g.layers) {
    for (const auto& name : l.inputs) EXPECT_TRUE(ready.count(name)) << l.name << " reads " << name;
    EXPECT_EQ(l.inputs.size(), l.in_shapes.size()) << l.name;
    for (const Layer& s : l.epilogue) {
      EXPECT_NE(std::find(l.fused.begin(), l.fused.end(), s.name), l.fused.end()) << s.name;
    }
    ready.insert(l.output);
  }
  for (const auto& name : g.outputs) EXPECT_TRUE(ready.count(name)) << name;
}

TEST(EpilogueFusion, EveryResidualAddOfTheResNetsFusesIntoAConv) {
  const HwConfig hw = load_hw_config("tpu-v1");
  for (const char* network : {"resnet18", "resnet50"}) {
    Graph g = prepared(network, DataType::kBf16);
    const int adds = layers_of(g, {OpKind::kAdd});
    ASSERT_GT(adds, 0) << network;
    fuse(g, hw);
    EXPECT_EQ(layers_of(g, {OpKind::kAdd}), 0) << network;
    EXPECT_EQ(stages_of(g, {OpKind::kAdd}), adds) << network;
    for (const Layer& l : g.layers) {
      if (!l.epilogue.empty()) {
        EXPECT_EQ(l.kind, OpKind::kConv) << l.name;
      }
    }
    expect_valid_order(g);
  }
}

TEST(EpilogueFusion, WholeWindowPoolsFuseAndOverlappingOnesStay) {
  const HwConfig hw = load_hw_config("tpu-v1");
  // vgg16 is too large to prepare here; its 2x2 / 2 pools are the same case as mnist-cnn's, and
  // the zoo suite runs it fused. alexnet's 3x3 / 2 pools overlap: they stay layers.
  for (const char* network : {"mnist-cnn", "lenet5", "alexnet"}) {
    Graph g = prepared(network, DataType::kBf16);
    const int pools = layers_of(g, {OpKind::kMaxPool, OpKind::kAvgPool});
    ASSERT_GT(pools, 0) << network;
    fuse(g, hw);
    const bool overlapping = std::string(network) == "alexnet";
    EXPECT_EQ(layers_of(g, {OpKind::kMaxPool, OpKind::kAvgPool}), overlapping ? pools : 0)
        << network;
    EXPECT_EQ(stages_of(g, {OpKind::kMaxPool, OpKind::kAvgPool}), overlapping ? 0 : pools)
        << network;
    expect_valid_order(g);
  }
}

// A stage whose fused layer would not tile on the hardware stays a layer, and the host is left as
// it was (its inputs included).
TEST(EpilogueFusion, AStageThatDoesNotFitStaysALayer) {
  for (const char* network : {"resnet18", "mnist-cnn"}) {
    const Graph plain = prepared(network, DataType::kBf16);
    Graph g = plain;
    fuse_epilogues(g, [](const Layer&) { return false; });
    ASSERT_EQ(g.layers.size(), plain.layers.size()) << network;
    for (size_t i = 0; i < g.layers.size(); ++i) {
      EXPECT_EQ(g.layers[i].name, plain.layers[i].name);
      EXPECT_EQ(g.layers[i].inputs, plain.layers[i].inputs) << g.layers[i].name;
      EXPECT_EQ(g.layers[i].in_shapes, plain.layers[i].in_shapes) << g.layers[i].name;
      EXPECT_EQ(g.layers[i].output, plain.layers[i].output) << g.layers[i].name;
      EXPECT_EQ(g.layers[i].fused, plain.layers[i].fused) << g.layers[i].name;
      EXPECT_TRUE(g.layers[i].epilogue.empty()) << g.layers[i].name;
      EXPECT_EQ(g.layers[i].residual_input, -1) << g.layers[i].name;
    }
  }
}

// The tensors a fused program no longer has (each stage's operand from the stage before) that
// `before`'s memory plan kept off chip: a resident one cost no off-chip bytes to begin with.
uint64_t fused_off_chip_bytes(const Graph& g, const Program& before) {
  std::map<std::string, const TensorPlacement*> where;
  for (const TensorPlacement& t : before.tensors) where[t.name] = &t;
  uint64_t n = 0;
  for (const Layer& l : g.layers) {
    for (const Layer& s : l.epilogue) {
      const TensorPlacement& t = *where.at(s.inputs[s.chain_operand]);
      if (t.buffer == BufferId::kDram) n += t.bytes();
    }
  }
  return n;
}

// The tensors both programs have, each on chip or off chip alike.
bool same_residency(const Program& a, const Program& b) {
  std::map<std::string, BufferId> where;
  for (const TensorPlacement& t : a.tensors) where[t.name] = t.buffer;
  for (const TensorPlacement& t : b.tensors) {
    if (where.count(t.name) && where.at(t.name) != t.buffer) return false;
  }
  return true;
}

// Unfused, each fused tensor the plan kept off chip was written once by the conv and read once by
// the add or pool (their windows do not overlap); fused, neither happens, and everything else
// moves the same bytes. On tpu-v1 the plan keeps these networks' activations on chip, so fusion
// saves vector passes, not traffic, and the traffic must not grow.
TEST(EpilogueFusion, OffChipTrafficDropsByTwiceTheFusedTensorsOffChip) {
  const HwConfig hw = load_hw_config("tpu-v1");
  for (const char* network : {"resnet18", "mnist-cnn", "lenet5"}) {
    for (DataType dtype : {DataType::kInt8, DataType::kBf16}) {
      Graph g = prepared(network, dtype);
      const CompileResult before = compile(g, hw);
      ASSERT_TRUE(before.ok) << before.reason;
      fuse(g, hw);
      const CompileResult after = compile(g, hw);
      ASSERT_TRUE(after.ok) << after.reason;
      EXPECT_GT(stages_of(g, {OpKind::kAdd, OpKind::kMaxPool, OpKind::kAvgPool}), 0) << network;
      ASSERT_TRUE(same_residency(before.program, after.program)) << network;
      EXPECT_EQ(off_chip_bytes(before.program) - off_chip_bytes(after.program),
                2 * fused_off_chip_bytes(g, before.program))
          << network << " " << to_string(dtype);
      EXPECT_EQ(after.program.layers.size(), g.layers.size());
      EXPECT_EQ(after.program.tensors.size(), g.layers.size());
      EXPECT_LE(after.program.dram_bytes, before.program.dram_bytes) << network;
    }
  }
}

// On a small unified buffer the tiler takes blocks of whole pooling windows for a conv with a
// fused pool, and counts the pooled blocks in the buffer it fills.
TEST(EpilogueFusion, AFusedPoolGetsBlocksOfWholeWindows) {
  const HwConfig hw = load_hw_config(std::string(NPUSIM_E2E_DATA) + "/fusion_small_hw.json");
  json j = {{"schema_version", 1},
            {"input", {{"shape", {20, 20, 16}}}},
            {"layers",
             {{{"name", "conv"},
               {"op", "conv2d"},
               {"filters", 40},
               {"kernel", {3, 3}},
               {"padding", "same"},
               {"activation", "relu"}},
              {{"name", "pool"}, {"op", "maxpool"}, {"pool", {2, 2}}, {"strides", {2, 2}}}}}};
  Graph g = parse_workload(j, "test");
  materialize_parameters(g, 1);
  optimize_graph(g);
  quantize_graph(g, make_random_input(g, 1));
  fuse(g, hw);
  ASSERT_EQ(g.layers.size(), 1u);
  const ConvGeometry geometry = conv_geometry(g.layers[0], 1);
  EXPECT_EQ(geometry.pool_h, 2);
  // The graph's input and output live off chip: the layer's scratch is the whole unified buffer.
  const TilingResult fused =
      choose_conv_tiling(hw, geometry, "conv", ConvOperands{hw.unified_buffer.capacity_bytes});
  ASSERT_TRUE(fused.ok) << fused.reason;
  EXPECT_EQ(fused.tiling.out_rows % 2, 0);
  EXPECT_LE(fused.tiling.ub_bytes, hw.unified_buffer.capacity_bytes);
  const CompileResult r = compile(g, hw);
  ASSERT_TRUE(r.ok) << r.reason;
  int pools = 0;
  for (const Instruction& instr : r.program.instructions) {
    if (const auto* p = std::get_if<PoolOp>(&instr.op)) {
      ++pools;
      EXPECT_EQ(p->slab_h, 2 * p->out_h);
      EXPECT_EQ(p->out_w, 10);
    }
  }
  const int rows = fused.tiling.out_rows, n_tile = fused.tiling.n_tile;
  EXPECT_EQ(pools, (20 + rows - 1) / rows * ((40 + n_tile - 1) / n_tile));  // one per block
}

}  // namespace
}  // namespace npusim
