#include "compiler/lowering/hazards.hpp"

#include <algorithm>
#include <bit>

namespace npusim {

namespace {

// The length class of a record: the least k with 2^k >= its length (the last class takes the rest).
int length_class(uint64_t length) { return std::min(int(std::bit_width(length - 1)), 63); }

}  // namespace

HazardTracker::Space& HazardTracker::space(BufferId buffer, int core) {
  const size_t index = buffer == BufferId::kDram ? 0 : 1 + size_t(core) * 3 + size_t(buffer) - 1;
  if (spaces_.size() <= index) spaces_.resize(index + 1);
  return spaces_[index];
}

template <class F>
void HazardTracker::for_each_overlapping(Records& s, uint64_t begin, uint64_t end, F f) {
  for (uint64_t used = s.used; used != 0; used &= used - 1) {
    const int k = std::countr_zero(used);
    auto& records = s.by_class[size_t(k)];
    // A record of class k is at most 2^k bytes long: one that reaches past `begin` starts after
    // begin - 2^k.
    const uint64_t reach = k == 63 ? UINT64_MAX : (uint64_t(1) << k) - 1;
    auto it = records.lower_bound(begin > reach ? begin - reach : 0);
    while (it != records.end() && it->first < end) {
      it = it->second.end > begin ? f(records, it) : std::next(it);
    }
    if (records.empty()) s.used &= ~(uint64_t(1) << k);
  }
}

std::vector<uint32_t> HazardTracker::add(uint32_t id, int unit_key,
                                         const std::vector<BufferAccess>& accesses, int core) {
  // The latest conflicting instruction per other unit (few: a small vector, not a map).
  std::vector<std::pair<int, uint32_t>> latest_per_unit;
  const auto conflict = [&](auto&, auto it) {
    const Record& r = it->second;
    if (r.unit_key != unit_key) {
      auto u = std::find_if(latest_per_unit.begin(), latest_per_unit.end(),
                            [&](const auto& x) { return x.first == r.unit_key; });
      if (u == latest_per_unit.end()) {
        latest_per_unit.emplace_back(r.unit_key, r.id);
      } else {
        u->second = std::max(u->second, r.id);
      }
    }
    return std::next(it);
  };
  for (const auto& a : accesses) {
    if (a.begin >= a.end) continue;
    Space& s = space(a.buffer, a.core < 0 ? core : a.core);
    // Read after read is no hazard.
    for_each_overlapping(s.writes, a.begin, a.end, conflict);
    if (a.write) for_each_overlapping(s.reads, a.begin, a.end, conflict);
  }
  for (const auto& a : accesses) {
    if (a.begin >= a.end) continue;
    Space& s = space(a.buffer, a.core < 0 ? core : a.core);
    // A write orders everything it covers; a read supersedes the same unit's covered reads.
    const auto covered = [&](auto& records, auto it) {
      const Record& r = it->second;
      return a.begin <= it->first && r.end <= a.end && (a.write || r.unit_key == unit_key)
                 ? records.erase(it)
                 : std::next(it);
    };
    for_each_overlapping(s.reads, a.begin, a.end, covered);
    if (a.write) for_each_overlapping(s.writes, a.begin, a.end, covered);
    Records& mine = a.write ? s.writes : s.reads;
    const int k = length_class(a.end - a.begin);
    mine.by_class[size_t(k)].emplace(a.begin, Record{a.end, id, unit_key, a.write});
    mine.used |= uint64_t(1) << k;
  }
  std::vector<uint32_t> deps;
  deps.reserve(latest_per_unit.size());
  for (const auto& [unit, dep] : latest_per_unit) deps.push_back(dep);
  std::sort(deps.begin(), deps.end());
  return deps;
}

}  // namespace npusim
