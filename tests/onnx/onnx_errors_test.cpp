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

// How a message about the batch axis ends (docs/onnx.md "Rank mapping"); the model is then
// imported as one whole tensor, and what stops that follows ("as one whole tensor: ...").
const std::string kBatchAxis =
    " (the batch axis; npusim then runs the model as one whole tensor: docs/onnx.md \"Rank "
    "mapping\")";

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
  EXPECT_EQ(
      errors[0],
      path +
          ": node 'topk_1' (TopK): operator not supported (supported: Conv, "
          "Gemm, MatMul, Add, Mul, Relu, Clip, Sigmoid, Tanh, HardSwish, HardSigmoid, "
          "Sqrt, Reciprocal, Pow (constant exponent), Neg, Where (constant condition), "
          "Expand, Gelu, Erf, "
          "Softmax, LayerNormalization, BatchNormalization, MaxPool, "
          "AveragePool, GlobalAveragePool, GlobalMaxPool, ReduceMean, ReduceSum, ReduceMax, "
          "Concat, Flatten, Reshape, Squeeze, Unsqueeze, Pad, Transpose, Identity, "
          "Dropout, Constant, Sub, Div, Slice, Gather (constant indices or token ids), "
          "Resize (nearest, linear, cubic), Split, Shape, Cast, ConvTranspose, LSTM, GRU, Tile "
          "(constant repeats), GatherElements (constant indices), GatherND (constant indices), "
          "Einsum (matrix products); on constants also "
          "CastLike, Size, Range, ConstantOfShape, Trilu, CumSum, ScatterND, Mod, "
          "Equal, Less, LessOrEqual, Greater, GreaterOrEqual, And, Or, Xor, Not, Min, Max, "
          "Abs, Sign, Floor, Ceil, Exp, Log, Sin, Cos, ReduceMin, ReduceProd)");
  // The Relu reading the failed TopK stays quiet; the Concat along the batch is named.
  EXPECT_EQ(errors[1], path + ": node 'cat_n' (Concat): concatenation along axis 0" + kBatchAxis);
}

// A softmax over any axis but the batch's imports (onnx_compose_test.cpp); one past the rank is
// named.
TEST(OnnxErrors, SoftmaxAxisOutOfRange) {
  const std::string path = model_path("bad_softmax_axis");
  EXPECT_EQ(import_errors(path),
            std::vector<std::string>{
                path + ": node 'softmax_rows' (Softmax): axis 3 on input [4, 8]: out of range"});
}

// Shape folds at import (reshape_from_shape reads it); a shape from a run-time tensor does not.
TEST(OnnxErrors, ShapesComputedAtRunTime) {
  const std::string path = model_path("bad_reshape");
  EXPECT_EQ(
      import_errors(path),
      std::vector<std::string>{path + ": node 'reshape_dyn' (Reshape): shape input 'relu_x' is "
                                      "not a constant (an initializer or a Constant node); npusim "
                                      "needs shapes known at import"});
}

TEST(OnnxErrors, EveryProblemAtOnceAndUnnamedNodesByPosition) {
  const std::string path = model_path("bad_misc");
  auto errors = import_errors(path);
  // The model's 2 / x (a reciprocal) and its Add of [N, 3, 1, 1] to [N, 3, 4, 4] (a broadcast)
  // import since issue 21.
  ASSERT_EQ(errors.size(), 3u) << ::testing::PrintToString(errors);
  EXPECT_EQ(errors[0], path +
                           ": node #0 (Transpose): perm [0, 1, 1, 2] is not a permutation of "
                           "the 4 axes");
  EXPECT_EQ(errors[1], path +
                           ": node 'div_two_tensors' (Div): both operands are run-time tensors; "
                           "npusim divides by a constant only");
  EXPECT_EQ(errors[2], path +
                           ": node 'gather_dyn' (Gather): indices 'x' are a run-time tensor; "
                           "npusim gathers with constant indices only (embedding lookups of "
                           "run-time token ids are not supported)");
}

// The symbolic batch resolves to 2 (--batch 2) in the whole-tensor mode, where the Add works but
// a 3-D Conv needs a batch of one (a 2-D one runs with the batch as its depth).
TEST(OnnxErrors, AxisZeroOperatorInAModelTheWholeTensorModeCannotRun) {
  const std::string path = model_path("bad_axis0_conv");
  EXPECT_EQ(std::vector<std::string>{[&] {
              try {
                import_onnx(path, 2);
              } catch (const UserErrors& e) {
                return e.messages().back();
              }
              return std::string("(imported)");
            }()},
            std::vector<std::string>{
                path + ": as one whole tensor: node 'conv' (Conv): in the whole-tensor form "
                       "(docs/onnx.md \"Rank mapping\") a feature map must be (B, C, L), "
                       "(B, C, H, W) or (1, C, D, H, W); input 'x' is [2, 3, 2, 4, 4]"});
  EXPECT_EQ(import_errors(path)[0],
            path +
                ": node 'add_per_sample' (Add): the constant [2, 2, 2, 4, 4] differs along the "
                "batch axis 0 (npusim then runs the model as one whole tensor: docs/onnx.md "
                "\"Rank mapping\")");
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

TEST(OnnxErrors, PadOfTheBatchAndUnknownMode) {
  const std::string path = model_path("bad_pad");
  EXPECT_EQ(
      import_errors(path),
      (std::vector<std::string>{
          path + ": node 'pad_batch' (Pad): pads [1, 0, 1, 1, 0, 0, 1, 1] pad axis 0" + kBatchAxis,
          path + ": node 'pad_wrap' (Pad): mode 'wrap', expected constant, edge or "
                 "reflect"}));
}

TEST(OnnxErrors, TransposeNotAPermutationAndSliceOfTheBatch) {
  const std::string path = model_path("bad_transpose");
  EXPECT_EQ(import_errors(path),
            (std::vector<std::string>{
                path + ": node 'transpose_twice' (Transpose): perm [0, 2, 2] is not a "
                       "permutation of the 3 axes",
                path + ": node 'slice_batch' (Slice): a slice of axis 0" + kBatchAxis,
                // The symbolic batch is 1 in the whole-tensor mode: the slice [1:] is empty.
                path + ": as one whole tensor: node 'slice_batch' (Slice): the result [0, 4, 4] "
                       "is empty"}));
}

TEST(OnnxErrors, ExternalWeights) {
  const std::string path = model_path("bad_external");
  EXPECT_EQ(
      import_errors(path),
      std::vector<std::string>{path + ": initializer 'W': stores its data in an external file, "
                                      "which is not supported (save the model with its weights "
                                      "inside)"});
}

// The conformance gaps' neighbours that stay refused (tests/onnx/make_gap_models.py).
TEST(OnnxErrors, LayerNormStashTypeAndDilatedAveragePool) {
  const std::string path = model_path("bad_gaps");
  EXPECT_EQ(import_errors(path),
            (std::vector<std::string>{
                path + ": node 'ln_half' (LayerNormalization): stash_type 10: only 1 (float "
                       "statistics) is supported",
                path + ": node 'avg_dilated' (AveragePool): dilations [2]: only MaxPool "
                       "supports dilations"}));
}

}  // namespace
}  // namespace npusim
