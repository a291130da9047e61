// ONNX import: the IR built from the models make_models.py writes — op kinds, shapes, attributes,
// and weight layouts checked against the initializers the script saved in ONNX layout.
#include "compiler/frontend/onnx_import.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "compiler/passes/fusion.hpp"
#include "onnx_test_models.hpp"
#include "support/error.hpp"

namespace npusim {
namespace {

using onnx_test::load_array;
using onnx_test::model_path;

const Layer& layer(const Graph& g, const std::string& name) {
  for (const auto& l : g.layers) {
    if (l.name == name) return l;
  }
  throw std::runtime_error("no layer named " + name);
}

std::vector<std::string> layer_names(const Graph& g) {
  std::vector<std::string> names;
  for (const auto& l : g.layers) names.push_back(l.name);
  return names;
}

TEST(OnnxImport, CnnLayersShapesAndAttributes) {
  Graph g = import_onnx(model_path("cnn"), std::nullopt);
  EXPECT_EQ(g.batch, 1);  // the model's batch dimension is symbolic ("N")
  EXPECT_EQ(g.input_name, "x");
  EXPECT_EQ(g.input_shape.dims, (std::vector<int>{12, 12, 3}));  // NCHW [N,3,12,12] -> HWC
  EXPECT_TRUE(g.channels_first_io);
  EXPECT_EQ(layer_names(g),
            (std::vector<std::string>{"conv1", "bn1", "relu1", "conv2", "bn2", "residual", "relu2",
                                      "pool", "conv3", "relu3", "gap", "flat", "fc", "probs"}));
  const std::vector<OpKind> kinds{OpKind::kConv,       OpKind::kBatchNorm, OpKind::kActivation,
                                  OpKind::kConv,       OpKind::kBatchNorm, OpKind::kAdd,
                                  OpKind::kActivation, OpKind::kMaxPool,   OpKind::kConv,
                                  OpKind::kActivation, OpKind::kAvgPool,   OpKind::kReshape,
                                  OpKind::kDense,      OpKind::kSoftmax};
  ASSERT_EQ(g.layers.size(), kinds.size());
  for (size_t i = 0; i < kinds.size(); ++i) {
    EXPECT_EQ(g.layers[i].kind, kinds[i]) << g.layers[i].name;
  }
  EXPECT_EQ(g.outputs, (std::vector<std::string>{"probs"}));

  const Layer& conv1 = layer(g, "conv1");
  EXPECT_EQ(conv1.filters, 8);
  EXPECT_EQ(conv1.kernel, (std::array<int, 3>{1, 3, 3}));
  EXPECT_EQ(conv1.pads_begin, (std::array<int, 3>{0, 1, 1}));
  EXPECT_EQ(conv1.pads_end, (std::array<int, 3>{0, 1, 1}));
  EXPECT_TRUE(conv1.use_bias);
  EXPECT_EQ(conv1.out_shape.dims, (std::vector<int>{12, 12, 8}));
  EXPECT_FALSE(layer(g, "conv2").use_bias);
  EXPECT_EQ(layer(g, "conv2").bias, std::vector<float>(8, 0.0f));  // no bias: zeros
  EXPECT_EQ(layer(g, "relu1").activation, Activation::kRelu);
  EXPECT_EQ(layer(g, "residual").inputs, (std::vector<std::string>{"bn2", "relu1"}));
  EXPECT_EQ(layer(g, "pool").out_shape.dims, (std::vector<int>{6, 6, 8}));
  EXPECT_EQ(layer(g, "pool").strides, (std::array<int, 3>{1, 2, 2}));

  // Grouped SAME_UPPER conv, stride 2 on 6x6, kernel 3: output 3x3, one padding pixel after.
  const Layer& conv3 = layer(g, "conv3");
  EXPECT_EQ(conv3.groups, 2);
  EXPECT_EQ(conv3.strides, (std::array<int, 3>{1, 2, 2}));
  EXPECT_EQ(conv3.pads_begin, (std::array<int, 3>{0, 0, 0}));
  EXPECT_EQ(conv3.pads_end, (std::array<int, 3>{0, 1, 1}));
  EXPECT_EQ(conv3.out_shape.dims, (std::vector<int>{3, 3, 16}));

  EXPECT_TRUE(layer(g, "gap").global_pool);
  EXPECT_EQ(layer(g, "gap").out_shape.dims, (std::vector<int>{1, 1, 16}));
  EXPECT_EQ(layer(g, "flat").out_shape.dims, (std::vector<int>{16}));
  EXPECT_EQ(layer(g, "fc").out_shape.dims, (std::vector<int>{10}));
  EXPECT_EQ(layer(g, "probs").out_shape.dims, (std::vector<int>{10}));

  // Batch normalization keeps its parameters (the quantizer folds them into conv1).
  const Layer& bn1 = layer(g, "bn1");
  EXPECT_FLOAT_EQ(bn1.epsilon, 1e-3f);
  EXPECT_EQ(bn1.gamma, load_array("cnn", "init_bn1_scale").values);
  EXPECT_EQ(bn1.beta, load_array("cnn", "init_bn1_bias").values);
  EXPECT_EQ(bn1.mean, load_array("cnn", "init_bn1_mean").values);
  EXPECT_EQ(bn1.variance, load_array("cnn", "init_bn1_var").values);
  EXPECT_FLOAT_EQ(layer(g, "bn2").epsilon, 1e-5f);
}

TEST(OnnxImport, BatchOverrideReplacesTheModelsBatch) {
  EXPECT_EQ(import_onnx(model_path("cnn"), 4).batch, 4);
  EXPECT_EQ(import_onnx(model_path("mlp"), std::nullopt).batch, 1);
  EXPECT_EQ(import_onnx(model_path("mlp"), 3).batch, 3);
}

// ONNX conv weights [O][I/g][kd][kh][kw] become [kd][kh][kw][I/g][O].
void expect_conv_weights_converted(const Layer& l, const onnx_test::FloatArray& w) {
  ASSERT_GE(w.shape.size(), 4u);
  const int64_t o_n = w.shape[0], c_n = w.shape[1];
  int64_t taps = 1;
  for (size_t a = 2; a < w.shape.size(); ++a) taps *= w.shape[a];
  ASSERT_EQ(l.weights.size(), w.values.size());
  int64_t mismatches = 0;
  for (int64_t o = 0; o < o_n; ++o) {
    for (int64_t c = 0; c < c_n; ++c) {
      for (int64_t t = 0; t < taps; ++t) {
        float onnx = w.values[static_cast<size_t>((o * c_n + c) * taps + t)];
        float ir = l.weights[static_cast<size_t>((t * c_n + c) * o_n + o)];
        if (onnx != ir) ++mismatches;
      }
    }
  }
  EXPECT_EQ(mismatches, 0) << l.name;
}

TEST(OnnxImport, ConvWeightsBecomeKernelMajorChannelsLast) {
  Graph cnn = import_onnx(model_path("cnn"), std::nullopt);
  expect_conv_weights_converted(layer(cnn, "conv1"), load_array("cnn", "init_conv1_W"));
  expect_conv_weights_converted(layer(cnn, "conv3"), load_array("cnn", "init_conv3_W"));
  EXPECT_EQ(layer(cnn, "conv1").bias, load_array("cnn", "init_conv1_B").values);

  // One value by hand: ONNX W[o=5][c=2][kh=1][kw=2] is IR [kh=1][kw=2][c=2][o=5].
  auto w = load_array("cnn", "init_conv1_W");
  EXPECT_EQ(layer(cnn, "conv1").weights[((1 * 3 + 2) * 3 + 2) * 8 + 5],
            w.values[((5 * 3 + 2) * 3 + 1) * 3 + 2]);

  Graph grouped = import_onnx(model_path("conv_grouped"), std::nullopt);
  expect_conv_weights_converted(layer(grouped, "y"), load_array("conv_grouped", "init_W"));
  Graph c3 = import_onnx(model_path("conv3d"), std::nullopt);
  expect_conv_weights_converted(layer(c3, "conv"), load_array("conv3d", "init_W"));
}

TEST(OnnxImport, ConvPaddingStridesDilationGroups) {
  // 9x9, kernel 3 with dilation 2 (span 5), stride 2, pads top 1 left 0 bottom 2 right 1:
  // H (9+1+2-5)/2+1 = 4, W (9+0+1-5)/2+1 = 3.
  Graph grouped = import_onnx(model_path("conv_grouped"), std::nullopt);
  const Layer& g = layer(grouped, "y");
  EXPECT_EQ(g.groups, 2);
  EXPECT_EQ(g.filters, 6);
  EXPECT_EQ(g.dilation, (std::array<int, 3>{1, 2, 2}));
  EXPECT_EQ(g.pads_begin, (std::array<int, 3>{0, 1, 0}));
  EXPECT_EQ(g.pads_end, (std::array<int, 3>{0, 2, 1}));
  EXPECT_EQ(g.out_shape.dims, (std::vector<int>{4, 3, 6}));

  // Depthwise, multiplier 2, SAME_LOWER, stride 2 on 8x8: output 4x4, the odd pixel before.
  Graph dw = import_onnx(model_path("conv_depthwise"), std::nullopt);
  const Layer& d = layer(dw, "y");
  EXPECT_EQ(d.groups, 4);
  EXPECT_EQ(d.filters, 8);
  EXPECT_EQ(d.pads_begin, (std::array<int, 3>{0, 1, 1}));
  EXPECT_EQ(d.pads_end, (std::array<int, 3>{0, 0, 0}));
  EXPECT_EQ(d.out_shape.dims, (std::vector<int>{4, 4, 8}));

  // Conv3d: input NCDHW [2,4,6,6] -> DHWC; kernel (2,3,3), strides (1,2,1),
  // pads (0,1,1) / (1,1,0): D 4+1-2+1 = 4, H (6+2-3)/2+1 = 3, W 6+1-3+1 = 5.
  Graph c3 = import_onnx(model_path("conv3d"), std::nullopt);
  EXPECT_EQ(c3.input_shape.dims, (std::vector<int>{4, 6, 6, 2}));
  const Layer& c = layer(c3, "conv");
  EXPECT_EQ(c.kernel, (std::array<int, 3>{2, 3, 3}));
  EXPECT_EQ(c.strides, (std::array<int, 3>{1, 2, 1}));
  EXPECT_EQ(c.pads_begin, (std::array<int, 3>{0, 1, 1}));
  EXPECT_EQ(c.pads_end, (std::array<int, 3>{1, 1, 0}));
  EXPECT_EQ(c.out_shape.dims, (std::vector<int>{4, 3, 5, 3}));
}

TEST(OnnxImport, FlattenOfAFeatureMapPermutesTheDenseRows) {
  // ONNX flattens the 4x3x3 map as c*9 + h*3 + w; the IR flattens it as (h*3 + w)*4 + c.
  Graph g = import_onnx(model_path("flatten_dense"), std::nullopt);
  const Layer& fc = layer(g, "y");
  ASSERT_EQ(fc.kind, OpKind::kDense);
  EXPECT_EQ(layer(g, "flat").out_shape.dims, (std::vector<int>{36}));
  auto w = load_array("flatten_dense", "init_fc_W");  // [36][6], ONNX row order
  auto b = load_array("flatten_dense", "init_fc_B");
  ASSERT_EQ(fc.weights.size(), 36u * 6u);
  int64_t mismatches = 0, rows_moved = 0;
  for (int h = 0; h < 3; ++h) {
    for (int x = 0; x < 3; ++x) {
      for (int c = 0; c < 4; ++c) {
        const int ir_row = (h * 3 + x) * 4 + c, onnx_row = c * 9 + h * 3 + x;
        rows_moved += ir_row != onnx_row;
        for (int u = 0; u < 6; ++u) {
          // Gemm alpha 0.5 scales the weights.
          if (fc.weights[ir_row * 6 + u] != 0.5f * w.values[onnx_row * 6 + u]) ++mismatches;
        }
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
  EXPECT_EQ(rows_moved, 34);  // all rows but the first and the last move
  ASSERT_EQ(fc.bias.size(), 6u);
  for (int u = 0; u < 6; ++u) EXPECT_FLOAT_EQ(fc.bias[u], 2.0f * b.values[u]);  // beta 2

  // After a global pool the map is 1x1xC and both orders agree: the rows stay in place.
  Graph cnn = import_onnx(model_path("cnn"), std::nullopt);
  auto fc_w = load_array("cnn", "init_fc_W");  // [10][16], transB
  const Layer& head = layer(cnn, "fc");
  for (int k = 0; k < 16; ++k) {
    for (int u = 0; u < 10; ++u) EXPECT_EQ(head.weights[k * 10 + u], fc_w.values[u * 16 + k]);
  }
}

TEST(OnnxImport, MlpGemmTransposedAndMatMulBiasesFolded) {
  Graph g = import_onnx(model_path("mlp"), std::nullopt);
  EXPECT_EQ(g.input_shape.dims, (std::vector<int>{32}));
  EXPECT_EQ(layer_names(g), (std::vector<std::string>{"fc1", "relu1", "mm2", "relu2", "mm3"}));
  const Layer& fc1 = layer(g, "fc1");
  auto w1 = load_array("mlp", "init_fc1_W");  // [64][32] with transB: IR [32][64]
  ASSERT_EQ(fc1.weights.size(), 32u * 64u);
  for (int k = 0; k < 32; ++k) {
    for (int u = 0; u < 64; ++u) ASSERT_EQ(fc1.weights[k * 64 + u], w1.values[u * 32 + k]);
  }
  // MatMul + Add(bias) is one dense layer with a bias, whose output is the Add's tensor.
  const Layer& mm2 = layer(g, "mm2");
  EXPECT_EQ(mm2.kind, OpKind::kDense);
  EXPECT_EQ(mm2.output, "fc2");
  EXPECT_TRUE(mm2.use_bias);
  EXPECT_EQ(mm2.weights, load_array("mlp", "init_fc2_W").values);
  EXPECT_EQ(mm2.bias, load_array("mlp", "init_fc2_B").values);
  EXPECT_EQ(layer(g, "relu2").inputs, (std::vector<std::string>{"fc2"}));
  // The constant comes first in Add(fc3_B, mm3) and has shape [1, 10].
  const Layer& mm3 = layer(g, "mm3");
  EXPECT_EQ(mm3.output, "logits");
  EXPECT_EQ(mm3.bias, load_array("mlp", "init_fc3_B").values);
  EXPECT_EQ(mm3.out_shape.dims, (std::vector<int>{10}));
  EXPECT_EQ(g.outputs, (std::vector<std::string>{"logits"}));
}

TEST(OnnxImport, PoolsCountIncludePadAndChannelConcat) {
  Graph g = import_onnx(model_path("pools"), std::nullopt);
  const Layer& incl = layer(g, "avg_incl");
  const Layer& excl = layer(g, "avg_excl");
  EXPECT_EQ(incl.kind, OpKind::kAvgPool);
  EXPECT_TRUE(incl.count_include_pad);
  EXPECT_FALSE(excl.count_include_pad);
  EXPECT_EQ(incl.kernel, (std::array<int, 3>{1, 3, 3}));
  EXPECT_EQ(incl.pads_begin, (std::array<int, 3>{0, 1, 1}));
  EXPECT_EQ(layer(g, "max").kind, OpKind::kMaxPool);
  EXPECT_EQ(layer(g, "max").out_shape.dims, (std::vector<int>{4, 4, 3}));
  const Layer& cat = layer(g, "cat");
  EXPECT_EQ(cat.kind, OpKind::kConcat);
  EXPECT_EQ(cat.inputs, (std::vector<std::string>{"avg_incl", "avg_excl", "max"}));
  EXPECT_EQ(cat.out_shape.dims, (std::vector<int>{4, 4, 9}));
  EXPECT_EQ(g.outputs, (std::vector<std::string>{"cat", "max", "max_ceil", "avg_ceil"}));
  // ceil_mode on 7 with kernel 2, stride 2: 4 windows, the overhang as one pixel of end padding.
  for (const char* name : {"max_ceil", "avg_ceil"}) {
    EXPECT_EQ(layer(g, name).pads_end, (std::array<int, 3>{0, 1, 1})) << name;
    EXPECT_EQ(layer(g, name).out_shape.dims, (std::vector<int>{4, 4, 3})) << name;
  }
  EXPECT_FALSE(layer(g, "avg_ceil").count_include_pad);
}

TEST(OnnxImport, ActivationsClipAndTheErfGeluPattern) {
  Graph g = import_onnx(model_path("activations"), std::nullopt);
  EXPECT_EQ(layer(g, "sigmoid").activation, Activation::kSigmoid);
  EXPECT_EQ(layer(g, "tanh").activation, Activation::kTanh);
  EXPECT_EQ(layer(g, "relu6").activation, Activation::kRelu6);
  const Layer& clip = layer(g, "clip");
  EXPECT_EQ(clip.activation, Activation::kClip);
  EXPECT_FLOAT_EQ(clip.clip_min, -0.5f);
  EXPECT_FLOAT_EQ(clip.clip_max, 0.25f);
  // Div -> Erf -> Add -> Mul -> Mul is one GELU on x.
  const Layer& gelu = layer(g, "gelu");
  EXPECT_EQ(gelu.kind, OpKind::kActivation);
  EXPECT_EQ(gelu.activation, Activation::kGelu);
  EXPECT_EQ(gelu.inputs, (std::vector<std::string>{"x"}));
  for (const auto& l : g.layers) EXPECT_EQ(l.name.rfind("gelu_", 0), std::string::npos) << l.name;
  EXPECT_EQ(layer(g, "mul").kind, OpKind::kMul);
  EXPECT_EQ(layer(g, "sum").kind, OpKind::kAdd);
  EXPECT_EQ(layer(g, "sum").inputs, (std::vector<std::string>{"mul", "gelu"}));
  EXPECT_EQ(g.layers.size(), 7u);
}

TEST(OnnxImport, RmsNormCompositionsBecomeOneLayer) {
  Graph g = import_onnx(model_path("rms_norm"), std::nullopt);
  // Each composition is one layer norm without the mean, named after its last node.
  ASSERT_EQ(g.layers.size(), 2u);
  const Layer& a = layer(g, "y1");
  EXPECT_EQ(a.kind, OpKind::kLayerNorm);
  EXPECT_TRUE(a.rms);
  EXPECT_FLOAT_EQ(a.epsilon, 1e-6f);
  EXPECT_EQ(a.gamma, load_array("rms_norm", "init_w1").values);
  EXPECT_EQ(a.beta, std::vector<float>(8, 0.0f));
  EXPECT_EQ(a.inputs, (std::vector<std::string>{"x"}));
  const Layer& b = layer(g, "y2");
  EXPECT_TRUE(b.rms);
  EXPECT_EQ(b.gamma, load_array("rms_norm", "init_w2").values);
}

TEST(OnnxImport, SequenceLayerNormMatMulSoftmaxGeluReshape) {
  Graph g = import_onnx(model_path("sequence"), std::nullopt);
  EXPECT_EQ(g.input_shape.dims, (std::vector<int>{4, 8}));
  const Layer& ln = layer(g, "ln");
  EXPECT_EQ(ln.kind, OpKind::kLayerNorm);
  EXPECT_EQ(ln.gamma, load_array("sequence", "init_ln_scale").values);
  EXPECT_EQ(ln.beta, load_array("sequence", "init_ln_bias").values);
  EXPECT_EQ(layer(g, "a").kind, OpKind::kDense);
  EXPECT_EQ(layer(g, "a").out_shape.dims, (std::vector<int>{4, 4}));
  EXPECT_EQ(layer(g, "b_mm").output, "b");
  const Layer& ab = layer(g, "ab");
  EXPECT_EQ(ab.kind, OpKind::kMatMul);
  EXPECT_FALSE(ab.transpose_b);
  EXPECT_EQ(ab.inputs, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(ab.out_shape.dims, (std::vector<int>{4, 6}));
  EXPECT_EQ(layer(g, "attn").kind, OpKind::kSoftmax);
  EXPECT_EQ(layer(g, "act").activation, Activation::kGelu);  // com.microsoft Gelu
  EXPECT_EQ(layer(g, "flat").kind, OpKind::kReshape);
  EXPECT_EQ(layer(g, "flat").out_shape.dims, (std::vector<int>{24}));
  EXPECT_EQ(layer(g, "y").out_shape.dims, (std::vector<int>{5}));
}

TEST(OnnxImport, ReduceMeanSqueezeUnsqueeze) {
  Graph g = import_onnx(model_path("reduce_squeeze"), std::nullopt);
  // ReduceMean over H, W with keepdims: a global average pool [1, 1, 6].
  EXPECT_EQ(layer(g, "gap").kind, OpKind::kAvgPool);
  EXPECT_TRUE(layer(g, "gap").global_pool);
  EXPECT_EQ(layer(g, "gap").out_shape.dims, (std::vector<int>{1, 1, 6}));
  // Squeeze of the 1x1 axes: a flatten to [6]; the rows of the Gemm after it stay in place.
  EXPECT_EQ(layer(g, "sq").kind, OpKind::kReshape);
  EXPECT_EQ(layer(g, "sq").out_shape.dims, (std::vector<int>{6}));
  EXPECT_EQ(layer(g, "y1").out_shape.dims, (std::vector<int>{3}));
  // keepdims 0: the pool, then a flatten that carries the ONNX node's output name.
  EXPECT_EQ(layer(g, "mean").kind, OpKind::kAvgPool);
  EXPECT_EQ(layer(g, "mean_1").kind, OpKind::kReshape);
  EXPECT_EQ(layer(g, "mean_1").output, "mean");
  EXPECT_EQ(layer(g, "mean_1").out_shape.dims, (std::vector<int>{6}));
  // Unsqueeze(axes [1]) of [N, 6]: [N, 1, 6], one row of 6 features.
  EXPECT_EQ(layer(g, "us").reshape_to, (std::vector<int>{1, 6}));
  EXPECT_EQ(layer(g, "y2").out_shape.dims, (std::vector<int>{1, 3}));
}

TEST(OnnxImport, IdentityAndDropoutArePassedOn) {
  Graph g = import_onnx(model_path("aliases"), std::nullopt);
  // The batch norm reads the conv output through an Identity; Dropout vanishes; the graph
  // output, an Identity of the Relu, keeps its name through a free reshape.
  EXPECT_EQ(layer_names(g), (std::vector<std::string>{"conv", "bn", "relu", "y"}));
  EXPECT_EQ(layer(g, "bn").inputs, (std::vector<std::string>{"conv"}));
  EXPECT_EQ(layer(g, "relu").inputs, (std::vector<std::string>{"bn"}));
  EXPECT_EQ(layer(g, "y").kind, OpKind::kReshape);
  EXPECT_EQ(layer(g, "y").inputs, (std::vector<std::string>{"relu"}));
  EXPECT_EQ(layer(g, "y").out_shape.dims, (std::vector<int>{4, 4, 4}));
  EXPECT_EQ(g.outputs, (std::vector<std::string>{"y"}));
}

// The Pad imports as a move; optimize_graph folds it into the conv's padding.
TEST(OnnxImport, PadFoldsIntoTheConvAfterIt) {
  Graph g = import_onnx(model_path("pad_conv"), std::nullopt);
  ASSERT_EQ(g.layers.size(), 2u);
  EXPECT_EQ(g.layers[0].kind, OpKind::kMove);
  optimize_graph(g);
  ASSERT_EQ(g.layers.size(), 1u);
  const Layer& c = layer(g, "y");
  EXPECT_EQ(c.inputs, (std::vector<std::string>{"x"}));
  // Pad: top 1, left 2, bottom 2, right 1; the conv's own: left 1.
  EXPECT_EQ(c.pads_begin, (std::array<int, 3>{0, 1, 3}));
  EXPECT_EQ(c.pads_end, (std::array<int, 3>{0, 2, 1}));
  // H (7 + 1 + 2 - 3) / 2 + 1 = 4, W (7 + 3 + 1 - 3) / 2 + 1 = 5.
  EXPECT_EQ(c.out_shape.dims, (std::vector<int>{4, 5, 5}));
}

TEST(OnnxImport, Opset11AttributeFormsAndSoftmaxDefaultAxis) {
  Graph g = import_onnx(model_path("opset11"), std::nullopt);
  EXPECT_EQ(layer(g, "clip").activation, Activation::kClip);
  EXPECT_TRUE(layer(g, "gap").global_pool);
  EXPECT_EQ(layer(g, "sq").out_shape.dims, (std::vector<int>{6}));
  EXPECT_EQ(layer(g, "y").kind, OpKind::kSoftmax);
  EXPECT_EQ(layer(g, "y").out_shape.dims, (std::vector<int>{4}));
}

TEST(OnnxImport, LayerNormOverAFlattenedMapPermutesItsParameters) {
  Graph g = import_onnx(model_path("flatten_layernorm"), std::nullopt);
  auto scale = load_array("flatten_layernorm", "init_ln_scale");
  auto bias = load_array("flatten_layernorm", "init_ln_bias");
  auto w = load_array("flatten_layernorm", "init_W");  // [12][5]
  const Layer& ln = layer(g, "ln");
  const Layer& dense = layer(g, "y");
  ASSERT_EQ(ln.gamma.size(), 12u);
  for (int h = 0; h < 2; ++h) {
    for (int x = 0; x < 2; ++x) {
      for (int c = 0; c < 3; ++c) {
        const int ir = (h * 2 + x) * 3 + c, onnx = c * 4 + h * 2 + x;
        EXPECT_EQ(ln.gamma[ir], scale.values[onnx]);
        EXPECT_EQ(ln.beta[ir], bias.values[onnx]);
        for (int u = 0; u < 5; ++u) EXPECT_EQ(dense.weights[ir * 5 + u], w.values[onnx * 5 + u]);
      }
    }
  }
}

TEST(OnnxImport, TransposeOfTheLastAxesFoldsIntoMatMul) {
  Graph g = import_onnx(model_path("attention"), std::nullopt);
  EXPECT_EQ(layer(g, "kt").kind, OpKind::kMove);
  optimize_graph(g);
  // Q x Transpose(K) is one matmul reading K with transpose_b: [5, 6] x [5, 6]^T = [5, 5].
  const Layer& scores = layer(g, "scores");
  EXPECT_EQ(scores.kind, OpKind::kMatMul);
  EXPECT_TRUE(scores.transpose_b);
  EXPECT_EQ(scores.inputs, (std::vector<std::string>{"q", "k"}));
  EXPECT_EQ(scores.out_shape.dims, (std::vector<int>{5, 5}));
  EXPECT_FALSE(layer(g, "y").transpose_b);
  EXPECT_EQ(layer(g, "y").out_shape.dims, (std::vector<int>{5, 6}));
  for (const auto& l : g.layers) EXPECT_NE(l.name, "kt");
}

TEST(OnnxImport, ConstantScaleAndShiftFoldIntoWeightsAndBias) {
  Graph g = import_onnx(model_path("scale_fold"), std::nullopt);
  auto w = load_array("scale_fold", "init_W");          // [4][3][3][3]
  auto b = load_array("scale_fold", "init_B");          // [4]
  auto scale = load_array("scale_fold", "init_scale");  // [4][1][1]
  auto shift = load_array("scale_fold", "init_shift");  // [1][4][1][1]
  const Layer& c = layer(g, "conv");
  EXPECT_EQ(c.output, "shifted");
  for (int o = 0; o < 4; ++o) {
    EXPECT_FLOAT_EQ(c.bias[o], b.values[o] * scale.values[o] + shift.values[o]);
    for (int k = 0; k < 27; ++k) {
      // IR [kh][kw][cin][cout]; ONNX [cout][cin][kh][kw] with k = (cin*3 + kh)*3 + kw.
      const int cin = k / 9, tap = k % 9;
      EXPECT_FLOAT_EQ(c.weights[(tap * 3 + cin) * 4 + o], w.values[o * 27 + k] * scale.values[o]);
    }
  }
  const Layer& fc = layer(g, "fc");
  EXPECT_EQ(fc.output, "y");
  EXPECT_FALSE(fc.use_bias);
  EXPECT_EQ(layer_names(g), (std::vector<std::string>{"conv", "relu", "gap", "flat", "fc"}));
}

const Layer& layer_writing(const Graph& g, const std::string& tensor) {
  for (const auto& l : g.layers) {
    if (l.output == tensor) return l;
  }
  throw std::runtime_error("no layer writes " + tensor);
}

// Sub / Mul with constants that fold into nothing: depthwise 1x1 convs on the tensor viewed as a
// [1, P, C] map, one channel per position where the constant varies.
TEST(OnnxImport, ConstantArithmeticIsADepthwiseOneByOneConv) {
  Graph g = import_onnx(model_path("arith_consts"), std::nullopt);
  auto full = load_array("arith_consts", "init_full");  // [4][6]
  auto feat = load_array("arith_consts", "init_feat");  // [6]
  const Layer& sub = layer_writing(g, "a_affine");      // x - full: per element
  EXPECT_EQ(sub.kind, OpKind::kConv);
  EXPECT_EQ(sub.groups, 24);
  EXPECT_EQ(sub.in_shapes[0].dims, (std::vector<int>{1, 1, 24}));
  for (size_t e = 0; e < 24; ++e) {
    EXPECT_EQ(sub.weights[e], 1.0f);
    EXPECT_EQ(sub.bias[e], -full.values[e]);
  }
  const Layer& mul = layer_writing(g, "m_affine");  // feat * a: per feature
  EXPECT_EQ(mul.groups, 6);
  EXPECT_EQ(mul.in_shapes[0].dims, (std::vector<int>{1, 4, 6}));
  EXPECT_EQ(mul.weights, feat.values);
  EXPECT_EQ(layer_writing(g, "y").out_shape.dims, (std::vector<int>{4, 6}));
  EXPECT_FALSE(g.io_without_batch);
}

TEST(OnnxImport, RankOneInputRunsAsOneWholeTensor) {
  Graph g = import_onnx(model_path("rank1"), std::nullopt);
  EXPECT_TRUE(g.io_without_batch);
  EXPECT_EQ(g.batch, 1);
  EXPECT_EQ(g.input_shape.dims, (std::vector<int>{5}));
  EXPECT_TRUE(g.io_in_onnx_order.count("x"));
  EXPECT_TRUE(g.io_in_onnx_order.count("y"));
  EXPECT_EQ(layer_writing(g, "y").activation, Activation::kClip);
  EXPECT_THROW(import_onnx(model_path("rank1"), 2), UserErrors);
}

// A constant that differs along axis 0 and a Softmax over axis 0 of a fixed (3, 4) input: the
// batched import refuses them, so the model runs as one whole tensor; --batch may repeat the fixed
// axis 0, not change it.
TEST(OnnxImport, AnOperatorAlongAxisZeroSwitchesToTheWholeTensor) {
  Graph g = import_onnx(model_path("whole_tensor"), std::nullopt);
  EXPECT_TRUE(g.io_without_batch);
  EXPECT_EQ(g.input_shape.dims, (std::vector<int>{3, 4}));
  EXPECT_EQ(layer_writing(g, "y_softmax").in_shapes[0].dims, (std::vector<int>{1, 12}));
  EXPECT_EQ(layer_writing(g, "y").out_shape.dims, (std::vector<int>{3, 4}));
  EXPECT_EQ(import_onnx(model_path("whole_tensor"), 3).input_shape.dims, g.input_shape.dims);
  try {
    import_onnx(model_path("whole_tensor"), 2);
    ADD_FAILURE() << "--batch 2 was accepted";
  } catch (const UserErrors& e) {
    ASSERT_EQ(e.messages().size(), 2u);
    EXPECT_NE(e.messages()[0].find("differs along the batch axis 0"), std::string::npos)
        << e.messages()[0];
    EXPECT_NE(e.messages()[1].find("as one whole tensor: graph input 'x': batch 2 (--batch or the "
                                   "--input file's axis 0), but the model fixes axis 0 at 3"),
              std::string::npos)
        << e.messages()[1];
  }
}

}  // namespace
}  // namespace npusim
