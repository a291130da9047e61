// Bulk off-chip memory: a DRAM preset timed in closed form (dram::BulkTiming,
// models/dram/bulk_timing.hpp) behind the off-chip memory interface, memory.fidelity "bulk"
// (docs/memory_system.md, "Memory fidelity").
//
// Protocol: one transaction per DMA row (burst_bytes() 0), completed at once: the module answers
// BEGIN_REQ with TLM_COMPLETED and the annotated delay to the core cycle the row's last burst
// completes, as the simple memory does, so no SystemC event runs per request. The DMA window the
// command-level path enforces per queue is emulated inside BulkTiming per initiator (socket
// binding), from memory.max_outstanding_bursts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/dram/bulk_timing.hpp"
#include "models/offchip_memory_interface.hpp"

namespace npusim {

class BulkDramMemory : public OffChipMemoryInterface {
 public:
  // `config`: a resolved memory preset, `preset` as the user named it; `window`: bursts in flight
  // per DMA queue.
  BulkDramMemory(sc_core::sc_module_name name, uint64_t bytes, std::string preset,
                 dram::MemoryConfig config, int window, const CoreClock& clock);

  uint64_t burst_bytes() const override { return 0; }
  const dram::BulkTiming& timing() const { return timing_; }
  // The figures of models/dram/memory_stats.hpp over the run (to core cycle `end_cycle`).
  void register_stats(stats::Registry& reg, const std::string& prefix, uint64_t end_cycle) override;
  std::optional<Energy> energy() const override;
  // A track per channel, "dram ch<c>": the bytes of each run of bursts at its completion.
  void record_to(timeline::Timeline& timeline) override;

 private:
  tlm::tlm_sync_enum nb_transport_fw(int initiator, tlm::tlm_generic_payload& payload,
                                     tlm::tlm_phase& phase, sc_core::sc_time& delay) override;

  std::string preset_;
  dram::BulkTiming timing_;
  uint64_t end_memory_cycle_ = 0;
  timeline::Timeline* timeline_ = nullptr;
  std::vector<uint32_t> channel_tracks_;
};

}  // namespace npusim
