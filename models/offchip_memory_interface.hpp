// What the SoC sees of its off-chip memory, whichever model runs it: a TLM-2.0 target socket the
// DMA queues bind to, the functional bytes, byte counters, figures for stats.json and recording.
// make_offchip_memory() builds the model memory.model names (arch/hw_config.hpp): the simple
// latency + bandwidth OffChipMemory, the command-level DramMemory or, with memory.fidelity
// "bulk", the closed-form BulkDramMemory.
//
// Contract: transactions use the base protocol's non-blocking transport, one per DMA burst (one
// per row with burst_bytes() 0). A model either completes a request at once (TLM_COMPLETED, the
// annotated delay up to its completion) or accepts it (TLM_ACCEPTED) and later calls
// nb_transport_bw(BEGIN_RESP) at the core cycle it completes (or earlier, with the delay up to it
// annotated, for initiators that allow it: models/early_response.hpp). The bytes move when the
// request is received and are counted then. Simultaneous requests are served in socket binding
// order.
// The debug transport (transport_dbg) reads the contents without timing and without counting, in
// timing-only runs too: an indexed DMA learns its ids through it after reading them with timing.
#pragma once

#include <tlm_utils/multi_passthrough_target_socket.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <systemc>
#include <tlm>
#include <vector>

#include "arch/hw_config.hpp"
#include "models/clock.hpp"
#include "support/stats.hpp"
#include "support/timeline.hpp"
#include "support/zeroed_bytes.hpp"

namespace npusim {

class OffChipMemoryInterface : public sc_core::sc_module {
 public:
  tlm_utils::multi_passthrough_target_socket<OffChipMemoryInterface> socket;

  ZeroedBytes& contents() { return data_; }
  // false (timing-only runs): accesses are checked and counted but no byte moves.
  void set_moves_bytes(bool moves) { moves_bytes_ = moves; }
  uint64_t bytes_read() const { return bytes_read_; }
  uint64_t bytes_written() const { return bytes_written_; }
  // Bytes of one burst: the DMA cuts its rows at multiples of it; 0 keeps each row whole.
  virtual uint64_t burst_bytes() const = 0;
  // Brings the model to core cycle `end_cycle` (the run's last; nothing in flight) and registers
  // its own figures under `prefix` (the SoC registers memory.model).
  virtual void register_stats(stats::Registry& reg, const std::string& prefix,
                              uint64_t end_cycle) = 0;
  // Adds its tracks to `timeline` (which outlives the run) and records into them. Before sc_start.
  virtual void record_to(timeline::Timeline& timeline) = 0;
  // Traces its waveform variables, if it has any, into `file`. Before sc_start.
  virtual void trace_waveforms(sc_core::sc_trace_file* file) {}
  // The energy the model computed from its own commands (pJ), after register_stats brought it to
  // the run's end; nullopt when it models none (the simple model: power/power_model.hpp prices its
  // bytes instead).
  struct Energy {
    double dynamic_pj = 0;     // activates, reads, writes
    double background_pj = 0;  // background and refresh
  };
  virtual std::optional<Energy> energy() const { return std::nullopt; }

 protected:
  OffChipMemoryInterface(sc_core::sc_module_name name, uint64_t bytes, const CoreClock& clock);
  virtual tlm::tlm_sync_enum nb_transport_fw(int initiator, tlm::tlm_generic_payload& payload,
                                             tlm::tlm_phase& phase, sc_core::sc_time& delay) = 0;
  // Checks that the payload lies inside the contents, then copies and counts its bytes.
  void move_bytes(tlm::tlm_generic_payload& payload);

  ZeroedBytes data_;
  const CoreClock& clock_;
  bool moves_bytes_ = true;

 private:
  tlm::tlm_sync_enum transport_fw(int initiator, tlm::tlm_generic_payload& payload,
                                  tlm::tlm_phase& phase, sc_core::sc_time& delay) {
    return nb_transport_fw(initiator, payload, phase, delay);
  }
  unsigned int transport_dbg(int initiator, tlm::tlm_generic_payload& payload);

  uint64_t bytes_read_ = 0, bytes_written_ = 0;
};

// The model `hw.memory` describes, holding `bytes` of contents (the program's footprint).
std::unique_ptr<OffChipMemoryInterface> make_offchip_memory(const HwConfig& hw, uint64_t bytes,
                                                            const CoreClock& clock);

}  // namespace npusim
