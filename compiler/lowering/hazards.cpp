#include "compiler/lowering/hazards.hpp"

#include <algorithm>
#include <map>

namespace npusim {

std::vector<HazardTracker::Record>& HazardTracker::records(BufferId buffer, int core) {
  const size_t space = buffer == BufferId::kDram ? 0 : 1 + size_t(core) * 3 + size_t(buffer) - 1;
  if (records_.size() <= space) records_.resize(space + 1);
  return records_[space];
}

std::vector<uint32_t> HazardTracker::add(uint32_t id, int unit_key,
                                         const std::vector<BufferAccess>& accesses, int core) {
  std::map<int, uint32_t> latest_per_unit;
  for (const auto& a : accesses) {
    if (a.begin >= a.end) continue;
    for (const Record& r : records(a.buffer, a.core < 0 ? core : a.core)) {
      bool overlap = r.begin < a.end && a.begin < r.end;
      if (!overlap || r.unit_key == unit_key) continue;
      if (!r.write && !a.write) continue;  // read after read is no hazard
      auto [it, inserted] = latest_per_unit.emplace(r.unit_key, r.id);
      if (!inserted) it->second = std::max(it->second, r.id);
    }
  }
  for (const auto& a : accesses) {
    if (a.begin >= a.end) continue;
    auto& list = records(a.buffer, a.core < 0 ? core : a.core);
    // A write orders everything it covers; a read supersedes the same unit's covered reads.
    std::erase_if(list, [&](const Record& r) {
      bool covered = a.begin <= r.begin && r.end <= a.end;
      return covered && (a.write || (!r.write && r.unit_key == unit_key));
    });
    list.push_back({a.begin, a.end, id, unit_key, a.write});
  }
  std::vector<uint32_t> deps;
  for (const auto& [unit, dep] : latest_per_unit) deps.push_back(dep);
  std::sort(deps.begin(), deps.end());
  return deps;
}

}  // namespace npusim
