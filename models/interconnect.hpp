// The on-chip interconnect between the cores of a chip, a TLM-2.0 target (blocking transport, the
// loosely-timed style: the returned delay is when the copy's last byte arrives). Each core's link
// queue (models/link_queue.hpp) binds an initiator socket to its one multi-target socket, in core
// order, so the socket index is the sending core. The address space is every core's unified
// buffer, core c's at c << kCoreAddressShift: a copy is one write transaction of its bytes to the
// destination core's window. Timing and contention are the plain core's
// (models/interconnect_timing.hpp); the bytes land in the destination buffer when the transaction
// is served (values, like every unit's, are computed at issue).
#pragma once

#include <tlm_utils/multi_passthrough_target_socket.h>

#include <systemc>
#include <tlm>
#include <vector>

#include "models/clock.hpp"
#include "models/interconnect_timing.hpp"
#include "models/onchip_buffers.hpp"
#include "support/stats.hpp"
#include "support/timeline.hpp"

namespace npusim {

class Interconnect : public sc_core::sc_module {
 public:
  static constexpr int kCoreAddressShift = 40;

  tlm_utils::multi_passthrough_target_socket<Interconnect> socket;

  Interconnect(sc_core::sc_module_name name, const InterconnectConfig& config, int cores,
               const CoreClock& clock, bool moves_bytes);

  // Core c's unified buffer, the destination of copies to core c (before sc_start).
  void attach(int core, OnChipBuffers* buffers) { buffers_.at(size_t(core)) = buffers; }
  const InterconnectTiming& timing() const { return timing_; }
  // "interconnect.*": bytes, copies, link busy cycles and utilization over `total_cycles`.
  void register_stats(stats::Registry& reg, uint64_t total_cycles) const;

 private:
  void b_transport(int from, tlm::tlm_generic_payload& payload, sc_core::sc_time& delay);

  InterconnectConfig config_;
  const CoreClock& clock_;
  bool moves_bytes_;
  InterconnectTiming timing_;
  std::vector<OnChipBuffers*> buffers_;
};

}  // namespace npusim
