#include "models/offchip_memory.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "support/error.hpp"

namespace npusim {

uint64_t BandwidthLatencyTiming::access(uint64_t arrival_cycle, uint64_t bytes) {
  double start = std::max(static_cast<double>(arrival_cycle), busy_until_);
  double occupancy = static_cast<double>(bytes) / bytes_per_cycle_;
  busy_until_ = start + occupancy;
  busy_cycles_ += occupancy;
  return static_cast<uint64_t>(std::ceil(busy_until_ - 1e-9)) + latency_cycles_;
}

OffChipMemory::OffChipMemory(sc_core::sc_module_name name, uint64_t bytes, double bytes_per_cycle,
                             uint64_t latency_cycles, const CoreClock& clock)
    : sc_module(name),
      socket("socket"),
      data_(bytes),
      timing_(bytes_per_cycle, latency_cycles),
      clock_(clock) {
  socket.register_b_transport(this, &OffChipMemory::b_transport);
  socket.register_nb_transport_fw(this, &OffChipMemory::nb_transport_fw);
}

tlm::tlm_sync_enum OffChipMemory::nb_transport_fw(int initiator, tlm::tlm_generic_payload& payload,
                                                  tlm::tlm_phase& phase, sc_core::sc_time& delay) {
  NPUSIM_CHECK(phase == tlm::BEGIN_REQ, "{}: unexpected phase {}", name(), int(phase));
  b_transport(initiator, payload, delay);
  phase = tlm::BEGIN_RESP;
  return tlm::TLM_COMPLETED;
}

void OffChipMemory::b_transport(int, tlm::tlm_generic_payload& payload, sc_core::sc_time& delay) {
  const uint64_t addr = payload.get_address();
  const uint64_t len = payload.get_data_length();
  NPUSIM_CHECK(addr <= data_.size() && len <= data_.size() - addr,
               "off-chip access [{:#x}, {:#x}) beyond the {} bytes in use", addr, addr + len,
               data_.size());
  const uint64_t now = clock_.now();
  const uint64_t arrival = now + clock_.to_cycles(delay);
  const uint64_t done = timing_.access(arrival, len);
  if (payload.is_read()) {
    std::memcpy(payload.get_data_ptr(), data_.data() + addr, len);
    bytes_read_ += len;
  } else {
    std::memcpy(data_.data() + addr, payload.get_data_ptr(), len);
    bytes_written_ += len;
  }
  if (timeline_) timeline_->memory_bytes(track_, done, len);
  delay = clock_.cycles(done - now);
  payload.set_response_status(tlm::TLM_OK_RESPONSE);
}

}  // namespace npusim
