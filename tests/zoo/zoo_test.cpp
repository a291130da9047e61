// The model zoo: every network in workloads/zoo loads with load_workload and has its published
// structure. Multiply-accumulate counts are checked twice: exactly, against a count derived here
// from the paper's architecture table (not from the JSON), and within 2% of the published figure.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "compiler/frontend/workload.hpp"
#include "compiler/ir/graph.hpp"
#include "support/embedded_files.hpp"

namespace npusim {
namespace {

// MACs of a convolution producing an out x out x cout map with a k x k kernel over cin channels
// per group.
uint64_t conv_macs(uint64_t out, uint64_t cout, uint64_t k, uint64_t cin) {
  return out * out * cout * k * k * cin;
}

int count_kind(const Graph& g, OpKind kind) {
  return static_cast<int>(std::count_if(g.layers.begin(), g.layers.end(),
                                        [&](const Layer& l) { return l.kind == kind; }));
}

const Layer& layer_named(const Graph& g, const std::string& name) {
  for (const auto& l : g.layers) {
    if (l.name == name) return l;
  }
  ADD_FAILURE() << g.name << " has no layer " << name;
  static Layer none;
  return none;
}

uint64_t sum_of_layer_macs(const Graph& g) {
  uint64_t total = 0;
  for (const auto& l : g.layers) total += l.macs(g.batch);
  return total;
}

void expect_within_percent(uint64_t macs, double published, double percent) {
  EXPECT_NEAR(static_cast<double>(macs), published, published * percent / 100.0)
      << "MACs " << macs << " vs published " << published;
}

TEST(ZooTest, ZooEmbedsEveryFileInWorkloadsZoo) {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(NPUSIM_ZOO_DIR)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path().stem().string());
  }
  std::sort(files.begin(), files.end());
  std::vector<std::string> embedded = embedded_file_names("zoo");
  std::sort(embedded.begin(), embedded.end());
  EXPECT_EQ(embedded, files) << "re-run cmake after adding a zoo network";
  for (const char* name : {"mnist-cnn", "mlp-1000", "lenet5", "alexnet", "vgg16", "resnet18",
                           "resnet50", "mobilenetv2", "bert-encoder"}) {
    EXPECT_TRUE(std::find(embedded.begin(), embedded.end(), name) != embedded.end()) << name;
  }
}

TEST(ZooTest, ZooEveryNetworkLoadsWithItsOwnNameAndADescription) {
  for (const auto& name : embedded_file_names("zoo")) {
    SCOPED_TRACE(name);
    Graph g = load_workload(name, std::nullopt);
    EXPECT_EQ(g.name, name);
    EXPECT_FALSE(g.description.empty());
    EXPECT_FALSE(g.outputs.empty());
    EXPECT_EQ(g.total_macs(), sum_of_layer_macs(g));
    Graph batch4 = load_workload(name, 4);
    EXPECT_EQ(batch4.batch, 4);
    EXPECT_EQ(batch4.total_macs(), 4 * sum_of_layer_macs(g) / g.batch);
  }
}

// LeCun et al. 1998, Fig. 2: C1 28x28x6 (5x5), C3 10x10x16 (5x5, here fully connected to S2's
// 6 maps), C5 120, F6 84, 10 outputs. The paper counts connections including biases: C1 has
// 122,304 = 28*28*6*(25+1), i.e. 117,600 MACs.
TEST(ZooTest, ZooLenet5) {
  Graph g = load_workload("lenet5", std::nullopt);
  EXPECT_EQ(g.input_shape, make_shape({32, 32, 1}));
  EXPECT_EQ(g.layers.size(), 9u);
  EXPECT_EQ(layer_named(g, "c1").out_shape, make_shape({28, 28, 6}));
  EXPECT_EQ(layer_named(g, "s2").out_shape, make_shape({14, 14, 6}));
  EXPECT_EQ(layer_named(g, "c3").out_shape, make_shape({10, 10, 16}));
  EXPECT_EQ(layer_named(g, "s4").out_shape, make_shape({5, 5, 16}));
  EXPECT_EQ(g.shape_of("probs"), make_shape({10}));
  EXPECT_EQ(layer_named(g, "c1").macs(1), 122304u - 28 * 28 * 6);  // the paper's C1 count
  uint64_t expected =
      conv_macs(28, 6, 5, 1) + conv_macs(10, 16, 5, 6) + 400 * 120 + 120 * 84 + 84 * 10;
  EXPECT_EQ(expected, 416520u);
  EXPECT_EQ(g.total_macs(), expected);
}

