// Weight pruning (compiler/passes/pruning): the spec's parser, magnitude pruning per layer and
// over the whole network, N:M structure along the reduction axis, and the sparsity report,
// against counts worked out independently of the pass (sorted copies of the weights).
#include "compiler/passes/pruning.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "compiler/frontend/json_graph.hpp"
#include "compiler/passes/parameters.hpp"
#include "support/error.hpp"
#include "support/json_reader.hpp"

namespace npusim {
namespace {

// A convolution (3x3x4 -> 8, stride 2 on 6x6: 36 reduction rows, a 2x2x8 output) and a dense
// layer (32 -> 10: 32 reduction rows).
Graph small_net() {
  Graph g = parse_workload(json::parse(R"({"schema_version": 1, "input": {"shape": [6, 6, 4]},
    "layers": [{"name": "c", "op": "conv2d", "filters": 8, "kernel": [3, 3], "strides": [2, 2]},
               {"name": "f", "op": "flatten"},
               {"name": "d", "op": "dense", "units": 10}]})"),
                           "test");
  materialize_parameters(g, 11, WeightStorage::kOnDemand);
  return g;
}

uint64_t zeros(const std::vector<float>& w) {
  return uint64_t(std::count(w.begin(), w.end(), 0.0f));
}

TEST(Pruning, ParsesTheThreeForms) {
  EXPECT_EQ(parse_prune_spec("magnitude:0.5").kind, PruneSpec::Kind::kMagnitude);
  EXPECT_DOUBLE_EQ(parse_prune_spec("global:0.25").fraction, 0.25);
  const PruneSpec s = parse_prune_spec("2:4");
  EXPECT_EQ(s.kind, PruneSpec::Kind::kStructured);
  EXPECT_EQ(s.n, 2);
  EXPECT_EQ(s.m, 4);
  for (const char* bad : {"", "magnitude", "magnitude:1", "global:-0.1", "global:x", "4:2", "0:4",
                          "2:128", "2:4:8", "half"}) {
    EXPECT_THROW(parse_prune_spec(bad), UserError) << bad;
  }
  try {
    parse_prune_spec("3:3");
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--prune '3:3': expected magnitude:F", 0), 0u)
        << e.what();
  }
}

TEST(Pruning, MagnitudeZeroesTheSmallestFractionOfEachLayer) {
  Graph g = small_net();
  prune_weights(g, parse_prune_spec("magnitude:0.75"));
  for (const Layer& l : g.layers) {
    if (!prunable(l)) continue;
    const uint64_t n = l.weights.size();
    EXPECT_EQ(zeros(l.weights), uint64_t(0.75 * double(n))) << l.name;
    // Every weight kept is at least as large as every weight dropped: compare with a sorted copy
    // of the layer drawn again, unpruned.
    Graph fresh = small_net();
    const Layer* orig = nullptr;
    for (Layer& f : fresh.layers) {
      if (f.name == l.name) {
        draw_weights(f, UINT64_MAX);
        orig = &f;
      }
    }
    ASSERT_NE(orig, nullptr);
    std::vector<float> mags;
    for (float w : orig->weights) mags.push_back(std::fabs(w));
    std::sort(mags.begin(), mags.end());
    const float threshold = mags[uint64_t(0.75 * double(n))];  // smallest magnitude kept
    for (size_t i = 0; i < n; ++i) {
      if (l.weights[i] != 0.0f) {
        EXPECT_EQ(l.weights[i], orig->weights[i]);
        EXPECT_GE(std::fabs(l.weights[i]), threshold);
      } else {
        EXPECT_LE(std::fabs(orig->weights[i]), threshold);
      }
    }
  }
}

TEST(Pruning, GlobalUsesOneThresholdForTheWholeNetwork) {
  Graph g = small_net();
  Graph fresh = small_net();
  std::vector<float> all;
  for (Layer& l : fresh.layers) {
    if (!prunable(l)) continue;
    draw_weights(l, UINT64_MAX);
    for (float w : l.weights) all.push_back(std::fabs(w));
  }
  std::sort(all.begin(), all.end());
  const auto k = uint64_t(0.6 * double(all.size()));
  prune_weights(g, parse_prune_spec("global:0.6"));
  uint64_t zeroed = 0, per_layer_differs = 0;
  for (const Layer& l : g.layers) {
    if (!prunable(l)) continue;
    zeroed += zeros(l.weights);
    for (float w : l.weights) {
      if (w != 0.0f) {
        EXPECT_GE(std::fabs(w), all[k - 1]);
      }
    }
    per_layer_differs += zeros(l.weights) != uint64_t(0.6 * double(l.weights.size()));
  }
  EXPECT_EQ(zeroed, k);
  EXPECT_GT(per_layer_differs, 0u) << "the layers' scales differ, so their shares do";
}

TEST(Pruning, TwoOfFourAlongTheReductionAxis) {
  Graph g = small_net();
  prune_weights(g, parse_prune_spec("2:4"));
  const auto report = weight_sparsity(g);
  ASSERT_EQ(report.size(), 2u);
  for (const Layer& l : g.layers) {
    if (!prunable(l)) continue;
    const size_t rows = l.reduction(), cols = size_t(l.filters);
    for (size_t o = 0; o < cols; ++o) {
      for (size_t r0 = 0; r0 < rows; r0 += 4) {
        int nz = 0;
        for (size_t r = r0; r < std::min(rows, r0 + 4); ++r) nz += l.weights[r * cols + o] != 0;
        EXPECT_EQ(nz, 2) << l.name << " channel " << o << " rows " << r0;
      }
    }
  }
  // 36 and 32 rows are multiples of 4: exactly half of each layer is left.
  for (const auto& s : report) {
    EXPECT_DOUBLE_EQ(s.density(), 0.5) << s.layer;
    EXPECT_EQ(s.nonzeros_per_4, 2) << s.layer;
  }
}

TEST(Pruning, SparsityOfStoredWeightsIsReportedWithoutPruning) {
  Graph g = small_net();
  EXPECT_TRUE(weight_sparsity(g).empty()) << "generated weights drawn on demand are not counted";
  for (Layer& l : g.layers) {
    if (!prunable(l)) continue;
    draw_weights(l, UINT64_MAX);
    // A model that comes pruned 1:4: keep the first of every four rows.
    const size_t cols = size_t(l.filters);
    for (size_t i = 0; i < l.weights.size(); ++i) {
      if ((i / cols) % 4 != 0) l.weights[i] = 0.0f;
    }
  }
  const auto report = weight_sparsity(g);
  ASSERT_EQ(report.size(), 2u);
  EXPECT_EQ(report[0].layer, "c");
  EXPECT_EQ(report[0].weights, 36u * 8);
  EXPECT_EQ(report[0].nonzeros, 9u * 8);
  EXPECT_EQ(report[0].nonzeros_per_4, 1);
  EXPECT_EQ(report[1].nonzeros, 8u * 10);
}

}  // namespace
}  // namespace npusim
