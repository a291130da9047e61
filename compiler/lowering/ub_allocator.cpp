#include "compiler/lowering/ub_allocator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

namespace npusim::lowering {

namespace {

uint64_t align(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

struct Item {
  uint64_t bytes;
  int first, last;
  int buffer;  // index into the buffers, or -1 - step for a step's scratch
};

bool overlaps_in_time(const Item& a, const Item& b) {
  return a.first <= b.last && b.first <= a.last;
}

struct Placed {
  uint64_t offset;
  Item item;
};

// The placed items by time: each is listed in every block of kBlockSteps steps its live range
// touches, so the items live at some step of a range are found among a few blocks' lists instead
// of all the placed items (a decoder split over 32 cores has some 10^5 items).
class PlacedByTime {
 public:
  static constexpr int kBlockSteps = 64;
  void add(size_t index, const Item& it) {
    const size_t last = size_t(std::max(it.last, it.first) / kBlockSteps);
    if (blocks_.size() <= last) blocks_.resize(last + 1);
    for (size_t b = size_t(it.first / kBlockSteps); b <= last; ++b) blocks_[b].push_back(index);
    seen_.push_back(0);
  }
  // Calls f(index) once for each placed item listed in a block of [first, last].
  template <class F>
  void for_each_near(int first, int last, F f) {
    ++query_;
    const size_t end = std::min(blocks_.size(), size_t(std::max(first, last) / kBlockSteps) + 1);
    for (size_t b = size_t(first / kBlockSteps); b < end; ++b) {
      for (size_t i : blocks_[b]) {
        if (seen_[i] == query_) continue;
        seen_[i] = query_;
        f(i);
      }
    }
  }

 private:
  std::vector<std::vector<size_t>> blocks_;
  std::vector<uint64_t> seen_;
  uint64_t query_ = 0;
};

// Greedy by size, lowest free offset; the index of the first item that does not fit, or -1.
int place(uint64_t capacity, std::vector<Item>& items, std::vector<Placed>& placed,
          uint64_t alignment) {
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.first < b.first;
  });
  placed.clear();
  PlacedByTime by_time;
  for (size_t i = 0; i < items.size(); ++i) {
    const Item& it = items[i];
    std::vector<std::pair<uint64_t, uint64_t>> used;  // [begin, end) of overlapping items
    by_time.for_each_near(it.first, it.last, [&](size_t k) {
      const Placed& p = placed[k];
      if (overlaps_in_time(p.item, it)) used.emplace_back(p.offset, p.offset + p.item.bytes);
    });
    std::sort(used.begin(), used.end());
    uint64_t offset = 0;
    for (const auto& [b, e] : used) {
      if (b >= offset + it.bytes) break;
      offset = std::max(offset, align(e, alignment));
    }
    if (offset + it.bytes > capacity) return static_cast<int>(i);
    placed.push_back({offset, it});
    by_time.add(placed.size() - 1, it);
  }
  return -1;
}

// The largest range of [0, capacity) free of the buffers live at `step`.
UbRange largest_free(uint64_t capacity, int step, const std::vector<Placed>& placed,
                     PlacedByTime& by_time, uint64_t alignment) {
  std::vector<std::pair<uint64_t, uint64_t>> used;
  by_time.for_each_near(step, step, [&](size_t k) {
    const Placed& p = placed[k];
    if (p.item.buffer >= 0 && p.item.first <= step && step <= p.item.last)
      used.emplace_back(p.offset, p.offset + p.item.bytes);
  });
  std::sort(used.begin(), used.end());
  UbRange best;
  uint64_t cursor = 0;
  for (const auto& [b, e] : used) {
    if (b > cursor && b - cursor > best.bytes()) best = {cursor, b};
    cursor = std::max(cursor, align(e, alignment));
  }
  if (capacity > cursor && capacity - cursor > best.bytes()) best = {cursor, capacity};
  return best;
}

}  // namespace

