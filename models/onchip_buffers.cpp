#include "models/onchip_buffers.hpp"

#include "support/error.hpp"

namespace npusim {

OnChipBuffers::OnChipBuffers(const HwConfig& hw)
    : unified_(hw.unified_buffer.capacity_bytes),
      weight_(hw.weight_buffer.capacity_bytes),
      accumulators_(hw.accumulators.capacity_bytes) {}

std::vector<uint8_t>& OnChipBuffers::storage(BufferId id) {
  switch (id) {
    case BufferId::kUnified: return unified_;
    case BufferId::kWeight: return weight_;
    case BufferId::kAccumulator: return accumulators_;
    case BufferId::kDram: break;
  }
  NPUSIM_CHECK(false, "off-chip memory is not an on-chip buffer");
  return unified_;
}

uint64_t OnChipBuffers::capacity(BufferId id) const {
  return const_cast<OnChipBuffers*>(this)->storage(id).size();
}

uint8_t* OnChipBuffers::bytes(BufferId id, uint64_t addr, uint64_t size, uint32_t instruction) {
  auto& s = storage(id);
  NPUSIM_CHECK(addr <= s.size() && size <= s.size() - addr,
               "instruction {} accesses {}[{:#x}, {:#x}) beyond its {} bytes", instruction,
               to_string(id), addr, addr + size, s.size());
  return s.data() + addr;
}

}  // namespace npusim
