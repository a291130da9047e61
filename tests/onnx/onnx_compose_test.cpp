// Operators the ONNX importer composes from IR operators around a `move`
// (compiler/frontend/onnx/onnx_compose.cpp): the layers built, their shapes and the constant
// interpolation / per-index matrices (the values themselves run in OnnxConformance and
// onnx_e2e_test against numpy).
#include <gtest/gtest.h>

#include <stdexcept>

#include "compiler/frontend/onnx_import.hpp"
#include "onnx_test_models.hpp"

namespace npusim {
namespace {

using onnx_test::load_array;
using onnx_test::model_path;

const Layer& producer(const Graph& g, const std::string& tensor) {
  for (const auto& l : g.layers) {
    if (l.output == tensor) return l;
  }
  throw std::runtime_error("no layer produces " + tensor);
}

// Resize linear x2 on H and W of a [N, 4, 6, 6] map: per axis, a move that puts the axis at the
// IR's last (channel) position, a dense layer by the [6, 12] interpolation matrix, a move back.
TEST(OnnxCompose, ResizeLinearIsMoveDenseMovePerAxis) {
  Graph g = import_onnx(model_path("composed"), 2);
  const Layer& to_last = producer(g, "up_linear_resized1_axis1_moved");
  EXPECT_EQ(to_last.kind, OpKind::kMove);
  EXPECT_EQ(to_last.move_op, "transpose");
  EXPECT_EQ(to_last.out_shape.dims, (std::vector<int>{4, 6, 6}));  // [C, W] rows, H last
  const Layer& dense = producer(g, "up_linear_resized1_axis1_done");
  ASSERT_EQ(dense.kind, OpKind::kDense);
  EXPECT_EQ(dense.inputs, std::vector<std::string>{"up_linear_resized1_axis1_moved"});
  EXPECT_EQ(dense.filters, 12);
  EXPECT_FALSE(dense.use_bias);
  ASSERT_EQ(dense.weights.size(), 6u * 12u);
  // half_pixel, scale 2: output 0 sits at -0.25 (clamped to input 0), output 1 at 0.25, output
  // 11 at 5.25 (clamped to input 5); every output's weights sum to 1.
  EXPECT_FLOAT_EQ(dense.weights[0 * 12 + 0], 1.0f);
  EXPECT_FLOAT_EQ(dense.weights[0 * 12 + 1], 0.75f);
  EXPECT_FLOAT_EQ(dense.weights[1 * 12 + 1], 0.25f);
  EXPECT_FLOAT_EQ(dense.weights[5 * 12 + 11], 1.0f);
  for (int o = 0; o < 12; ++o) {
    float sum = 0.0f;
    for (int j = 0; j < 6; ++j) sum += dense.weights[size_t(j * 12 + o)];
    EXPECT_NEAR(sum, 1.0f, 1e-6f) << "output " << o;
  }
  EXPECT_EQ(producer(g, "up_linear_resized1").kind, OpKind::kMove);
  EXPECT_EQ(producer(g, "up_linear_axis2_done").filters, 12);
  // W moved to the channel position leaves the IR holding [C, H, W]: the way back is a free
  // reshape to ONNX's order.
  EXPECT_EQ(producer(g, "up_linear").kind, OpKind::kReshape);
  EXPECT_EQ(producer(g, "up_linear").out_shape.dims, (std::vector<int>{4, 12, 12}));
  // Cubic, align_corners, 6 -> 3: the outputs sit on inputs 0, 2.5 and 5; the middle one takes
  // Keys' cubic weights (a = -0.75) from inputs 1..4.
  const Layer& cubic = producer(g, "down_cubic_resized1_axis1_done");
  ASSERT_EQ(cubic.weights.size(), 6u * 3u);
  EXPECT_FLOAT_EQ(cubic.weights[0 * 3 + 0], 1.0f);
  EXPECT_FLOAT_EQ(cubic.weights[5 * 3 + 2], 1.0f);
  EXPECT_FLOAT_EQ(cubic.weights[1 * 3 + 1], -0.09375f);
  EXPECT_FLOAT_EQ(cubic.weights[2 * 3 + 1], 0.59375f);
  EXPECT_FLOAT_EQ(cubic.weights[0 * 3 + 1], 0.0f);
  EXPECT_EQ(producer(g, "down_cubic").out_shape.dims, (std::vector<int>{4, 3, 3}));
}

// Softmax over H of a feature map: H moved to the IR's last axis, the softmax, moved back.
TEST(OnnxCompose, SoftmaxOverAnotherAxisMovesItLast) {
  Graph g = import_onnx(model_path("composed"), 2);
  const Layer& sm = producer(g, "sm_h_axis1_done");
  EXPECT_EQ(sm.kind, OpKind::kSoftmax);
  EXPECT_EQ(sm.inputs, std::vector<std::string>{"sm_h_axis1_moved"});
  EXPECT_EQ(producer(g, "sm_h_axis1_moved").move_op, "transpose");
  EXPECT_EQ(producer(g, "sm_h").move_op, "transpose");
  EXPECT_EQ(producer(g, "sm_h").inputs, std::vector<std::string>{"sm_h_axis1_done"});
}

// Whole-tensor mode (axis 0 involved): Gemm transA, MatMul by a matrix per leading index and
// Softmax over axis 0.
TEST(OnnxCompose, TransposeAPerIndexMatMulAndAxis0Softmax) {
  Graph g = import_onnx(model_path("composed_whole"), std::nullopt);
  const Layer& at = producer(g, "g_transposed");
  EXPECT_EQ(at.kind, OpKind::kMove);
  EXPECT_EQ(at.out_shape.dims, (std::vector<int>{2, 12}));
  const Layer& gemm = producer(g, "g");
  EXPECT_EQ(gemm.kind, OpKind::kDense);
  EXPECT_EQ(gemm.inputs, std::vector<std::string>{"g_transposed"});
  EXPECT_EQ(gemm.out_shape.dims, (std::vector<int>{2, 5}));
  // mm = x @ B with B [2, 4, 5]: slice k of x times B[k], the two products stacked.
  const auto b = load_array("composed_whole", "init_mm_B");
  for (int k = 0; k < 2; ++k) {
    const Layer& slice = producer(g, "mm_slice" + std::to_string(k));
    EXPECT_EQ(slice.move_op, "slice");
    EXPECT_EQ(slice.out_shape.dims, (std::vector<int>{1, 3, 4}));
    const Layer& product = producer(g, "mm_product" + std::to_string(k));
    ASSERT_EQ(product.kind, OpKind::kDense);
    EXPECT_EQ(product.weights,
              std::vector<float>(b.values.begin() + k * 20, b.values.begin() + (k + 1) * 20));
  }
  const Layer& mm = producer(g, "mm");
  EXPECT_EQ(mm.kind, OpKind::kMove);
  EXPECT_EQ(mm.inputs, (std::vector<std::string>{"mm_product0", "mm_product1"}));
  EXPECT_EQ(mm.out_shape.dims, (std::vector<int>{2, 3, 5}));
  EXPECT_EQ(producer(g, "sm0_axis0_done").kind, OpKind::kSoftmax);
  EXPECT_EQ(producer(g, "sm0_axis0_moved").out_shape.dims, (std::vector<int>{3, 4, 2}));
}

}  // namespace
}  // namespace npusim