UbPlan plan_unified_buffer(uint64_t capacity, int steps, const std::vector<UbBuffer>& buffers,
                           const ScratchNeed& scratch_min, uint64_t alignment) {
  UbPlan plan;
  std::vector<bool> resident(buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i)
    resident[i] = buffers[i].may_reside && buffers[i].bytes > 0;
  std::vector<Placed> placed;
  while (true) {
    std::vector<Item> items;
    for (size_t i = 0; i < buffers.size(); ++i) {
      if (resident[i]) {
        items.push_back({align(buffers[i].bytes, alignment), buffers[i].first, buffers[i].last,
                         static_cast<int>(i)});
      }
    }
    for (int s = 0; s < steps; ++s) {
      const uint64_t need = scratch_min(s, resident);
      if (need > 0) items.push_back({align(need, alignment), s, s, -1 - s});
    }
    const int failed = place(capacity, items, placed, alignment);
    if (failed < 0) break;
    // Spill the buffer live during the failed item that saves the least traffic per byte-step.
    const Item& f = items[failed];
    int victim = -1;
    double victim_score = 0.0;
    for (size_t i = 0; i < buffers.size(); ++i) {
      const UbBuffer& b = buffers[i];
      if (!resident[i] || b.first > f.last || f.first > b.last) continue;
      const double score = double(b.traffic_saved) / (double(b.bytes) * (b.last - b.first + 1));
      if (victim < 0 || score < victim_score ||
          (score == victim_score && b.bytes > buffers[victim].bytes)) {
        victim = static_cast<int>(i);
        victim_score = score;
      }
    }
    if (victim < 0) {
      plan.failed_step = f.first;
      return plan;
    }
    resident[victim] = false;
    ++plan.spills;
  }
  plan.ok = true;
  plan.offset.assign(buffers.size(), std::nullopt);
  for (const Placed& p : placed) {
    if (p.item.buffer >= 0) plan.offset[p.item.buffer] = p.offset;
  }
  PlacedByTime by_time;
  for (size_t k = 0; k < placed.size(); ++k) by_time.add(k, placed[k].item);
  for (int s = 0; s < steps; ++s)
    plan.scratch.push_back(largest_free(capacity, s, placed, by_time, alignment));
  return plan;
}

std::string check_ub_plan(uint64_t capacity, const std::vector<UbBuffer>& buffers,
                          const UbPlan& plan) {
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (!plan.offset[i]) continue;
    const UbBuffer& a = buffers[i];
    const uint64_t a0 = *plan.offset[i], a1 = a0 + a.bytes;
    if (a1 > capacity)
      return fmt::format("buffer {} [{}, {}) crosses the capacity {}", i, a0, a1, capacity);
    for (size_t j = i + 1; j < buffers.size(); ++j) {
      if (!plan.offset[j]) continue;
      const UbBuffer& b = buffers[j];
      const uint64_t b0 = *plan.offset[j], b1 = b0 + b.bytes;
      if (a.first <= b.last && b.first <= a.last && a0 < b1 && b0 < a1) {
        return fmt::format("buffers {} [{}, {}) steps {}..{} and {} [{}, {}) steps {}..{} overlap",
                           i, a0, a1, a.first, a.last, j, b0, b1, b.first, b.last);
      }
    }
    for (int s = a.first; s <= a.last && s < static_cast<int>(plan.scratch.size()); ++s) {
      const UbRange& r = plan.scratch[s];
      if (r.begin < a1 && a0 < r.end) {
        return fmt::format("scratch [{}, {}) of step {} overlaps buffer {} [{}, {})", r.begin,
                           r.end, s, i, a0, a1);
      }
    }
  }
  for (size_t s = 0; s < plan.scratch.size(); ++s) {
    if (plan.scratch[s].end > capacity)
      return fmt::format("scratch of step {} crosses the capacity {}", s, capacity);
  }
  return "";
}

}  // namespace npusim::lowering
