#include "compiler/ir/move_table.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "support/error.hpp"

namespace npusim {

MoveTable::MoveTable(const std::vector<MoveSource>& elements) {
  for (const MoveSource& s : elements) push_back(s);
}

void MoveTable::push_back(MoveSource s) {
  if (!runs_.empty()) {
    MoveRun& r = runs_.back();
    if (r.input == s.input && r.count < std::numeric_limits<uint32_t>::max()) {
      const int64_t step = int64_t(s.element) - int64_t(r.first);
      if (r.count == 1 && step >= INT32_MIN && step <= INT32_MAX) {
        r.stride = int32_t(step);
        r.count = 2;
        ++size_;
        return;
      }
      if (step == int64_t(r.count) * r.stride) {
        ++r.count;
        ++size_;
        return;
      }
    }
  }
  runs_.push_back({size_, s.input, s.element, 0, 1});
  ++size_;
}

void MoveTable::append(int32_t input, int32_t first, int32_t stride, uint64_t count) {
  if (count == 0) return;
  const int64_t last = int64_t(first) + int64_t(count - 1) * stride;
  NPUSIM_CHECK(last >= INT32_MIN && last <= INT32_MAX,
               "move table: elements {} + {} x {} beyond int32", first, count - 1, stride);
  push_back({input, first});
  uint64_t left = count - 1;
  int64_t next = int64_t(first) + stride;
  while (left > 0) {
    MoveRun& r = runs_.back();
    const bool continues = r.input == input && (r.count == 1 || r.stride == stride) &&
                           next == int64_t(r.first) + int64_t(r.count) * stride;
    if (!continues || r.count == std::numeric_limits<uint32_t>::max()) {
      push_back({input, int32_t(next)});
      --left;
      next += stride;
      continue;
    }
    const uint64_t n = std::min<uint64_t>(left, std::numeric_limits<uint32_t>::max() - r.count);
    r.stride = stride;
    r.count += uint32_t(n);
    size_ += n;
    left -= n;
    next += int64_t(n) * stride;
  }
}

MoveSource MoveTable::operator[](uint64_t j) const {
  NPUSIM_CHECK(j < size_, "move table: element {} of {}", j, size_);
  const auto it = std::upper_bound(runs_.begin(), runs_.end(), j,
                                   [](uint64_t v, const MoveRun& r) { return v < r.out; });
  const MoveRun& r = *(it - 1);
  return r.at(j - r.out);
}

bool MoveTable::operator==(const MoveTable& other) const {
  return size_ == other.size_ && std::equal(begin(), end(), other.begin());
}

}  // namespace npusim
