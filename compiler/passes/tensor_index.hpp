// Who writes and who reads each tensor of a graph, by layer position: built once, in time linear
// in the layers, for the passes that fuse or fold layers (fusion.cpp, move_folding.cpp), which
// otherwise scan every layer for each question and take time quadratic in the layers (a decoder
// split over many cores has 10^4 to 10^5 of them).
//
// Contract: positions are those of graph.layers when the index was built. A pass that removes a
// layer marks it (remove) and leaves it in place until it calls erase_removed once at the end, so
// positions stay valid while it runs; a pass that changes a layer's inputs or output tells the
// index (forget / enter / set_producer). readers() lists (position, operand) in layer order, then
// operand order, as a scan of the layers finds them.
#pragma once

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "compiler/ir/graph.hpp"

namespace npusim {

class TensorIndex {
 public:
  using Reader = std::pair<int, int>;  // (layer position, operand)

  explicit TensorIndex(const Graph& g);

  // The position of the layer writing `tensor` (the first, as Graph::producer), or -1.
  int producer(const std::string& tensor) const;
  const std::vector<Reader>& readers(const std::string& tensor) const;
  // The operands reading `tensor` plus its occurrences among the graph's outputs.
  int uses(const std::string& tensor) const;
  bool is_output(const std::string& tensor) const;

  void set_producer(const std::string& tensor, int position) { producer_[tensor] = position; }
  void drop_producer(const std::string& tensor) { producer_.erase(tensor); }
  // Removes / adds the reads of every input of `layer` at `position`.
  void forget_reads(const Layer& layer, int position);
  void enter_reads(const Layer& layer, int position);
  // Marks the layer at `position` removed (its reads forgotten, its output no longer written).
  void remove(const Layer& layer, int position);
  // Marks the place `position` removed whose layer moved elsewhere (its reads already forgotten).
  void mark_removed(int position);
  // Erases the layers marked removed from `g` (the graph the index was built on), in one pass.
  void erase_removed(Graph& g) const;

 private:
  std::unordered_map<std::string, int> producer_;
  std::unordered_map<std::string, std::vector<Reader>> readers_;
  std::unordered_map<std::string, int> outputs_;
  std::vector<bool> removed_;
};

}  // namespace npusim
