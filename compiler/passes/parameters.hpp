// Parameters and inputs a workload does not give, drawn deterministically from a seed.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "compiler/ir/graph.hpp"

namespace npusim {

// Deterministic pseudo-random real-valued weights and biases for layers that have none (He-style
// uniform, so activations keep their spread through deep networks). Each layer's values depend
// only on the seed and the layer's name.
// kOnDemand keeps generated weights out of memory (VGG-16's are 553 MB as floats):
// for_each_weight_row draws them when a pass needs them, the same values as kStored.
enum class WeightStorage { kStored, kOnDemand };
void materialize_parameters(Graph& graph, uint64_t seed,
                            WeightStorage storage = WeightStorage::kStored);
// Calls f(row, values) for each of the layer's reduction() rows of `filters` real-valued weights,
// in order: the stored weights, or the generated ones drawn again (the buffer is reused between
// calls).
void for_each_weight_row(const Layer& layer, const std::function<void(size_t, const float*)>& f);
// Draws a layer's pending weights into `weights` if they are at most `max_values` (the
// for_each_weight_row values); true if it did.
bool draw_weights(Layer& layer, uint64_t max_values);
// Scales output channel j of the layer's weights by factor[j] (a folded batch norm), stored or
// drawn on demand.
void scale_weight_columns(Layer& layer, const std::vector<float>& factor);
// A deterministic pseudo-random int8 input batch (batch x elements, row-major).
std::vector<int8_t> make_random_input(const Graph& graph, uint64_t seed);
// A deterministic pseudo-random batch of token ids in [0, vocab) (Graph::input_ids).
std::vector<int32_t> make_random_ids(const Graph& graph, uint64_t seed, int32_t vocab);

}  // namespace npusim
