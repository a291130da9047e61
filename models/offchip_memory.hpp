// Simple off-chip memory: a fixed load-to-use latency plus a bandwidth shared by all requesters.
// Timing rule: a request of B bytes arriving at cycle a starts at s = max(a, busy_until), holds the
// data bus for B / bytes_per_cycle cycles (fractional, so small requests pack back to back) and
// completes at ceil(s + B / bytes_per_cycle + latency). It answers a non-blocking BEGIN_REQ at once
// with TLM_COMPLETED and the delay to its completion (the base protocol's early completion), one
// way the off-chip memory interface (models/offchip_memory_interface.hpp) allows.
#pragma once

#include <cstdint>

#include "models/offchip_memory_interface.hpp"

namespace npusim {

// The timing rule alone, testable without SystemC.
class BandwidthLatencyTiming {
 public:
  BandwidthLatencyTiming(double bytes_per_cycle, uint64_t latency_cycles)
      : bytes_per_cycle_(bytes_per_cycle), latency_cycles_(latency_cycles) {}
  // Returns the completion cycle of a request of `bytes` arriving at `arrival_cycle`.
  uint64_t access(uint64_t arrival_cycle, uint64_t bytes);
  uint64_t busy_cycles() const { return static_cast<uint64_t>(busy_cycles_); }

 private:
  double bytes_per_cycle_;
  uint64_t latency_cycles_;
  double busy_until_ = 0.0;
  double busy_cycles_ = 0.0;
};

class OffChipMemory : public OffChipMemoryInterface {
 public:
  // Bandwidth, latency and clock from `hw`.
  OffChipMemory(sc_core::sc_module_name name, uint64_t bytes, const HwConfig& hw,
                const CoreClock& clock);

  uint64_t burst_bytes() const override { return 0; }
  uint64_t busy_cycles() const { return timing_.busy_cycles(); }
  void register_stats(stats::Registry& reg, const std::string& prefix, uint64_t end_cycle) override;
  // One track, "memory": the bytes of every completed request.
  void record_to(timeline::Timeline& timeline) override;

 private:
  tlm::tlm_sync_enum nb_transport_fw(int initiator, tlm::tlm_generic_payload& payload,
                                     tlm::tlm_phase& phase, sc_core::sc_time& delay) override;

  BandwidthLatencyTiming timing_;
  double bandwidth_gbps_, latency_ns_;
  timeline::Timeline* timeline_ = nullptr;
  uint32_t track_ = 0;
};

}  // namespace npusim
