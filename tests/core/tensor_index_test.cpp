// The tensor index of the fusion passes (compiler/passes/tensor_index.hpp) against a scan of the
// layers, on a random graph and after the edits a pass makes.
#include "compiler/passes/tensor_index.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "support/error.hpp"

namespace npusim {
namespace {

Layer layer(const std::string& name, std::vector<std::string> inputs) {
  Layer l;
  l.name = name;
  l.output = name;
  l.inputs = std::move(inputs);
  return l;
}

// What the passes scanned the layers for before the index.
std::vector<TensorIndex::Reader> scanned_readers(const Graph& g, const std::string& tensor) {
  std::vector<TensorIndex::Reader> r;
  for (size_t i = 0; i < g.layers.size(); ++i)
    for (size_t k = 0; k < g.layers[i].inputs.size(); ++k)
      if (g.layers[i].inputs[k] == tensor) r.push_back({int(i), int(k)});
  return r;
}

int scanned_producer(const Graph& g, const std::string& tensor) {
  for (size_t i = 0; i < g.layers.size(); ++i)
    if (g.layers[i].output == tensor) return int(i);
  return -1;
}

void expect_index_matches_scan(const Graph& g, const TensorIndex& index) {
  std::vector<std::string> tensors{g.input_name};
  for (const Layer& l : g.layers) tensors.push_back(l.output);
  for (const std::string& t : tensors) {
    EXPECT_EQ(index.producer(t), scanned_producer(g, t)) << t;
    EXPECT_EQ(index.readers(t), scanned_readers(g, t)) << t;
    const int outputs = int(std::count(g.outputs.begin(), g.outputs.end(), t));
    EXPECT_EQ(index.uses(t), int(scanned_readers(g, t).size()) + outputs) << t;
  }
}

TEST(TensorIndex, ProducersReadersAndUsesAreThoseAScanFinds) {
  std::mt19937 rng(5);
  Graph g;
  g.input_name = "x";
  for (int i = 0; i < 200; ++i) {
    std::vector<std::string> inputs;
    for (int k = 0, n = 1 + int(rng() % 3); k < n; ++k) {
      const int from = int(rng() % unsigned(i + 1)) - 1;  // -1: the graph input
      inputs.push_back(from < 0 ? "x" : g.layers[size_t(from)].output);
    }
    g.layers.push_back(layer(fmt::format("t{}", i), inputs));
  }
  g.outputs = {"t199", "t150", "t150"};
  expect_index_matches_scan(g, TensorIndex(g));
}

// A fold as fold_moves makes it: the readers of t1 read its input instead, t1 is removed; then a
// fusion as fuse_epilogues makes it: t3 takes t2's place's work and t2 is removed.
TEST(TensorIndex, EditsAndRemovalKeepItEqualToAScan) {
  Graph g;
  g.input_name = "x";
  g.layers = {layer("t0", {"x"}), layer("t1", {"t0"}), layer("t2", {"t1", "x"}),
              layer("t3", {"t2", "t1"})};
  g.outputs = {"t3"};
  TensorIndex index(g);
  for (const auto& [position, k] : std::vector<TensorIndex::Reader>(index.readers("t1"))) {
    index.forget_reads(g.layers[size_t(position)], position);
    g.layers[size_t(position)].inputs[size_t(k)] = "t0";
    index.enter_reads(g.layers[size_t(position)], position);
  }
  index.remove(g.layers[1], 1);
  EXPECT_EQ(index.readers("t0"), (std::vector<TensorIndex::Reader>{{2, 0}, {3, 1}}));
  EXPECT_EQ(index.producer("t1"), -1);
  EXPECT_EQ(index.uses("t3"), 1);
  // t2 becomes part of t3's layer, which now writes t3 from t2's place's inputs.
  index.forget_reads(g.layers[2], 2);
  index.forget_reads(g.layers[3], 3);
  g.layers[3].inputs = {"t0", "x", "t0"};
  index.enter_reads(g.layers[3], 3);
  index.drop_producer("t2");
  index.mark_removed(2);
  index.erase_removed(g);
  ASSERT_EQ(g.layers.size(), 2u);
  EXPECT_EQ(g.layers[0].name, "t0");
  EXPECT_EQ(g.layers[1].name, "t3");
  EXPECT_EQ(TensorIndex(g).readers("t0"), (std::vector<TensorIndex::Reader>{{1, 0}, {1, 2}}));
  EXPECT_THROW(index.mark_removed(2), InternalError);
}

}  // namespace
}  // namespace npusim
