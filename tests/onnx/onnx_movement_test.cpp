// Data movement from ONNX: the IR `move` layers the importer builds (which source each output
// element copies, through both layouts), the shape subgraphs folded at import, the folds into a
// Conv's padding / a MatMul's transpose, the `move` shape rule, and its DMA lowering.
#include <gtest/gtest.h>

#include <stdexcept>

#include "arch/hw_config.hpp"
#include "compiler/frontend/onnx_import.hpp"
#include "compiler/ir/shape_inference.hpp"
#include "compiler/lowering/lowering.hpp"
#include "compiler/passes/fusion.hpp"
#include "compiler/passes/quantize.hpp"
#include "onnx_test_models.hpp"
#include "support/error.hpp"

namespace npusim {
namespace {

using onnx_test::model_path;

// The layer named `name`, or else the one producing tensor `name`.
const Layer* find_layer(const Graph& g, const std::string& name) {
  for (const auto& l : g.layers) {
    if (l.name == name) return &l;
  }
  for (const auto& l : g.layers) {
    if (l.output == name) return &l;
  }
  return nullptr;
}

const Layer& layer(const Graph& g, const std::string& name) {
  const Layer* l = find_layer(g, name);
  if (!l) throw std::runtime_error("no layer named " + name);
  return *l;
}

TEST(OnnxMovement, EachOperatorIsAMoveWithItsShape) {
  Graph g = import_onnx(model_path("movement"), 2);
  struct Expect {
    const char* name;
    const char* op;
    std::vector<int> dims;  // IR, channels last for the (N, C, H, W) results
  };
  for (const Expect& e : std::vector<Expect>{{"sliced", "slice", {4, 3, 4}},
                                             {"reversed", "slice", {6, 6, 2}},
                                             {"split_a", "split", {6, 6, 1}},
                                             {"split_b", "split", {6, 6, 3}},
                                             {"up", "resize", {12, 12, 4}},
                                             {"up_sizes", "resize", {9, 4, 4}},
                                             {"cat_h", "concat", {12, 6, 4}},
                                             {"xt", "transpose", {6, 6, 4}},
                                             {"padded", "pad", {9, 9, 4}},
                                             {"gathered", "gather", {6, 3, 4}},
                                             {"flat_hw", "reshape", {4, 36}}}) {
    const Layer& l = layer(g, e.name);
    EXPECT_EQ(l.kind, OpKind::kMove) << e.name;
    EXPECT_EQ(l.move_op, e.op) << e.name;
    EXPECT_EQ(l.out_shape.dims, e.dims) << e.name;
  }
  // The channel concatenation of two feature maps stays a concat layer; NCHW -> NHWC is the
  // IR's own order, a free reshape.
  EXPECT_EQ(layer(g, "cat_c").kind, OpKind::kConcat);
  EXPECT_EQ(layer(g, "nhwc").kind, OpKind::kReshape);
  EXPECT_TRUE(g.io_in_onnx_order.count("nhwc"));
  // xt = transpose(x, (0, 1, 3, 2)): IR xt[a][b][c] (ONNX xt[c][a][b]) is x[c][b][a], which the
  // IR holds at (b * 6 + a) * 4 + c.
  const Layer& xt = layer(g, "xt");
  EXPECT_EQ(xt.move_from[(1 * 6 + 2) * 4 + 3], (MoveSource{0, (2 * 6 + 1) * 4 + 3}));
  // Constant padding: the corner has no source and takes the pad value.
  EXPECT_EQ(layer(g, "padded").move_from[0], (MoveSource{-1, 0}));
  EXPECT_EQ(layer(g, "padded").move_constants, std::vector<float>{0.5f});
}

TEST(OnnxMovement, ShapeSubgraphFoldsAtImport) {
  Graph g = import_onnx(model_path("resnet_block"), std::nullopt);
  for (const auto& l : g.layers) {
    EXPECT_EQ(l.name.find("gap_shape"), std::string::npos) << l.name << " was not folded";
  }
  EXPECT_EQ(layer(g, "flat2").kind, OpKind::kReshape);
  EXPECT_EQ(layer(g, "flat2").out_shape.dims, std::vector<int>{8});
}

TEST(OnnxMovement, BertHeadsReshapeFreeTransposesMove) {
  Graph g = import_onnx(model_path("bert_attention"), std::nullopt);
  // [N, S, E] -> [N, S, H, D] keeps ONNX's row-major order: no data moves.
  EXPECT_EQ(layer(g, "q_heads").kind, OpKind::kReshape);
  EXPECT_EQ(layer(g, "q_heads").out_shape.dims, (std::vector<int>{8, 2, 8}));
  EXPECT_EQ(layer(g, "merged").kind, OpKind::kReshape);
  for (const char* name : {"qt", "kt", "vt", "ctx_t"}) {
    EXPECT_EQ(layer(g, name).kind, OpKind::kMove) << name;
  }
  EXPECT_EQ(layer(g, "kt").out_shape.dims, (std::vector<int>{2, 8, 8}));
  EXPECT_EQ(layer(g, "cls").move_op, "gather");
  EXPECT_EQ(layer(g, "cls").out_shape.dims, std::vector<int>{16});
}

// compiler/passes/move_folding.cpp: the zero Pad before the depthwise conv becomes its padding.
TEST(OnnxMovement, ZeroPadBeforeAConvFoldsOtherPadsMove) {
  Graph g = import_onnx(model_path("mobilenet_block"), std::nullopt);
  EXPECT_EQ(layer(g, "exp_pad").move_op, "pad");
  optimize_graph(g);
  EXPECT_EQ(find_layer(g, "exp_pad"), nullptr);
  EXPECT_EQ(layer(g, "dw").inputs, std::vector<std::string>{"exp6"});
  EXPECT_EQ(layer(g, "dw").pads_begin, (std::array<int, 3>{0, 0, 0}));
  EXPECT_EQ(layer(g, "dw").pads_end, (std::array<int, 3>{0, 1, 1}));
  EXPECT_EQ(layer(g, "x_reflect").move_op, "pad");
  EXPECT_EQ(layer(g, "x_reflect").out_shape.dims, (std::vector<int>{10, 10, 4}));
}

// The shape rule rejects a source outside its input and a table of the wrong size.
TEST(OnnxMovement, ShapeRuleChecksEverySource) {
  Graph g;
  g.name = "moves";
  g.input_name = "x";
  g.input_shape = make_shape({2, 3});
  Layer bad;
  bad.name = "bad";
  bad.kind = OpKind::kMove;
  bad.inputs = {"x"};
  bad.output = "y";
  bad.reshape_to = {3, 2};
  std::vector<MoveSource> table(6, MoveSource{0, 1});
  table[4].element = 6;
  bad.move_from = MoveTable(table);
  Layer short_table = bad;
  short_table.name = "short";
  short_table.output = "z";
  table.resize(5);
  short_table.move_from = MoveTable(table);
  g.layers = {bad, short_table};
  g.outputs = {"y", "z"};
  GraphDiagnostics diag("moves.json");
  try {
    finalize_graph(g, diag, {"layer 'bad'", "layer 'short'"});
    FAIL() << "expected errors";
  } catch (const UserErrors& e) {
    const std::string text = e.what();
    EXPECT_NE(text.find("layer 'bad'"), std::string::npos) << text;
    EXPECT_NE(text.find("output element 4 copies element 6 of input 0, which does not exist"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("layer 'short': move to 3x2 has 5 element sources"), std::string::npos)
        << text;
  }
}

// The DMA moves each element once, and only the off-chip side: a slice reads and writes its
// output's bytes when both tensors are off chip, nothing off chip when both are resident (the
// vector unit copies, move_lowering.cpp); padding reads the pad block.
// (This model's moves read the graph's input and write its outputs: all off chip.
// tests/core/moves_onchip_test.cpp has moves between resident tensors.)
TEST(OnnxMovement, LoweringMovesEachElementOnce) {
  Graph g = import_onnx(model_path("movement"), 2);
  optimize_graph(g);
  quantize_graph(g, std::vector<int8_t>(g.input_shape.elements() * g.batch, 3));
  CompileResult r = compile(g, load_hw_config("edge"));
  ASSERT_TRUE(r.ok) << r.reason;
  auto on_chip = [&](const std::string& tensor) {
    for (const TensorPlacement& p : r.program.tensors) {
      if (p.name == tensor) return p.buffer == BufferId::kUnified;
    }
    return false;  // the graph's input
  };
  int seen = 0;
  for (const auto& rec : r.program.layers) {
    const Layer& l = layer(g, rec.name);
    if (l.kind != OpKind::kMove) continue;
    ++seen;
    uint64_t read = 0;  // elements copied from off-chip inputs or the constant block
    for (const MoveRun& m : l.move_from.runs()) {
      if (m.input < 0 || !on_chip(l.inputs[size_t(m.input)])) read += m.count;
    }
    const bool out_on_chip = on_chip(l.output);
    const uint64_t bytes = l.out_shape.elements() * g.batch;
    EXPECT_EQ(rec.op, l.move_op) << rec.name;
    EXPECT_EQ(rec.dram_write_bytes, out_on_chip ? 0 : bytes) << rec.name;
    EXPECT_EQ(rec.dram_read_bytes, read * g.batch) << rec.name;
    EXPECT_GT(rec.end_instruction, rec.first_instruction) << rec.name;
  }
  EXPECT_EQ(seen, 14);
}

}  // namespace
}  // namespace npusim
