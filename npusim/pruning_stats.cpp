#include "npusim/pruning_stats.hpp"

namespace npusim {

void register_pruning(stats::Registry& reg, const RunDescription& run) {
  const auto& s = run.weight_sparsity;
  uint64_t weights = 0, nonzeros = 0;
  for (const auto& l : s) {
    weights += l.weights;
    nonzeros += l.nonzeros;
  }
  reg.value("pruning.method", "",
            "--prune as given: magnitude:F, global:F, N:M, or none (docs/compression.md)",
            run.prune);
  reg.value("pruning.counted_weights", "count",
            "weights of the convolution and dense layers counted below: those stored (a model "
            "file's, or drawn for pruning); generated weights drawn on demand are not counted",
            weights);
  reg.value("pruning.nonzero_weights", "count", "of the counted weights, those not zero", nonzeros);
  reg.value("pruning.weight_density", "ratio",
            "nonzero_weights / counted_weights (1 when none were counted)",
            weights ? double(nonzeros) / double(weights) : 1.0);
  const size_t n = s.size();
  reg.column("weight_sparsity", n, "layer", "", "a convolution or dense layer with stored weights",
             [&s](size_t i) { return s[i].layer; });
  reg.column("weight_sparsity", n, "weights", "count", "its weights",
             [&s](size_t i) { return s[i].weights; });
  reg.column("weight_sparsity", n, "nonzeros", "count", "its weights that are not zero",
             [&s](size_t i) { return s[i].nonzeros; });
  reg.column("weight_sparsity", n, "density", "ratio", "nonzeros / weights",
             [&s](size_t i) { return s[i].density(); });
  reg.column("weight_sparsity", n, "nonzeros_per_4", "count",
             "the most non-zeros in any 4 consecutive weights of an output channel along the "
             "reduction axis (2: the layer has the 2:4 structure sparse tensor cores use)",
             [&s](size_t i) { return s[i].nonzeros_per_4; });
}

}  // namespace npusim
