// On-chip SRAM contents: unified buffer (int8 activations, int32 biases), weight buffer (int8),
// accumulators (int32). Plain storage with always-on bounds checks: a compiler bug that would
// overflow a buffer stops the simulation with the unit and instruction, never corrupts silently.
// (Banks, ports and conflict stalls come with the memory-system work, docs/memory.md.)
#pragma once

#include <cstdint>
#include <vector>

#include "arch/hw_config.hpp"
#include "arch/isa.hpp"

namespace npusim {

class OnChipBuffers {
 public:
  explicit OnChipBuffers(const HwConfig& hw);

  // A checked view of [addr, addr + bytes) of `id` (not kDram); `who` names the accessor.
  uint8_t* bytes(BufferId id, uint64_t addr, uint64_t size, uint32_t instruction);
  uint64_t capacity(BufferId id) const;

 private:
  std::vector<uint8_t>& storage(BufferId id);
  std::vector<uint8_t> unified_, weight_, accumulators_;
};

}  // namespace npusim
