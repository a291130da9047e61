// stats.json's `pruning` section and `weight_sparsity` table (docs/compression.md): what --prune
// asked for and how sparse each layer's weights are.
#pragma once

#include "npusim/simulate.hpp"
#include "support/stats.hpp"

namespace npusim {

void register_pruning(stats::Registry& reg, const RunDescription& run);

}  // namespace npusim
