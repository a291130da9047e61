// Pins the messages for bad workload graphs, and checks shape inference.
#include <gtest/gtest.h>

#include "compiler/frontend/workload.hpp"
#include "compiler/ir/graph.hpp"
#include "compiler/passes/parameters.hpp"
#include "support/error.hpp"
#include "support/json_reader.hpp"

namespace npusim {
namespace {

std::vector<std::string> errors_of(const std::string& text) {
  try {
    parse_workload(parse_json_text(text, "net.json"), "net.json");
  } catch (const UserErrors& e) {
    return e.messages();
  }
  return {};
}

TEST(WorkloadValidation, ShapeInferenceOfTheZoo) {
  Graph g = load_workload("mnist-cnn", std::nullopt);
  ASSERT_EQ(g.layers.size(), 6u);
  EXPECT_EQ(g.layers[0].out_shape, make_shape({26, 26, 32}));
  EXPECT_EQ(g.layers[1].out_shape, make_shape({13, 13, 32}));
  EXPECT_EQ(g.layers[2].out_shape, make_shape({5408}));
  EXPECT_EQ(g.layers[3].out_shape, make_shape({128}));
  EXPECT_EQ(g.layers[5].out_shape, make_shape({10}));
  // 26*26*32*9 + 5408*128 + 128*10
  EXPECT_EQ(g.total_macs(), 194688u + 692224u + 1280u);
  Graph mlp = load_workload("mlp-1000", 8);
  EXPECT_EQ(mlp.batch, 8);
  EXPECT_EQ(mlp.total_macs(), 8u * 1000 * 1000);
}

TEST(WorkloadValidation, SamePaddingAndStrideFollowTensorFlow) {
  Graph g = parse_workload(json::parse(R"({
    "schema_version": 1,
    "input": {"shape": [224, 224, 3]},
    "layers": [{"name": "c", "op": "conv2d", "filters": 64, "kernel": [7, 7], "strides": [2, 2],
                "padding": "same"},
               {"name": "p", "op": "maxpool", "pool": [3, 3], "strides": [2, 2], "padding": "same"}]
  })"),
                           "net.json");
  EXPECT_EQ(g.layers[0].out_shape, make_shape({112, 112, 64}));
  EXPECT_EQ(g.layers[0].pads_begin[1], 2);  // total 5: 2 before, 3 after
  EXPECT_EQ(g.layers[0].pads_end[1], 3);
  EXPECT_EQ(g.layers[1].out_shape, make_shape({56, 56, 64}));
}

TEST(WorkloadValidation, BadGraphsReportEveryProblem) {
  auto errors = errors_of(R"({
    "schema_version": 1,
    "input": {"name": "x", "shape": [8, 8, 3], "dtype": "float32"},
    "layers": [
      {"name": "z", "op": "gather"},
      {"name": "m", "op": "maxpool", "inputs": ["x"], "pool": [2, 2], "size": 3},
      {"name": "a", "op": "add", "inputs": ["x"]}
    ]
  })");
  std::vector<std::string> expected = {
      "net.json: /input/dtype: expected one of \"int8\", got \"float32\"",
      "net.json: /layers/0/op: expected one of \"conv2d\", \"conv3d\", \"dense\", \"matmul\", "
      "\"maxpool\", \"avgpool\", \"global_avgpool\", \"relu\", \"relu6\", \"clip\", "
      "\"sigmoid\", \"tanh\", \"gelu\", \"gelu_tanh\", \"add\", \"mul\", \"concat\", \"flatten\", "
      "\"reshape\", \"softmax\", \"layernorm\", \"batchnorm\", \"transpose\", got \"gather\"",
      "net.json: /layers/1/size: unknown key \"size\" (known keys here: inputs, name, op, output, "
      "output_scale, padding, pads, pool, strides)",
      "net.json: /layers/2/inputs: expected a list of 2 tensor names",
  };
  EXPECT_EQ(errors, expected);
}