// torchvision.models.alexnet (single tower): conv1 11x11/4 pad 2 -> 55x55x64, conv2 5x5 192 at
// 27x27, conv3-5 3x3 384, 256, 256 at 13x13, fc 9216 -> 4096 -> 4096 -> 1000.
// Published: torchvision's AlexNet_Weights.IMAGENET1K_V1 lists 0.71 GFLOPS (multiply-adds).
TEST(ZooTest, ZooAlexnet) {
  Graph g = load_workload("alexnet", std::nullopt);
  EXPECT_EQ(g.layers.size(), 13u);
  EXPECT_EQ(layer_named(g, "conv1").out_shape, make_shape({55, 55, 64}));
  EXPECT_EQ(layer_named(g, "pool5").out_shape, make_shape({6, 6, 256}));
  EXPECT_EQ(g.shape_of("probs"), make_shape({1000}));
  uint64_t expected = conv_macs(55, 64, 11, 3) + conv_macs(27, 192, 5, 64) +
                      conv_macs(13, 384, 3, 192) + conv_macs(13, 256, 3, 384) +
                      conv_macs(13, 256, 3, 256) + 9216 * 4096 + 4096 * 4096 + 4096 * 1000;
  EXPECT_EQ(g.total_macs(), expected);
  expect_within_percent(g.total_macs(), 0.71e9, 2);
}

// Simonyan & Zisserman 2015, Table 1 configuration D: 3x3 convs (64x2, 128x2, 256x3, 512x3,
// 512x3) at 224, 112, 56, 28, 14, then 25088 -> 4096 -> 4096 -> 1000.
// Published: torchvision's VGG16_Weights.IMAGENET1K_V1 lists 15.47 GFLOPS.
TEST(ZooTest, ZooVgg16) {
  Graph g = load_workload("vgg16", std::nullopt);
  EXPECT_EQ(g.layers.size(), 23u);
  EXPECT_EQ(count_kind(g, OpKind::kConv), 13);
  EXPECT_EQ(layer_named(g, "pool5").out_shape, make_shape({7, 7, 512}));
  EXPECT_EQ(g.shape_of("probs"), make_shape({1000}));
  const std::array<std::array<int, 3>, 5> blocks = {
      {{224, 64, 2}, {112, 128, 2}, {56, 256, 3}, {28, 512, 3}, {14, 512, 3}}};
  uint64_t expected = 0;
  int cin = 3;
  for (const auto& [size, channels, convs] : blocks) {
    for (int i = 0; i < convs; ++i) {
      expected += conv_macs(size, channels, 3, cin);
      cin = channels;
    }
  }
  expected += 25088 * 4096 + 4096 * 4096 + 4096 * 1000;
  EXPECT_EQ(g.total_macs(), expected);
  expect_within_percent(g.total_macs(), 15.47e9, 2);
}

// He et al. 2016, Table 1, with torchvision's strides (v1.5: the stride-2 of a bottleneck is in
// its 3x3). Stages at 56, 28, 14, 7 with 64, 128, 256, 512 planes.
uint64_t resnet_macs(bool bottleneck, const std::array<int, 4>& blocks) {
  uint64_t macs = conv_macs(112, 64, 7, 3);
  const std::array<int, 4> sizes = {56, 28, 14, 7};
  int in_ch = 64;
  for (int stage = 0; stage < 4; ++stage) {
    int planes = 64 << stage, size = sizes[stage];
    int out_ch = bottleneck ? 4 * planes : planes;
    for (int b = 0; b < blocks[stage]; ++b) {
      int in_size = (b == 0 && stage > 0) ? 2 * size : size;
      if (bottleneck) {
        macs += conv_macs(in_size, planes, 1, in_ch) + conv_macs(size, planes, 3, planes) +
                conv_macs(size, out_ch, 1, planes);
      } else {
        macs += conv_macs(size, planes, 3, in_ch) + conv_macs(size, planes, 3, planes);
      }
      if (in_ch != out_ch || in_size != size) macs += conv_macs(size, out_ch, 1, in_ch);
      in_ch = out_ch;
    }
  }
  return macs + uint64_t(in_ch) * 1000;
}

