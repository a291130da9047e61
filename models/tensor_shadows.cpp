#include "models/tensor_shadows.hpp"

#include <algorithm>
#include <cstring>

#include "models/hazard_checker.hpp"
#include "support/error.hpp"

namespace npusim {

TensorShadows::TensorShadows(const Program& program, int core, bool values)
    : program_(program), core_(core), values_(values) {
  by_layer_.resize(program.layers.size());
  if (!values) return;
  // Tensors aliasing the same bytes (a reshape of a resident tensor) share one shadow; the bytes
  // of a tensor that is dead are reused by later ones, which get their own.
  std::map<std::pair<uint64_t, int>, size_t> by_range;
  for (size_t i = 0; i < program.tensors.size(); ++i) {
    const TensorPlacement& t = program.tensors[i];
    // This core's samples of the tensor: all of them without parts (core 0), else its parts (one
    // on a data-parallel program, one per micro-batch on a pipeline's).
    const std::vector<TensorPart> parts =
        t.parts.empty() ? std::vector<TensorPart>{part_on_core(t, 0)} : t.parts;
    for (size_t p = 0; p < parts.size(); ++p) {
      const TensorPart& part = parts[p];
      if (part.core != core || part.batch == 0 || part.buffer != BufferId::kUnified) continue;
      const uint64_t bytes = t.sample_bytes() * static_cast<uint64_t>(part.batch);
      const int layer = part.layer >= 0 ? part.layer : t.first_layer;
      auto [it, inserted] = by_range.emplace(std::pair(part.ub_addr, layer), shadows_.size());
      if (inserted) {
        shadows_.push_back({part.ub_addr, part.ub_addr + bytes, layer, {}});
        shadows_.back().data.resize(bytes);
      }
      of_part_[{i, p}] = it->second;
    }
  }
  for (size_t k = 0; k < shadows_.size(); ++k) {
    if (shadows_[k].layer >= 0) by_layer_.at(shadows_[k].layer).push_back(k);
  }
}

void TensorShadows::capture(const Instruction& instr, const uint8_t* unified) {
  if (instr.core != core_ || instr.layer >= by_layer_.size() || by_layer_[instr.layer].empty()) {
    return;
  }
  for (const Access& a : accesses_of(instr, program_.dtype)) {
    if (!a.write || a.space != BufferId::kUnified) continue;
    for (size_t k : by_layer_[instr.layer]) {
      Shadow& s = shadows_[k];
      const uint64_t b = std::max(a.begin, s.begin), e = std::min(a.end, s.end);
      if (b < e) std::memcpy(s.data.data() + (b - s.begin), unified + b, e - b);
    }
  }
}

const uint8_t* TensorShadows::bytes(size_t tensor, size_t part) const {
  NPUSIM_CHECK(values_, "tensor shadows: core {} of a timing-only run captured no tensor", core_);
  auto it = of_part_.find({tensor, part});
  return it == of_part_.end() ? nullptr : shadows_[it->second].data.data();
}

}  // namespace npusim