TEST(WorkloadValidation, ShapeProblemsNameTheLayer) {
  auto errors = errors_of(R"({
    "schema_version": 1,
    "input": {"name": "x", "shape": [8, 8, 3]},
    "layers": [
      {"name": "c1", "op": "conv2d", "filters": 4, "kernel": [9, 9]},
      {"name": "d1", "op": "dense", "inputs": ["x"], "units": 10},
      {"name": "after", "op": "relu", "inputs": ["c1"]},
      {"name": "m", "op": "maxpool", "inputs": ["nope"], "pool": [2, 2]},
      {"name": "g", "op": "conv2d", "inputs": ["x"], "filters": 4, "kernel": [1, 1], "groups": 2},
      {"name": "mm", "op": "matmul", "inputs": ["d1", "x"]},
      {"name": "bn", "op": "batchnorm", "inputs": ["x"]}
    ]
  })");
  std::vector<std::string> expected = {
      "net.json: /layers/0: impossible shape: a 1x9x9 window (dilation 1x1x1) does not fit the "
      "8x8x3 input with padding 0,0,0 / 0,0,0",
      "net.json: /layers/3: unknown tensor 'nope' (tensors defined before this layer: d1, x)",
      "net.json: /layers/4: groups (2) must divide the input channels (3) and the filters (4)",
      "net.json: /layers/5: matmul inner dimensions differ: 8x8x10 x 8x8x3",
      "net.json: /layers/6: batchnorm must directly follow a conv or dense layer without "
      "activation whose output nothing else reads (it is folded into that layer)",
  };
  EXPECT_EQ(errors, expected);
}

// A transpose moves the axes of one sample: output element (i, j, k) of perm [1, 0, 2] on a
// [2, 3, 4] input is input element (j, i, k).
TEST(WorkloadValidation, TransposeMovesAxes) {
  Graph g = parse_workload(json::parse(R"({
    "schema_version": 1,
    "batch": 2,
    "input": {"name": "x", "shape": [2, 12]},
    "layers": [{"name": "r", "op": "reshape", "shape": [2, 3, 4]},
               {"name": "t", "op": "transpose", "perm": [1, 0, 2]}]
  })"),
                           "net.json");
  const Layer& t = g.layers[1];
  EXPECT_EQ(t.kind, OpKind::kMove);
  EXPECT_EQ(t.move_op, "transpose");
  EXPECT_EQ(t.inputs, std::vector<std::string>{"r"});
  EXPECT_EQ(t.out_shape, make_shape({3, 2, 4}));
  ASSERT_EQ(t.move_from.size(), 24u);
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 2; ++j) {
      for (int k = 0; k < 4; ++k) {
        EXPECT_EQ(t.move_from[(i * 2 + j) * 4 + k], (MoveSource{0, (j * 3 + i) * 4 + k}));
      }
    }
  }
  auto errors = errors_of(R"({
    "schema_version": 1,
    "input": {"name": "x", "shape": [4, 6]},
    "layers": [
      {"name": "a", "op": "transpose", "perm": [0, 0]},
      {"name": "b", "op": "transpose", "inputs": ["x"], "perm": [2, 0, 1]},
      {"name": "c", "op": "transpose", "inputs": ["x", "x"], "perm": [1, 0]},
      {"name": "d", "op": "transpose", "inputs": ["x"]}
    ]
  })");
  std::vector<std::string> expected = {
      "net.json: /layers/0/perm: expected a permutation of the axes 0 to 1, each once",
      "net.json: /layers/2/inputs: expected a list of 1 tensor name",
      "net.json: /layers/3/perm: required key is missing",
  };
  EXPECT_EQ(errors, expected);
  EXPECT_EQ(errors_of(R"({"schema_version": 1, "input": {"shape": [4, 6]}, "layers": [
                         {"op": "transpose", "perm": [2, 0, 1]}]})"),
            std::vector<std::string>{"net.json: /layers/0/perm: expected 2 axes, a permutation "
                                     "of the axes of input 'input' 4x6"});
}

TEST(WorkloadValidation, MissingLayersAndUnknownOutput) {
  EXPECT_EQ(errors_of(R"({"schema_version": 1, "input": {"shape": [4]}})"),
            std::vector<std::string>{"net.json: /layers: required key is missing"});
  EXPECT_EQ(errors_of(R"({"schema_version": 1, "input": {"shape": [4]},
                         "layers": [{"op": "relu"}], "outputs": ["y"]})"),
            std::vector<std::string>{"net.json: /outputs/0: unknown tensor 'y'"});
}

TEST(WorkloadValidation, ParametersAreDeterministicPerSeedAndName) {
  Graph a = load_workload("mnist-cnn", std::nullopt), b = a, c = a;
  materialize_parameters(a, 7);
  materialize_parameters(b, 7);
  materialize_parameters(c, 8);
  EXPECT_EQ(a.layers[0].weights, b.layers[0].weights);
  EXPECT_NE(a.layers[0].weights, c.layers[0].weights);
  EXPECT_NE(a.layers[0].weights, std::vector<float>(a.layers[0].weights.size(), 0.0f));
  EXPECT_EQ(make_random_input(a, 3), make_random_input(b, 3));
}

}  // namespace
}  // namespace npusim
