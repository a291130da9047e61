// Instructions appended at the end of a lowered program (the data-parallel all-reduce, the
// optimizer's update): their dependencies come from a hazard tracker over their own accesses, and
// one with none of those waits for the barrier, each unit's last instruction before them.
#pragma once

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "arch/program.hpp"
#include "compiler/lowering/hazards.hpp"
#include "compiler/lowering/tiling_math.hpp"

namespace npusim {

// Each (core, unit, index)'s last instruction of `p`, in increasing order.
inline std::vector<uint32_t> last_per_unit(const Program& p) {
  std::map<std::tuple<int, int, int>, uint32_t> last;
  for (const Instruction& in : p.instructions) last[{in.core, int(in.unit), in.unit_index}] = in.id;
  std::vector<uint32_t> out;
  for (const auto& [unit, id] : last) out.push_back(id);
  std::sort(out.begin(), out.end());
  return out;
}

class TailEmitter {
 public:
  // The barrier: each unit's last instruction of `p` as it is now.
  explicit TailEmitter(Program& p) : p_(p), barrier_(last_per_unit(p)) {}

  // Appends `op` on `unit` 0 of `core`, in the program's last layer.
  void emit(int core, UnitKind unit, Operation op, const std::vector<BufferAccess>& accesses) {
    Instruction in;
    in.id = uint32_t(p_.instructions.size());
    in.unit = unit;
    in.core = core;
    in.layer = uint32_t(p_.layers.size() - 1);
    in.deps = hazards_.add(in.id, lowering::unit_key(unit, 0) + core * lowering::kUnitKeysPerCore,
                           accesses, core);
    if (in.deps.empty()) in.deps = barrier_;
    in.op = std::move(op);
    p_.instructions.push_back(std::move(in));
  }

 protected:
  Program& p_;

 private:
  std::vector<uint32_t> barrier_;
  HazardTracker hazards_;
};

}  // namespace npusim
