// ONNX import: bad inputs get messages that name the file and the node, all problems at once.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "compiler/frontend/onnx_import.hpp"
#include "onnx_test_models.hpp"
#include "support/error.hpp"

namespace npusim {
namespace {

using onnx_test::model_path;

// The messages of the UserError(s) importing `path` throws; empty when it imports.
std::vector<std::string> import_errors(const std::string& path) {
  try {
    import_onnx(path, std::nullopt);
  } catch (const UserErrors& e) {
    return e.messages();
  } catch (const UserError& e) {
    return {e.what()};
  }
  return {};
}

TEST(OnnxErrors, NotAnOnnxFile) {
  for (const char* name : {"corrupt_text", "corrupt_truncated"}) {
    const std::string path = model_path(name);
    EXPECT_EQ(import_errors(path),
              std::vector<std::string>{path + ": not a valid ONNX model (protobuf parse failed)"});
  }
}

TEST(OnnxErrors, MissingFile) {
  const std::string path = model_path("no_such_model");
  EXPECT_EQ(import_errors(path), std::vector<std::string>{path + ": cannot open the file"});
}

TEST(OnnxErrors, EmptyFileIsNotAModel) {
  // An empty byte string parses as an empty ModelProto: it must still be rejected.
  const std::string path = std::string(NPUSIM_ONNX_MODELS) + "/empty.onnx";
  std::ofstream(path).close();
  EXPECT_EQ(import_errors(path),
            std::vector<std::string>{path +
                                     ": not a valid ONNX model (no ir_version or no graph nodes)"});
}

TEST(OnnxErrors, UnsupportedOperatorAndWrongAxisReportedTogether) {
  const std::string path = model_path("bad_ops");
  auto errors = import_errors(path);
  ASSERT_EQ(errors.size(), 2u) << ::testing::PrintToString(errors);
  EXPECT_EQ(errors[0], path +
                           ": node 'resize_1' (Resize): operator not supported (supported: Conv, "
                           "Gemm, MatMul, Add, Mul, Relu, Clip, Sigmoid, Tanh, Gelu, Erf, "
                           "Softmax, LayerNormalization, BatchNormalization, "
                           "MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool, ReduceMean, "
                           "Concat, Flatten, Reshape, Squeeze, Unsqueeze, Pad (before a "
                           "Conv), Transpose (of a MatMul's second input), Identity, Dropout, "
                           "Constant, Sub, Div)");
  // The Relu reading the failed Resize stays quiet; the Concat on the height axis is named.
  EXPECT_EQ(errors[1], path +
                           ": node 'cat_h' (Concat): axis 2 on inputs of rank 4: npusim "
                           "concatenates along the channel axis only (axis 1)");
}

TEST(OnnxErrors, SoftmaxOverANonLastAxis) {
  const std::string path = model_path("bad_softmax_axis");
  EXPECT_EQ(
      import_errors(path),
      std::vector<std::string>{path + ": node 'softmax_rows' (Softmax): axis 1 on input [4, 8]: "
                                      "npusim's softmax runs over the last axis, or an axis "
                                      "followed only by axes of size 1 (a softmax over any other "
                                      "axis needs a transpose)"});
}

TEST(OnnxErrors, ShapesComputedAtRunTime) {
  const std::string path = model_path("bad_reshape");
  auto errors = import_errors(path);
  ASSERT_EQ(errors.size(), 2u) << ::testing::PrintToString(errors);
  EXPECT_NE(errors[0].find(path + ": node 'shape_of_x' (Shape): operator not supported"),
            std::string::npos)
      << errors[0];
  EXPECT_NE(errors[0].find("npusim needs shapes known at import: give Reshape a constant shape "
                           "(an initializer or a Constant node)"),
            std::string::npos)
      << errors[0];
  EXPECT_EQ(errors[1], path +
                           ": node 'reshape_dyn' (Reshape): shape input 'relu_x' is not a "
                           "constant (an initializer or a Constant node); npusim needs shapes "
                           "known at import");
}

TEST(OnnxErrors, EveryProblemAtOnceAndUnnamedNodesByPosition) {
  const std::string path = model_path("bad_misc");
  auto errors = import_errors(path);
  ASSERT_EQ(errors.size(), 5u) << ::testing::PrintToString(errors);
  EXPECT_EQ(errors[0], path +
                           ": node #0 (Transpose): perm [0, 2, 3, 1] on input [N, 3, 4, 4] "
                           "(channels first): npusim supports only swapping the last two axes of "
                           "a (N, ..., rows, columns) tensor, perm [0, 1, 3, 2], feeding a MatMul");
  EXPECT_EQ(errors[1], path +
                           ": node 'div_two_tensors' (Div): both operands are run-time tensors; "
                           "npusim divides by a constant only");
  EXPECT_EQ(errors[2], path +
                           ": node 'two_over_x' (Div): dividing a constant by a run-time tensor "
                           "is not supported");
  EXPECT_EQ(errors[3], path +
                           ": node 'add_broadcast' (Add): operands [N, 3, 4, 4] and [N, 3, 1, 1] "
                           "must have the same shape (npusim does not broadcast)");
  EXPECT_EQ(errors[4], path +
                           ": graph output 'flat_out': is a flattened channels-first feature "
                           "map; npusim flattens in H, W, C order, not ONNX's C, H, W, and has "
                           "no transpose");
}

TEST(OnnxErrors, AxisZeroOperatorInAModelTheWholeTensorModeCannotRun) {
  const std::string path = model_path("bad_axis0_conv");
  EXPECT_EQ(import_errors(path),
            std::vector<std::string>{
                path + ": node 'add_per_sample' (Add): the constant [2, 2, 4, 4] differs along "
                       "the batch axis 0 (npusim runs such a model as one whole tensor only when "
                       "its axis 0 is a fixed size and --batch is not given)"});
}

TEST(OnnxErrors, SymbolicSpatialDimension) {
  const std::string path = model_path("bad_input_dims");
  EXPECT_EQ(
      import_errors(path),
      std::vector<std::string>{path + ": graph input 'x': dimension 2 is 'height': every "
                                      "dimension but the batch must be a fixed positive size"});
}

TEST(OnnxErrors, UnsupportedOpset) {
  const std::string path = model_path("bad_opset");
  EXPECT_EQ(
      import_errors(path),
      std::vector<std::string>{path + ": opset 9 is not supported for Pad (supported: 11 to 20, "
                                      "and older opsets for operators defined the same way since; "
                                      "convert the model with onnx.version_converter)"});
}

// The conv's output has another reader, so the batch norm cannot fold into it: it becomes a
// depthwise 1x1 conv of its own (one channel per feature-map channel).
TEST(OnnxErrors, BatchNormWhoseConvOutputHasAnotherReaderRunsAlone) {
  Graph g = import_onnx(model_path("bad_bn_shared"), std::nullopt);
  const Layer* bn = nullptr;
  for (const auto& l : g.layers) {
    if (l.name == "bn_shared") bn = &l;
  }
  ASSERT_NE(bn, nullptr);
  EXPECT_EQ(bn->kind, OpKind::kConv);
  EXPECT_EQ(bn->groups, 4);
  EXPECT_EQ(bn->filters, 4);
  // gamma 1, beta 1, mean 1, var 1, eps 1e-5: scale 1/sqrt(1 + 1e-5), shift 1 - scale.
  const float s = 1.0f / std::sqrt(1.0f + 1e-5f);
  ASSERT_EQ(bn->weights.size(), 4u);
  EXPECT_FLOAT_EQ(bn->weights[0], s);
  EXPECT_FLOAT_EQ(bn->bias[3], 1.0f - s);
}

TEST(OnnxErrors, PadOnlyAsZeroPaddingBeforeAConv) {
  const std::string path = model_path("bad_pad");
  EXPECT_EQ(import_errors(path),
            (std::vector<std::string>{
                path + ": node 'relu_of_pad' (Relu): input 0 ('padded') comes from a Pad; npusim "
                       "supports Pad only as zero padding folded into the Conv that reads it",
                path + ": node 'pad_reflect' (Pad): mode 'reflect': only constant (zero) "
                       "padding is supported"}));
}

TEST(OnnxErrors, TransposeOnlyAsAMatMulsSecondInput) {
  const std::string path = model_path("bad_transpose");
  const std::string why =
      "comes from a Transpose; npusim supports Transpose only of the last two axes, as the second "
      "input of a MatMul";
  EXPECT_EQ(
      import_errors(path),
      (std::vector<std::string>{path + ": node 'relu_of_transpose' (Relu): input 0 ('xt') " + why,
                                path + ": node 'mm_first' (MatMul): input 0 ('xt') " + why}));
}

TEST(OnnxErrors, ExternalWeights) {
  const std::string path = model_path("bad_external");
  EXPECT_EQ(
      import_errors(path),
      std::vector<std::string>{path + ": initializer 'W': stores its data in an external file, "
                                      "which is not supported (save the model with its weights "
                                      "inside)"});
}

}  // namespace
}  // namespace npusim
