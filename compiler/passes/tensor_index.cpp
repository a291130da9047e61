#include "compiler/passes/tensor_index.hpp"

#include <algorithm>

#include "support/error.hpp"

namespace npusim {

TensorIndex::TensorIndex(const Graph& g) : removed_(g.layers.size(), false) {
  for (size_t i = 0; i < g.layers.size(); ++i) {
    const Layer& l = g.layers[i];
    producer_.emplace(l.output, int(i));
    for (size_t k = 0; k < l.inputs.size(); ++k) readers_[l.inputs[k]].push_back({int(i), int(k)});
  }
  for (const std::string& name : g.outputs) ++outputs_[name];
}

int TensorIndex::producer(const std::string& tensor) const {
  const auto it = producer_.find(tensor);
  return it == producer_.end() ? -1 : it->second;
}

const std::vector<TensorIndex::Reader>& TensorIndex::readers(const std::string& tensor) const {
  static const std::vector<Reader> none;
  const auto it = readers_.find(tensor);
  return it == readers_.end() ? none : it->second;
}

int TensorIndex::uses(const std::string& tensor) const {
  const auto it = outputs_.find(tensor);
  return int(readers(tensor).size()) + (it == outputs_.end() ? 0 : it->second);
}

bool TensorIndex::is_output(const std::string& tensor) const { return outputs_.count(tensor) > 0; }

void TensorIndex::forget_reads(const Layer& layer, int position) {
  for (size_t k = 0; k < layer.inputs.size(); ++k) {
    std::vector<Reader>& list = readers_[layer.inputs[k]];
    const auto it = std::lower_bound(list.begin(), list.end(), Reader{position, int(k)});
    NPUSIM_CHECK(it != list.end() && *it == Reader(position, int(k)),
                 "tensor index: layer {} at {} does not read {} as operand {}", layer.name,
                 position, layer.inputs[k], k);
    list.erase(it);
  }
}

void TensorIndex::enter_reads(const Layer& layer, int position) {
  for (size_t k = 0; k < layer.inputs.size(); ++k) {
    std::vector<Reader>& list = readers_[layer.inputs[k]];
    const Reader r{position, int(k)};
    list.insert(std::lower_bound(list.begin(), list.end(), r), r);
  }
}

void TensorIndex::remove(const Layer& layer, int position) {
  forget_reads(layer, position);
  const auto it = producer_.find(layer.output);
  if (it != producer_.end() && it->second == position) producer_.erase(it);
  mark_removed(position);
}

void TensorIndex::mark_removed(int position) {
  NPUSIM_CHECK(!removed_.at(size_t(position)), "tensor index: the layer at {} removed twice",
               position);
  removed_[size_t(position)] = true;
}

void TensorIndex::erase_removed(Graph& g) const {
  NPUSIM_CHECK(g.layers.size() == removed_.size(), "tensor index of {} layers applied to {}",
               removed_.size(), g.layers.size());
  size_t kept = 0;
  for (size_t i = 0; i < g.layers.size(); ++i) {
    if (removed_[i]) continue;
    if (kept != i) g.layers[kept] = std::move(g.layers[i]);
    ++kept;
  }
  g.layers.erase(g.layers.begin() + long(kept), g.layers.end());
}

}  // namespace npusim
