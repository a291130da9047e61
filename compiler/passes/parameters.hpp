// Parameters and inputs a workload does not give, drawn deterministically from a seed.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/ir/graph.hpp"

namespace npusim {

// Deterministic pseudo-random real-valued weights and biases for layers that have none (He-style
// uniform, so activations keep their spread through deep networks). Each layer's values depend
// only on the seed and the layer's name.
void materialize_parameters(Graph& graph, uint64_t seed);
// A deterministic pseudo-random int8 input batch (batch x elements, row-major).
std::vector<int8_t> make_random_input(const Graph& graph, uint64_t seed);

}  // namespace npusim
