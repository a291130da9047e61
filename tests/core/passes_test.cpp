// Graph passes: batch-norm folding, activation fusion, and int8 calibration.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "compiler/frontend/json_graph.hpp"
#include "compiler/passes/fusion.hpp"
#include "compiler/passes/parameters.hpp"
#include "compiler/passes/quantize.hpp"
#include "compiler/reference/reference.hpp"
#include "support/json_reader.hpp"

namespace npusim {
namespace {

Graph graph_of(const std::string& text) { return parse_workload(json::parse(text), "test"); }

TEST(Passes, BatchNormFoldsIntoTheConvolution) {
  Graph g = graph_of(R"({"schema_version": 1, "input": {"shape": [4, 4, 2]},
    "layers": [{"name": "c", "op": "conv2d", "filters": 3, "kernel": [1, 1]},
               {"name": "bn", "op": "batchnorm", "epsilon": 0.001},
               {"name": "r", "op": "relu"}]})");
  materialize_parameters(g, 3);
  const Layer conv = g.layers[0], bn = g.layers[1];
  optimize_graph(g);
  ASSERT_EQ(g.layers.size(), 1u);
  const Layer& f = g.layers[0];
  EXPECT_EQ(f.output, "r");
  EXPECT_EQ(f.activation, Activation::kRelu);
  EXPECT_EQ(f.fused, (std::vector<std::string>{"bn", "r"}));
  // Folded: w' = w * gamma / sqrt(var + eps), b' = (b - mean) * gamma / sqrt(var + eps) + beta.
  for (int n = 0; n < 3; ++n) {
    const float k = bn.gamma[n] / std::sqrt(bn.variance[n] + 0.001f);
    for (int c = 0; c < 2; ++c) EXPECT_FLOAT_EQ(f.weights[c * 3 + n], conv.weights[c * 3 + n] * k);
    EXPECT_FLOAT_EQ(f.bias[n], (conv.bias[n] - bn.mean[n]) * k + bn.beta[n]);
  }
}

TEST(Passes, ActivationFusesOnlyWhenNothingElseReadsTheTensor) {
  Graph g = graph_of(R"({"schema_version": 1, "input": {"shape": [8]},
    "layers": [{"name": "d", "op": "dense", "units": 4},
               {"name": "a", "op": "sigmoid"},
               {"name": "e", "op": "dense", "inputs": ["d"], "units": 4}],
    "outputs": ["a", "e"]})");
  materialize_parameters(g, 1);
  optimize_graph(g);
  EXPECT_EQ(g.layers.size(), 3u) << "d is read twice: the sigmoid stays a layer of its own";
}

// The quantized network tracks the real-valued one: a two-layer MLP against float math.
TEST(Passes, CalibratedInt8TracksTheRealNetwork) {
  Graph g = graph_of(R"({"schema_version": 1, "batch": 16, "input": {"shape": [64], "scale": 0.03},
    "layers": [{"name": "h", "op": "dense", "units": 32, "activation": "relu"},
               {"name": "y", "op": "dense", "units": 8}]})");
  materialize_parameters(g, 5);
  optimize_graph(g);
  const Graph real = g;
  const Tensor8 x = make_random_input(g, 5);
  quantize_graph(g, x);
  const Tensor8 y = run_reference(g, x).at("y");
  double err = 0.0, norm = 0.0;
  for (int b = 0; b < 16; ++b) {
    std::vector<float> h(32);
    for (int j = 0; j < 32; ++j) {
      float s = real.layers[0].bias[j];
      for (int i = 0; i < 64; ++i) s += x[b * 64 + i] * 0.03f * real.layers[0].weights[i * 32 + j];
      h[j] = std::max(s, 0.0f);
    }
    for (int j = 0; j < 8; ++j) {
      float s = real.layers[1].bias[j];
      for (int i = 0; i < 32; ++i) s += h[i] * real.layers[1].weights[i * 8 + j];
      err += std::pow(y[b * 8 + j] * g.layers[1].out_scale - s, 2);
      norm += s * s;
    }
  }
  EXPECT_LT(std::sqrt(err / norm), 0.05) << "relative RMS error of int8 vs float";
}

// Every tensor of the operator-coverage network carries information after calibration.
TEST(Passes, CalibrationKeepsEveryTensorInformative) {
  Graph g = parse_workload(parse_json_file(std::string(NPUSIM_E2E_DATA) + "/all_ops.json"),
                           "all_ops.json");
  materialize_parameters(g, 1);
  optimize_graph(g);
  const Tensor8 x = make_random_input(g, 1);
  quantize_graph(g, x);
  for (const auto& [name, t] : run_reference(g, x)) {
    std::set<int8_t> distinct(t.begin(), t.end());
    EXPECT_GE(distinct.size(), std::min<size_t>(t.size() / 4, 8)) << name;
  }
}