// Published: the paper's Table 1 gives 1.8 x 10^9 FLOPs (multiply-adds) for ResNet-18;
// torchvision's ResNet18_Weights.IMAGENET1K_V1 lists 1.81 GFLOPS.
TEST(ZooTest, ZooResnet18) {
  Graph g = load_workload("resnet18", std::nullopt);
  // conv1, pool1, 8 blocks x (conv, conv, add), 3 projections, global pool, flatten, fc, softmax
  EXPECT_EQ(g.layers.size(), 2u + 8 * 3 + 3 + 4);
  EXPECT_EQ(count_kind(g, OpKind::kAdd), 8);
  EXPECT_EQ(layer_named(g, "pool1").out_shape, make_shape({56, 56, 64}));
  EXPECT_EQ(layer_named(g, "res5b").out_shape, make_shape({7, 7, 512}));
  EXPECT_EQ(layer_named(g, "res5b").activation, Activation::kRelu);
  EXPECT_EQ(layer_named(g, "pool5").out_shape, make_shape({1, 1, 512}));
  EXPECT_EQ(g.shape_of("probs"), make_shape({1000}));
  EXPECT_EQ(g.total_macs(), resnet_macs(false, {2, 2, 2, 2}));
  expect_within_percent(g.total_macs(), 1.81e9, 2);
}

// Published: torchvision's ResNet50_Weights.IMAGENET1K_V1 lists 4.09 GFLOPS (v1.5; the paper's
// v1, stride in the first 1x1, counts 3.8 x 10^9).
TEST(ZooTest, ZooResnet50) {
  Graph g = load_workload("resnet50", std::nullopt);
  // conv1, pool1, 16 blocks x (3 convs, add), 4 projections, global pool, flatten, fc, softmax
  EXPECT_EQ(g.layers.size(), 2u + 16 * 4 + 4 + 4);
  EXPECT_EQ(count_kind(g, OpKind::kAdd), 16);
  EXPECT_EQ(count_kind(g, OpKind::kConv), 1 + 16 * 3 + 4);
  EXPECT_EQ(layer_named(g, "res2a_branch1").out_shape, make_shape({56, 56, 256}));
  EXPECT_EQ(layer_named(g, "res3a_branch2b").strides[1], 2);  // v1.5: stride in the 3x3
  EXPECT_EQ(layer_named(g, "res3a_branch2b").out_shape, make_shape({28, 28, 128}));
  EXPECT_EQ(layer_named(g, "res5c").out_shape, make_shape({7, 7, 2048}));
  EXPECT_EQ(g.shape_of("probs"), make_shape({1000}));
  EXPECT_EQ(g.total_macs(), resnet_macs(true, {3, 4, 6, 3}));
  expect_within_percent(g.total_macs(), 4.09e9, 2);
}

// Sandler et al. 2018, Table 2: (t, c, n, s) rows; conv 3x3x32/2 first, conv 1x1x1280 last.
// Published: Table 4 and Table 6 of the paper give 300 M multiply-adds for MobileNetV2 (1.0, 224).
TEST(ZooTest, ZooMobilenetv2) {
  Graph g = load_workload("mobilenetv2", std::nullopt);
  struct Row {
    int t, c, n, s;
  };
  const std::array<Row, 7> rows = {{{1, 16, 1, 1},
                                    {6, 24, 2, 2},
                                    {6, 32, 3, 2},
                                    {6, 64, 4, 2},
                                    {6, 96, 3, 1},
                                    {6, 160, 3, 2},
                                    {6, 320, 1, 1}}};
  uint64_t expected = conv_macs(112, 32, 3, 3);
  int in_ch = 32, size = 112, blocks = 0, residuals = 0, expansions = 0;
  for (const auto& r : rows) {
    for (int i = 0; i < r.n; ++i) {
      int stride = i == 0 ? r.s : 1, hidden = in_ch * r.t, out_size = size / stride;
      if (r.t != 1) {
        expected += conv_macs(size, hidden, 1, in_ch);
        ++expansions;
      }
      expected += conv_macs(out_size, hidden, 3, 1);  // depthwise: one input channel per group
      expected += conv_macs(out_size, r.c, 1, hidden);
      if (stride == 1 && in_ch == r.c) ++residuals;
      in_ch = r.c;
      size = out_size;
      ++blocks;
    }
  }
  expected += conv_macs(7, 1280, 1, 320) + 1280 * 1000;
  EXPECT_EQ(blocks, 17);
  EXPECT_EQ(residuals, 10);
  // conv0, 16 expansions, 17 depthwise, 17 projections, 10 adds, conv_last, pool, flatten, fc,
  // softmax
  EXPECT_EQ(g.layers.size(), static_cast<size_t>(1 + expansions + 2 * blocks + residuals + 5));
  EXPECT_EQ(count_kind(g, OpKind::kAdd), residuals);
  int depthwise = 0;
  for (const auto& l : g.layers) {
    if (l.kind == OpKind::kConv && l.groups > 1) {
      ++depthwise;
      EXPECT_EQ(l.groups, l.filters) << l.name;
      EXPECT_EQ(l.groups, l.in_shapes[0].last()) << l.name;
      EXPECT_EQ(l.activation, Activation::kRelu6) << l.name;
    }
    if (l.name.ends_with("_project")) {
      EXPECT_EQ(l.activation, Activation::kNone) << l.name;  // linear bottleneck
    }
  }
  EXPECT_EQ(depthwise, 17);
  EXPECT_EQ(layer_named(g, "conv_last").out_shape, make_shape({7, 7, 1280}));
  EXPECT_EQ(g.shape_of("probs"), make_shape({1000}));
  EXPECT_EQ(g.total_macs(), expected);
  expect_within_percent(g.total_macs(), 300e6, 2);
}

