// int8 calibration (compiler/passes/quantize.hpp): the statistic a scale is chosen from, a
// calibration batch separate from the run's, and the float32 reference accuracy is measured
// against (compiler/reference/reference_bf16.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "arch/float_ops.hpp"
#include "compiler/frontend/json_graph.hpp"
#include "compiler/passes/fusion.hpp"
#include "compiler/passes/parameters.hpp"
#include "compiler/passes/quantize.hpp"
#include "compiler/reference/reference.hpp"
#include "compiler/reference/reference_bf16.hpp"
#include "support/json_reader.hpp"

namespace npusim {
namespace {

Graph prepared(const std::string& text, uint64_t seed) {
  Graph g = parse_workload(json::parse(text), "test");
  materialize_parameters(g, seed);
  optimize_graph(g);
  return g;
}

const char* kMlp = R"({"schema_version": 1, "batch": 4, "input": {"shape": [64], "scale": 0.03},
    "layers": [{"name": "h", "op": "dense", "units": 32, "activation": "relu"},
               {"name": "t", "op": "dense", "units": 16, "activation": "tanh"},
               {"name": "y", "op": "dense", "units": 8}]})";

const CalibrationOptions kMax{};
CalibrationOptions percentile(double p) { return {CalibrationMethod::kPercentile, p}; }

TEST(Calibration, MagnitudeIsTheMaximumOrTheNearestRankPercentile) {
  std::vector<float> v;
  for (int i = 1; i <= 1000; ++i) v.push_back(i % 2 ? float(i) : -float(i));
  std::reverse(v.begin(), v.end());
  EXPECT_EQ(calibration_magnitude(v, kMax), 1000.0f);
  // Nearest rank: the ceil(P / 100 * n)-th smallest magnitude.
  EXPECT_EQ(calibration_magnitude(v, percentile(99.0)), 990.0f);
  EXPECT_EQ(calibration_magnitude(v, percentile(99.95)), 1000.0f);  // rank ceil(999.5) = 1000
  EXPECT_EQ(calibration_magnitude(v, percentile(50.0)), 500.0f);
  EXPECT_EQ(calibration_magnitude(v, percentile(100.0)), 1000.0f);
  EXPECT_EQ(calibration_magnitude({}, percentile(99.0)), 0.0f);
}

// A batch of small inputs with one outlier sample: the max method spends the int8 range on the
// outlier, the percentile method on the bulk (its values saturate instead).
TEST(Calibration, PercentileGivesSmallerScalesThanMaxOnAHeavyTailedInput) {
  const Graph g = prepared(kMlp, 3);
  const int samples = 200;
  std::vector<int8_t> x(size_t(samples) * 64);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<int8_t>(int(i * 7919 % 17) - 8);
  for (int i = 0; i < 64; ++i) x[i] = i % 2 ? 127 : -128;  // sample 0: the tail
  Graph by_max = g, by_percentile = g;
  quantize_graph(by_max, x, samples, kMax);
  quantize_graph(by_percentile, x, samples, percentile(99.0));
  for (size_t i = 0; i < g.layers.size(); ++i) {
    const Layer &a = by_max.layers[i], &b = by_percentile.layers[i];
    EXPECT_LT(b.mid_scale, a.mid_scale * 0.5f) << a.name;
  }
  // The input of the same idea at the graph boundary: the float values' percentile.
  std::vector<float> real(x.begin(), x.end());
  EXPECT_LT(calibration_magnitude(real, percentile(99.0)), 10.0f);
  EXPECT_EQ(calibration_magnitude(real, kMax), 128.0f);
}

// The default overload is today's behaviour: the run's own input, the largest magnitude.
TEST(Calibration, DefaultCalibratesOnTheRunsInputWithTheMaximum) {
  const Graph g = prepared(kMlp, 4);
  const std::vector<int8_t> x = make_random_input(g, 4);
  Graph a = g, b = g;
  quantize_graph(a, x);
  quantize_graph(b, x, g.batch, kMax);
  for (size_t i = 0; i < g.layers.size(); ++i) {
    EXPECT_EQ(a.layers[i].out_scale, b.layers[i].out_scale);
    EXPECT_EQ(a.layers[i].mid_scale, b.layers[i].mid_scale);
  }
}

