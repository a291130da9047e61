#include "models/offchip_memory.hpp"

#include <algorithm>
#include <cmath>

#include "support/error.hpp"

namespace npusim {

uint64_t BandwidthLatencyTiming::access(uint64_t arrival_cycle, uint64_t bytes) {
  double start = std::max(static_cast<double>(arrival_cycle), busy_until_);
  double occupancy = static_cast<double>(bytes) / bytes_per_cycle_;
  busy_until_ = start + occupancy;
  busy_cycles_ += occupancy;
  return static_cast<uint64_t>(std::ceil(busy_until_ - 1e-9)) + latency_cycles_;
}

OffChipMemory::OffChipMemory(sc_core::sc_module_name name, uint64_t bytes, const HwConfig& hw,
                             const CoreClock& clock)
    : OffChipMemoryInterface(name, bytes, clock),
      timing_(hw.memory_bytes_per_cycle(), hw.memory_latency_cycles()),
      bandwidth_gbps_(hw.memory.bandwidth_gbps),
      latency_ns_(hw.memory.latency_ns) {}

tlm::tlm_sync_enum OffChipMemory::nb_transport_fw(int initiator, tlm::tlm_generic_payload& payload,
                                                  tlm::tlm_phase& phase, sc_core::sc_time& delay) {
  NPUSIM_CHECK(phase == tlm::BEGIN_REQ, "{}: unexpected phase {} from initiator {}", name(),
               int(phase), initiator);
  move_bytes(payload);
  const uint64_t len = payload.get_data_length();
  const uint64_t now = clock_.now();
  const uint64_t done = timing_.access(now + clock_.to_cycles(delay), len);
  if (timeline_) timeline_->memory_bytes(track_, done, len);
  delay = clock_.cycles(done - now);
  payload.set_response_status(tlm::TLM_OK_RESPONSE);
  phase = tlm::BEGIN_RESP;
  return tlm::TLM_COMPLETED;
}

void OffChipMemory::register_stats(stats::Registry& reg, const std::string& prefix, uint64_t) {
  reg.value(prefix + ".bandwidth_gbps", "GB/s", "simple memory: bandwidth shared by the DMA queues",
            bandwidth_gbps_);
  reg.value(prefix + ".latency_ns", "ns", "simple memory: latency of every request", latency_ns_);
  reg.value(prefix + ".busy_cycles", "cycles", "simple memory: cycles its data bus was busy",
            busy_cycles());
}

void OffChipMemory::record_to(timeline::Timeline& timeline) {
  timeline_ = &timeline;
  track_ = timeline.add_track("memory", timeline::TrackKind::kMemoryChannel, 0);
}

}  // namespace npusim
