#include "models/offchip_memory_interface.hpp"

#include <cstring>

#include "models/bulk_dram_memory.hpp"
#include "models/dram_memory.hpp"
#include "models/offchip_memory.hpp"
#include "support/error.hpp"

namespace npusim {

OffChipMemoryInterface::OffChipMemoryInterface(sc_core::sc_module_name name, uint64_t bytes,
                                               const CoreClock& clock)
    : sc_module(name), socket("socket"), data_(bytes), clock_(clock) {
  socket.register_nb_transport_fw(this, &OffChipMemoryInterface::transport_fw);
  socket.register_transport_dbg(this, &OffChipMemoryInterface::transport_dbg);
}

unsigned int OffChipMemoryInterface::transport_dbg(int, tlm::tlm_generic_payload& payload) {
  const uint64_t addr = payload.get_address();
  const uint64_t len = payload.get_data_length();
  NPUSIM_CHECK(payload.is_read() && addr <= data_.size() && len <= data_.size() - addr,
               "{}: debug access [{:#x}, {:#x}) beyond the {} bytes in use", name(), addr,
               addr + len, data_.size());
  std::memcpy(payload.get_data_ptr(), data_.data() + addr, len);
  payload.set_response_status(tlm::TLM_OK_RESPONSE);
  return static_cast<unsigned int>(len);
}

void OffChipMemoryInterface::move_bytes(tlm::tlm_generic_payload& payload) {
  const uint64_t addr = payload.get_address();
  const uint64_t len = payload.get_data_length();
  NPUSIM_CHECK(addr <= data_.size() && len <= data_.size() - addr,
               "{}: access [{:#x}, {:#x}) beyond the {} bytes in use", name(), addr, addr + len,
               data_.size());
  if (payload.is_read()) {
    if (moves_bytes_) std::memcpy(payload.get_data_ptr(), data_.data() + addr, len);
    bytes_read_ += len;
  } else {
    if (moves_bytes_) std::memcpy(data_.data() + addr, payload.get_data_ptr(), len);
    bytes_written_ += len;
  }
}

std::unique_ptr<OffChipMemoryInterface> make_offchip_memory(const HwConfig& hw, uint64_t bytes,
                                                            const CoreClock& clock) {
  switch (hw.memory.model) {
    case MemoryModel::kSimple:
      return std::make_unique<OffChipMemory>("memory", bytes, hw, clock);
    case MemoryModel::kDram:
      NPUSIM_CHECK(hw.memory.dram.has_value(), "memory.model dram without a resolved preset");
      if (hw.memory.fidelity == MemoryFidelity::kBulk) {
        return std::make_unique<BulkDramMemory>("memory", bytes, hw.memory.preset, *hw.memory.dram,
                                                hw.memory.max_outstanding_bursts, clock);
      }
      return std::make_unique<DramMemory>("memory", bytes, hw.memory.preset, *hw.memory.dram,
                                          clock);
  }
  NPUSIM_CHECK(false, "unknown memory model {}", int(hw.memory.model));
  return nullptr;
}

}  // namespace npusim
