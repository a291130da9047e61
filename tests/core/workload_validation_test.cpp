// Pins the messages for bad workload graphs, and checks shape inference.
#include <gtest/gtest.h>

#include "compiler/graph.hpp"
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
  EXPECT_EQ(g.layers[0].out_shape, (TensorShape{26, 26, 32}));
  EXPECT_EQ(g.layers[1].out_shape, (TensorShape{13, 13, 32}));
  EXPECT_EQ(g.layers[2].out_shape, (TensorShape{1, 1, 5408}));
  EXPECT_EQ(g.layers[3].out_shape, (TensorShape{1, 1, 128}));
  EXPECT_EQ(g.layers[5].out_shape, (TensorShape{1, 1, 10}));
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
  })"), "net.json");
  EXPECT_EQ(g.layers[0].out_shape, (TensorShape{112, 112, 64}));
  EXPECT_EQ(g.layers[0].pad_top, 2);     // total 5: 2 before, 3 after
  EXPECT_EQ(g.layers[0].pad_bottom, 3);
  EXPECT_EQ(g.layers[1].out_shape, (TensorShape{56, 56, 64}));
}

TEST(WorkloadValidation, BadGraphsReportEveryProblem) {
  auto errors = errors_of(R"({
    "schema_version": 1,
    "input": {"name": "x", "shape": [8, 8, 3], "dtype": "float32"},
    "layers": [
      {"name": "c1", "op": "conv2d", "filters": 4, "kernel": [9, 9]},
      {"name": "d1", "op": "dense", "inputs": ["x"], "units": 10},
      {"name": "z", "op": "transpose"},
      {"name": "m", "op": "maxpool", "inputs": ["nope"], "pool": [2, 2], "size": 3}
    ]
  })");
  std::vector<std::string> expected = {
      "net.json: /input/dtype: expected one of \"int8\", got \"float32\"",
      "net.json: /layers/0: impossible shape: a 9x9 window (dilation 1x1) does not fit the 8x8x3 "
      "input with padding 0,0,0,0",
      "net.json: /layers/1: dense needs a flat input, 'x' is 8x8x3: add a flatten layer before it",
      "net.json: /layers/2/op: expected one of \"conv2d\", \"dense\", \"maxpool\", \"relu\", "
      "\"flatten\", \"softmax\", got \"transpose\"",
      "net.json: /layers/3/inputs/0: unknown tensor 'nope' (tensors defined before this layer: x)",
      "net.json: /layers/3/size: unknown key \"size\" (known keys here: inputs, name, op, output, "
      "padding, pads, pool, strides)",
  };
  EXPECT_EQ(errors, expected);
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
  EXPECT_NE(a.layers[0].weights, std::vector<int8_t>(a.layers[0].weights.size(), 0));
  EXPECT_EQ(make_random_input(a, 3), make_random_input(b, 3));
}

}  // namespace
}  // namespace npusim
