#include "models/tensor_shadows.hpp"

#include <algorithm>
#include <cstring>

#include "models/hazard_checker.hpp"

namespace npusim {

TensorShadows::TensorShadows(const Program& program) : program_(program) {
  // Tensors aliasing the same bytes (a reshape of a resident tensor) share one shadow; the bytes
  // of a tensor that is dead are reused by later ones, which get their own.
  std::map<std::pair<uint64_t, int>, size_t> by_range;
  for (size_t i = 0; i < program.tensors.size(); ++i) {
    const TensorPlacement& t = program.tensors[i];
    if (t.buffer != BufferId::kUnified) continue;
    auto [it, inserted] = by_range.emplace(std::pair(t.ub_addr, t.first_layer), shadows_.size());
    if (inserted) {
      shadows_.push_back({t.ub_addr, t.ub_addr + t.bytes(), t.first_layer, {}});
      shadows_.back().data.resize(t.bytes());
    }
    of_tensor_[i] = it->second;
  }
  by_layer_.resize(program.layers.size());
  for (size_t k = 0; k < shadows_.size(); ++k) {
    if (shadows_[k].layer >= 0) by_layer_.at(shadows_[k].layer).push_back(k);
  }
}

void TensorShadows::capture(const Instruction& instr, const uint8_t* unified) {
  if (instr.layer >= by_layer_.size() || by_layer_[instr.layer].empty()) return;
  for (const Access& a : accesses_of(instr, program_.dtype)) {
    if (!a.write || a.space != BufferId::kUnified) continue;
    for (size_t k : by_layer_[instr.layer]) {
      Shadow& s = shadows_[k];
      const uint64_t b = std::max(a.begin, s.begin), e = std::min(a.end, s.end);
      if (b < e) std::memcpy(s.data.data() + (b - s.begin), unified + b, e - b);
    }
  }
}

const uint8_t* TensorShadows::bytes(size_t tensor) const {
  auto it = of_tensor_.find(tensor);
  return it == of_tensor_.end() ? nullptr : shadows_[it->second].data.data();
}

}  // namespace npusim