// A separate calibration batch (of another size than the run's) sets other scales, and the
// quantized graph then runs any batch.
TEST(Calibration, ASeparateBatchSetsOtherScales) {
  const Graph g = prepared(kMlp, 5);
  Graph small = g;
  small.batch = 3;
  Graph own = g, separate = g;
  quantize_graph(own, make_random_input(g, 5));
  std::vector<int8_t> c = make_random_input(small, 77);
  for (auto& v : c) v = static_cast<int8_t>(v / 4);  // a narrower calibration batch
  quantize_graph(separate, c, 3, kMax);
  EXPECT_LT(separate.layers[0].out_scale, own.layers[0].out_scale * 0.5f);
  const auto y = run_reference(separate, make_random_input(g, 5));
  EXPECT_EQ(y.at("y").size(), size_t(g.batch) * 8);
}

// The float32 reference is the real-valued network: a dense layer by hand, in fp32.
TEST(FloatReference, DenseLayerIsThePlainFp32Sum) {
  Graph g = prepared(R"({"schema_version": 1, "batch": 2, "input": {"shape": [5]},
      "layers": [{"name": "y", "op": "dense", "units": 3, "activation": "sigmoid"}]})",
                     9);
  const std::vector<float> x{0.1f, -0.7f, 1.3f, 0.01f, 2.5f, -1.f, 0.3f, 0.25f, -0.125f, 0.9f};
  const std::vector<float> y = run_reference_f32(g, x).at("y");
  const Layer& l = g.layers[0];
  for (int b = 0; b < 2; ++b)
    for (int n = 0; n < 3; ++n) {
      float acc = 0.0f;
      for (int k = 0; k < 5; ++k) acc += x[b * 5 + k] * l.weights[k * 3 + n];
      EXPECT_EQ(y[b * 3 + n], apply_activation(Activation::kSigmoid, acc + l.bias[n], 0, 0));
    }
}

// On a small CNN, the float32 graph and the bf16 reference differ by bf16 rounding only: within
// a few bf16 steps (2^-8 relative) of each output's range, and not identical (the float one
// does not round).
TEST(FloatReference, AgreesWithTheBf16ReferenceWithinBf16Rounding) {
  const Graph g = prepared(R"({"schema_version": 1, "batch": 2, "input": {"shape": [10, 10, 3]},
      "layers": [{"name": "c1", "op": "conv2d", "filters": 8, "kernel": [3, 3]},
                 {"name": "bn", "op": "batchnorm"},
                 {"name": "r", "op": "relu"},
                 {"name": "p", "op": "maxpool", "pool": [2, 2], "strides": [2, 2]},
                 {"name": "c2", "op": "conv2d", "filters": 8, "kernel": [3, 3], "activation": "tanh"},
                 {"name": "f", "op": "flatten"},
                 {"name": "d", "op": "dense", "units": 10},
                 {"name": "s", "op": "softmax"}],
      "outputs": ["d", "s"]})",
                           11);
  std::vector<float> x(2 * 300);
  for (size_t i = 0; i < x.size(); ++i) x[i] = round_to_bf16(std::sin(0.37f * i) * 1.7f);
  const auto f32 = run_reference_f32(g, x);
  Graph b = g;
  prepare_bf16(b);
  const auto bf = run_reference_bf16(b, x);
  for (const char* name : {"d", "s"}) {
    const auto &u = f32.at(name), &v = bf.at(name);
    ASSERT_EQ(u.size(), v.size());
    float range = 0.0f, worst = 0.0f;
    bool all_bf16 = true;
    for (size_t i = 0; i < u.size(); ++i) {
      range = std::max(range, std::fabs(u[i]));
      worst = std::max(worst, std::fabs(u[i] - v[i]));
      all_bf16 = all_bf16 && round_to_bf16(u[i]) == u[i];
    }
    EXPECT_LT(worst, range * 4.0f / 256.0f) << name;
    EXPECT_GT(worst, 0.0f) << name;
    EXPECT_FALSE(all_bf16) << name << ": the float reference rounded to bf16";
  }
}

}  // namespace
}  // namespace npusim
