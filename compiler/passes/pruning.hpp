// Weight pruning (docs/compression.md): the weights of convolutions and dense layers set to zero
// by magnitude, per layer or over the whole network, or to an N:M structure along the reduction
// axis (at most N non-zeros in every M consecutive weights of an output channel), as sparse tensor
// cores need it (NVIDIA's 2:4). Runs on the real-valued weights before batch norms fold and
// before quantization, so the reference computes with the same pruned weights.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/graph.hpp"

namespace npusim {

struct PruneSpec {
  enum class Kind { kNone, kMagnitude, kGlobal, kStructured };
  Kind kind = Kind::kNone;
  double fraction = 0;  // magnitude / global: the fraction of weights set to zero, [0, 1)
  int n = 0, m = 0;     // structured: at most n non-zeros in every m
  std::string text;     // as given ("magnitude:0.5", "global:0.3", "2:4")
};

// Parses --prune's value; a UserError names what was expected.
PruneSpec parse_prune_spec(const std::string& text);

// A layer's weights as the pass leaves them (or finds them, for a model that comes pruned).
struct WeightSparsity {
  std::string layer;
  uint64_t weights = 0;
  uint64_t nonzeros = 0;
  // The smallest n (of m = 4) with at most n non-zeros in every 4 consecutive weights of an output
  // channel along the reduction axis: 4 means no 1:4, 2:4 or 3:4 structure.
  int nonzeros_per_4 = 4;
  double density() const { return weights ? double(nonzeros) / double(weights) : 1.0; }
};

// Layers whose weights take part: convolutions and dense layers with weights stored in the graph.
bool prunable(const Layer& layer);

// Prunes the graph's prunable layers. Weights drawn on demand are drawn first (pruning needs
// them all). Ties in magnitude are broken by position (layer order, then index), so a run is
// deterministic.
void prune_weights(Graph& graph, const PruneSpec& spec);

// The sparsity of every prunable layer whose weights are stored (a model's file, or after
// pruning); layers with weights drawn on demand (the generated ones) are not counted.
std::vector<WeightSparsity> weight_sparsity(const Graph& graph);

}  // namespace npusim