// Devlin et al. 2019 (BERT-base: hidden 768, 12 heads, FFN 3072) at sequence 128. Per layer:
// Q, K, V and output projections 4 * s * h^2, FFN 2 * s * h * 4h, scores and context
// 2 * s^2 * h: 12 s h^2 + 2 s^2 h = 931,135,488 MACs.
TEST(ZooTest, ZooBertEncoder) {
  Graph g = load_workload("bert-encoder", std::nullopt);
  const uint64_t s = 128, h = 768;
  EXPECT_EQ(g.input_shape, make_shape({128, 768}));
  // In the form exporters write: query, key, value (dense 768 each), each reshaped to
  // [128, 12, 64] and transposed to [12, 128, 64]; scores, softmax, context batched over the
  // heads; transpose back, reshape to [128, 768]; dense, add, layernorm, dense + GELU, dense,
  // add, layernorm.
  EXPECT_EQ(g.layers.size(), 21u);
  EXPECT_EQ(count_kind(g, OpKind::kDense), 6);
  EXPECT_EQ(count_kind(g, OpKind::kMatMul), 2);
  EXPECT_EQ(count_kind(g, OpKind::kSoftmax), 1);
  EXPECT_EQ(count_kind(g, OpKind::kMove), 4);
  EXPECT_EQ(count_kind(g, OpKind::kLayerNorm), 2);
  EXPECT_EQ(count_kind(g, OpKind::kConcat), 0);
  for (const char* p : {"query", "key", "value"}) {
    EXPECT_EQ(layer_named(g, p).filters, 768) << p;
    EXPECT_EQ(layer_named(g, std::string(p) + "_heads").out_shape, make_shape({12, 128, 64})) << p;
  }
  // Head 2's query row 5 is columns 128..191 of the projection's row 5.
  const Layer& heads = layer_named(g, "query_heads");
  EXPECT_EQ(heads.move_op, "transpose");
  EXPECT_EQ(heads.move_from[(2 * 128 + 5) * 64 + 7].element, 5 * 768 + 2 * 64 + 7);
  EXPECT_TRUE(layer_named(g, "scores").transpose_b);
  EXPECT_EQ(layer_named(g, "scores").out_shape, make_shape({12, 128, 128}));
  EXPECT_EQ(layer_named(g, "probs").out_shape, make_shape({12, 128, 128}));
  EXPECT_EQ(layer_named(g, "context_heads").out_shape, make_shape({12, 128, 64}));
  EXPECT_EQ(layer_named(g, "context_split").out_shape, make_shape({128, 12, 64}));
  EXPECT_EQ(layer_named(g, "context").out_shape, make_shape({128, 768}));
  EXPECT_EQ(layer_named(g, "intermediate").out_shape, make_shape({128, 3072}));
  EXPECT_EQ(layer_named(g, "intermediate").activation, Activation::kGelu);
  EXPECT_EQ(g.outputs, std::vector<std::string>{"output_norm"});
  EXPECT_EQ(g.shape_of("output_norm"), make_shape({128, 768}));
  EXPECT_EQ(g.total_macs(), 12 * s * h * h + 2 * s * s * h);
  EXPECT_EQ(g.total_macs(), 931135488u);
}

}  // namespace
}  // namespace npusim
