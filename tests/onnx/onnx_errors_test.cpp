// ONNX import: bad inputs get messages that name the file and the node, all problems at once.
#include <gtest/gtest.h>

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
                           ": node 'topk_1' (TopK): operator not supported (supported: Conv, "
                           "Gemm, MatMul, Add, Mul, Relu, Clip, Sigmoid, Tanh, Gelu, the Erf "
                           "form of GELU, Softmax, LayerNormalization, BatchNormalization, "
                           "MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool, ReduceMean "
                           "(spatial), Concat, Flatten, Reshape, Squeeze, Unsqueeze, Pad, "
                           "Transpose, Identity, Dropout, Constant, Slice, Gather (constant "
                           "indices), Resize (nearest), Split, Shape, Cast)");
  // The Relu reading the failed TopK stays quiet; the Concat along the batch is named.
  EXPECT_EQ(errors[1], path +
                           ": node 'cat_n' (Concat): concatenation along the batch axis 0 is "
                           "not supported");
}

TEST(OnnxErrors, SoftmaxOverANonLastAxis) {
  const std::string path = model_path("bad_softmax_axis");
  EXPECT_EQ(
      import_errors(path),
      std::vector<std::string>{path + ": node 'softmax_rows' (Softmax): axis 1 on input [N, 4, "
                                      "8]: npusim's softmax runs over the last axis only (axis "
                                      "2)"});
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
  ASSERT_EQ(errors.size(), 5u) << ::testing::PrintToString(errors);
  EXPECT_EQ(errors[0], path +
                           ": node #0 (Transpose): perm [1, 0, 2, 3] moves the batch axis 0; "
                           "npusim keeps the batch first");
  EXPECT_EQ(errors[1], path +
                           ": node 'bn_on_input' (BatchNormalization): input 'x' must come from "
                           "a Conv, Gemm or MatMul whose output nothing else reads: npusim folds "
                           "batch normalization into it");
  EXPECT_EQ(errors[2], path +
                           ": node 'scale_by_2' (Mul): Mul of a constant is supported only as "
                           "the per-channel scale of the Conv, Gemm or MatMul right before it, "
                           "whose output nothing else reads");
  EXPECT_EQ(errors[3], path +
                           ": node 'add_broadcast' (Add): operands [N, 3, 4, 4] and [N, 3, 1, 1] "
                           "must have the same shape (npusim does not broadcast)");
  EXPECT_EQ(errors[4], path +
                           ": node 'gather_dyn' (Gather): indices 'x' are a run-time tensor; "
                           "npusim gathers with constant indices only (embedding lookups of "
                           "run-time token ids are not supported)");
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
      std::vector<std::string>{path + ": opset 9 is not supported (supported: 11 to 20; convert "
                                      "the model with onnx.version_converter)"});
}

TEST(OnnxErrors, BatchNormWhoseConvOutputHasAnotherReaderThroughAnAlias) {
  const std::string path = model_path("bad_bn_shared");
  EXPECT_EQ(
      import_errors(path),
      std::vector<std::string>{path + ": node 'bn_shared' (BatchNormalization): input 'conv_id' "
                                      "must come from a Conv, Gemm or MatMul whose output nothing "
                                      "else reads: npusim folds batch normalization into it"});
}

TEST(OnnxErrors, PadOfTheBatchAndUnknownMode) {
  const std::string path = model_path("bad_pad");
  EXPECT_EQ(import_errors(path),
            (std::vector<std::string>{
                path + ": node 'pad_batch' (Pad): pads [1, 0, 1, 1, 0, 0, 1, 1] pad the batch "
                       "axis 0",
                path + ": node 'pad_wrap' (Pad): mode 'wrap', expected constant, edge or "
                       "reflect"}));
}

TEST(OnnxErrors, TransposeNotAPermutationAndSliceOfTheBatch) {
  const std::string path = model_path("bad_transpose");
  EXPECT_EQ(import_errors(path),
            (std::vector<std::string>{
                path + ": node 'transpose_twice' (Transpose): perm [0, 2, 2] is not a "
                       "permutation of the 3 axes",
                path + ": node 'slice_batch' (Slice): slicing the batch axis 0 is not "
                       "supported"}));
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
