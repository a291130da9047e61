// Simple off-chip memory: a fixed load-to-use latency plus a bandwidth shared by all requesters.
// Timing rule: a request of B bytes arriving at cycle a starts at s = max(a, busy_until), holds the
// data bus for B / bytes_per_cycle cycles (fractional, so small requests pack back to back) and
// completes at ceil(s + B / bytes_per_cycle + latency). It answers a non-blocking BEGIN_REQ at once
// with TLM_COMPLETED and the delay to its completion (the base protocol's early completion), so the
// DMA drives it and the command-level DramMemory (models/dram_memory.hpp) through one interface.
#pragma once

#include <tlm_utils/multi_passthrough_target_socket.h>

#include <cstdint>
#include <systemc>
#include <tlm>
#include <vector>

#include "models/clock.hpp"
#include "support/timeline.hpp"

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

class OffChipMemory : public sc_core::sc_module {
 public:
  tlm_utils::multi_passthrough_target_socket<OffChipMemory> socket;

  OffChipMemory(sc_core::sc_module_name name, uint64_t bytes, double bytes_per_cycle,
                uint64_t latency_cycles, const CoreClock& clock);

  std::vector<uint8_t>& contents() { return data_; }
  uint64_t bytes_read() const { return bytes_read_; }
  uint64_t bytes_written() const { return bytes_written_; }
  uint64_t busy_cycles() const { return timing_.busy_cycles(); }
  // Records the bytes of every completed request on `track` of `timeline`.
  void record_to(timeline::Timeline* timeline, uint32_t track) {
    timeline_ = timeline;
    track_ = track;
  }

 private:
  void b_transport(int initiator, tlm::tlm_generic_payload& payload, sc_core::sc_time& delay);
  tlm::tlm_sync_enum nb_transport_fw(int initiator, tlm::tlm_generic_payload& payload,
                                     tlm::tlm_phase& phase, sc_core::sc_time& delay);

  std::vector<uint8_t> data_;
  BandwidthLatencyTiming timing_;
  const CoreClock& clock_;
  uint64_t bytes_read_ = 0, bytes_written_ = 0;
  timeline::Timeline* timeline_ = nullptr;
  uint32_t track_ = 0;
};

}  // namespace npusim
