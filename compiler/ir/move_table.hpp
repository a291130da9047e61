// A move's source table (OpKind::kMove, compiler/ir/graph.hpp): where each output element of one
// sample comes from, held as runs of output elements whose sources step by a constant stride
// through one input (or through the constants), not one entry per element. The tables the
// backward rules build (im2col patches, transposes, spreads, scatters, broadcasts) are a few runs
// per output row; a run is 24 bytes where an element was 8 (docs/training.md "Scaling").
#pragma once

#include <cstdint>
#include <iterator>
#include <vector>

namespace npusim {

// kMove: where one output element comes from.
struct MoveSource {
  int32_t input = -1;   // index into Layer::inputs; -1: Layer::move_constants
  int32_t element = 0;  // element of that input (one sample, row-major) or constant
  bool operator==(const MoveSource&) const = default;
};

// Output elements out .. out + count - 1 copy element first + i * stride of `input` (i < count).
struct MoveRun {
  uint64_t out = 0;
  int32_t input = -1;
  int32_t first = 0;
  int32_t stride = 0;
  uint32_t count = 0;
  MoveSource at(uint64_t i) const {
    return {input, int32_t(int64_t(first) + int64_t(i) * int64_t(stride))};
  }
};

// Contract: the elements read back (operator[], iteration) are exactly those appended, in order,
// however they were cut into runs. Appending merges an element into the last run when it
// continues it (a run of one element takes any stride of the same input).
class MoveTable {
 public:
  MoveTable() = default;
  explicit MoveTable(const std::vector<MoveSource>& elements);

  void push_back(MoveSource s);
  // `count` elements first, first + stride, ... of `input`.
  void append(int32_t input, int32_t first, int32_t stride, uint64_t count);
  void clear() {
    runs_.clear();
    size_ = 0;
  }

  uint64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const std::vector<MoveRun>& runs() const { return runs_; }
  // Output element j (a binary search over the runs).
  MoveSource operator[](uint64_t j) const;
  // The same elements in the same order.
  bool operator==(const MoveTable& other) const;

  // The elements in output order.
  class const_iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = MoveSource;
    using difference_type = std::ptrdiff_t;
    using pointer = const MoveSource*;
    using reference = MoveSource;
    const_iterator() = default;
    const_iterator(const std::vector<MoveRun>* runs, size_t run) : runs_(runs), run_(run) {}
    MoveSource operator*() const { return (*runs_)[run_].at(i_); }
    const_iterator& operator++() {
      if (++i_ == (*runs_)[run_].count) {
        ++run_;
        i_ = 0;
      }
      return *this;
    }
    const_iterator operator++(int) {
      const_iterator old = *this;
      ++*this;
      return old;
    }
    // The output element it points at.
    uint64_t index() const { return run_ < runs_->size() ? (*runs_)[run_].out + i_ : end_index(); }
    bool operator==(const const_iterator& o) const { return run_ == o.run_ && i_ == o.i_; }

   private:
    uint64_t end_index() const {
      return runs_->empty() ? 0 : runs_->back().out + runs_->back().count;
    }
    const std::vector<MoveRun>* runs_ = nullptr;
    size_t run_ = 0;
    uint32_t i_ = 0;
  };
  const_iterator begin() const { return {&runs_, 0}; }
  const_iterator end() const { return {&runs_, runs_.size()}; }

 private:
  std::vector<MoveRun> runs_;
  uint64_t size_ = 0;
};

}  // namespace npusim
