#include "models/interconnect.hpp"

#include <cstring>

#include "support/error.hpp"

namespace npusim {

Interconnect::Interconnect(sc_core::sc_module_name name, const InterconnectConfig& config,
                           int cores, const CoreClock& clock, bool moves_bytes)
    : sc_module(name),
      socket("socket"),
      config_(config),
      clock_(clock),
      moves_bytes_(moves_bytes),
      timing_(config, cores),
      buffers_(size_t(cores), nullptr) {
  socket.register_b_transport(this, &Interconnect::b_transport);
}

void Interconnect::b_transport(int from, tlm::tlm_generic_payload& payload,
                               sc_core::sc_time& delay) {
  const uint64_t addr = payload.get_address();
  const int to = int(addr >> kCoreAddressShift);
  const uint64_t local = addr & ((uint64_t{1} << kCoreAddressShift) - 1);
  const uint64_t bytes = payload.get_data_length();
  NPUSIM_CHECK(payload.is_write() && to >= 0 && size_t(to) < buffers_.size() &&
                   buffers_[size_t(to)] != nullptr && to != from,
               "{}: a copy from core {} to address {:#x} (core {})", name(), from, addr, to);
  const uint64_t now = clock_.now() + clock_.to_cycles(delay);
  const CopyWindow w = timing_.transfer(now, from, to, bytes);
  // Bounds are checked whether or not bytes move (a timing-only run still claims the range).
  uint8_t* dst = buffers_[size_t(to)]->bytes(BufferId::kUnified, local, bytes, UINT32_MAX);
  if (moves_bytes_ && bytes > 0) std::memcpy(dst, payload.get_data_ptr(), bytes);
  delay = clock_.cycles(w.end - clock_.now());
  payload.set_response_status(tlm::TLM_OK_RESPONSE);
}

void Interconnect::register_stats(stats::Registry& reg, uint64_t total_cycles) const {
  reg.value("interconnect.topology", "", "interconnect.topology of the hardware: ring or crossbar",
            to_string(config_.topology));
  reg.value("interconnect.links", "count",
            "directed links of the interconnect (ring: 2 per core; crossbar: 1 output port per "
            "core)",
            timing_.links());
  reg.value("interconnect.bytes", "bytes", "bytes core-to-core copies moved", timing_.bytes());
  reg.value("interconnect.copies", "count", "core-to-core copies (COPY instructions)",
            timing_.copies());
  reg.value("interconnect.link_busy_cycles", "cycles",
            "cycles links carried bytes, summed over the links", timing_.busy_cycles());
  reg.value("interconnect.wait_cycles", "cycles",
            "cycles copies waited for a link another copy held (contention)",
            timing_.wait_cycles());
  const double capacity = double(total_cycles) * timing_.links();
  reg.value("interconnect.link_utilization", "ratio",
            "link_busy_cycles / (total_cycles x links): the links' mean occupancy",
            capacity > 0 ? double(timing_.busy_cycles()) / capacity : 0.0);
}

}  // namespace npusim