// A conv with a batch norm folded into it and the operator-coverage network: the weights drawn
// on demand are the stored ones and quantize to the same bytes.
TEST(Passes, WeightsDrawnOnDemandEqualStoredOnes) {
  const Graph bn = graph_of(R"({"schema_version": 1, "input": {"shape": [6, 6, 5]},
    "layers": [{"name": "c", "op": "conv2d", "filters": 7, "kernel": [3, 3]},
               {"name": "bn", "op": "batchnorm"}, {"name": "r", "op": "relu"},
               {"name": "d", "op": "dense", "units": 9, "activation": "sigmoid"}]})");
  const Graph ops = parse_workload(parse_json_file(std::string(NPUSIM_E2E_DATA) + "/all_ops.json"),
                                   "all_ops.json");
  for (const Graph& original : {bn, ops}) {
    Graph stored = original, on_demand = original;
    materialize_parameters(stored, 11);
    materialize_parameters(on_demand, 11, WeightStorage::kOnDemand);
    optimize_graph(stored);
    optimize_graph(on_demand);
    int drawn = 0;
    for (size_t i = 0; i < stored.layers.size(); ++i) {
      const Layer &a = stored.layers[i], &b = on_demand.layers[i];
      if (!a.has_weights()) continue;
      drawn += b.weight_draw.pending;
      std::vector<float> rows;
      for_each_weight_row(
          b, [&](size_t, const float* w) { rows.insert(rows.end(), w, w + b.filters); });
      EXPECT_EQ(rows, a.weights) << a.name;
    }
    EXPECT_GE(drawn, 2) << original.name;
    Graph stored16 = stored, on_demand16 = on_demand;
    const Tensor8 x = make_random_input(stored, 2);
    quantize_graph(stored, x);
    quantize_graph(on_demand, x);
    prepare_bf16(stored16);
    prepare_bf16(on_demand16);
    ASSERT_EQ(stored.layers.size(), on_demand.layers.size());
    for (size_t i = 0; i < stored.layers.size(); ++i) {
      const Layer &a = stored.layers[i], &b = on_demand.layers[i];
      EXPECT_TRUE(b.weights.empty()) << b.name;
      EXPECT_EQ(a.qweights, b.qweights) << a.name;
      EXPECT_EQ(a.qbias, b.qbias) << a.name;
      EXPECT_EQ(a.out_scale, b.out_scale) << a.name;
      EXPECT_EQ(stored16.layers[i].bf16_weights, on_demand16.layers[i].bf16_weights) << a.name;
    }
  }
}

// The calibration's tensors are the reference's: the run's check reuses them.
TEST(Passes, CalibrationTensorsAreTheReferenceTensors) {
  Graph g = parse_workload(parse_json_file(std::string(NPUSIM_E2E_DATA) + "/all_ops.json"),
                           "all_ops.json");
  materialize_parameters(g, 4, WeightStorage::kOnDemand);
  optimize_graph(g);
  const Tensor8 x = make_random_input(g, 4);
  std::map<std::string, Tensor8> calibration;
  quantize_graph(g, x, g.batch, CalibrationOptions{}, &calibration);
  const std::map<std::string, Tensor8> reference = run_reference(g, x);
  EXPECT_EQ(calibration, reference);
  EXPECT_EQ(calibration.size(), g.layers.size() + 1);
}

// Timing-only quantization runs no reference but gives every layer the same shape of
// parameters (the lowering emits the same instructions; tests/e2e/values_off_test.cpp runs them).
TEST(Passes, TimingOnlyQuantizationKeepsTheParametersShapes) {
  Graph g = parse_workload(parse_json_file(std::string(NPUSIM_E2E_DATA) + "/all_ops.json"),
                           "all_ops.json");
  materialize_parameters(g, 1, WeightStorage::kOnDemand);
  optimize_graph(g);
  Graph timing = g;
  quantize_graph(g, make_random_input(g, 1));
  quantize_graph_for_timing(timing);
  EXPECT_TRUE(timing.quantized);
  for (size_t i = 0; i < g.layers.size(); ++i) {
    const Layer &a = g.layers[i], &b = timing.layers[i];
    // The weights are left empty: the lowering gives them their size without contents.
    if (a.kind == OpKind::kEmbedding) {
      EXPECT_EQ(a.qweights.size(), b.qweights.size()) << a.name;
    } else {
      EXPECT_TRUE(b.qweights.empty()) << a.name;
    }
    EXPECT_EQ(a.qbias.size(), b.qbias.size()) << a.name;
    EXPECT_EQ(a.requant.size(), b.requant.size()) << a.name;
    EXPECT_EQ(a.lut.size(), b.lut.size()) << a.name;
    EXPECT_EQ(a.input_ratios.size(), b.input_ratios.size()) << a.name;
    EXPECT_EQ(a.in_scales.size(), b.in_scales.size()) << a.name;
    EXPECT_GT(b.out_scale, 0.0f) << a.name;
  }
}

}  // namespace
}  // namespace npusim
