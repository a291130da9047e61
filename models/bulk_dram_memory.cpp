#include "models/bulk_dram_memory.hpp"

#include <fmt/format.h>

#include <cmath>

#include "models/dram/memory_stats.hpp"
#include "support/error.hpp"

namespace npusim {

BulkDramMemory::BulkDramMemory(sc_core::sc_module_name name, uint64_t bytes, std::string preset,
                               dram::MemoryConfig config, int window, const CoreClock& clock)
    : OffChipMemoryInterface(name, bytes, clock),
      preset_(std::move(preset)),
      timing_(config, clock.period().value() / sc_core::sc_time(1, sc_core::SC_PS).value(),
              static_cast<uint64_t>(std::llround(config.timing.tck_ns * 1000.0)), window) {}

tlm::tlm_sync_enum BulkDramMemory::nb_transport_fw(int initiator, tlm::tlm_generic_payload& payload,
                                                   tlm::tlm_phase& phase, sc_core::sc_time& delay) {
  NPUSIM_CHECK(phase == tlm::BEGIN_REQ, "{}: unexpected phase {} from initiator {}", name(),
               int(phase), initiator);
  NPUSIM_CHECK(payload.get_data_length() > 0, "{}: empty access at {:#x}", name(),
               payload.get_address());
  move_bytes(payload);
  const uint64_t now = clock_.now();
  const uint64_t done = timing_.access(initiator, payload.get_address(), payload.get_data_length(),
                                       payload.is_write(), now + clock_.to_cycles(delay));
  delay = clock_.cycles(done - now);
  payload.set_response_status(tlm::TLM_OK_RESPONSE);
  phase = tlm::BEGIN_RESP;
  return tlm::TLM_COMPLETED;
}

void BulkDramMemory::record_to(timeline::Timeline& timeline) {
  timeline_ = &timeline;
  channel_tracks_.clear();
  for (int c = 0; c < timing_.config().org.channels; ++c) {
    channel_tracks_.push_back(
        timeline.add_track(fmt::format("dram ch{}", c), timeline::TrackKind::kMemoryChannel, c));
  }
  timing_.set_segment_observer([this](uint32_t channel, uint64_t bytes, uint64_t cycle) {
    timeline_->memory_bytes(channel_tracks_[channel], cycle, bytes);
  });
}

void BulkDramMemory::register_stats(stats::Registry& reg, const std::string& prefix,
                                    uint64_t end_cycle) {
  end_memory_cycle_ = timing_.entry_memory_cycle(end_cycle);
  stats::Registry figures;
  dram::register_memory_stats(figures, preset_, timing_.config(), timing_.stats(end_memory_cycle_),
                              timing_.channel_bursts());
  reg.include(prefix, figures);
}

std::optional<OffChipMemoryInterface::Energy> BulkDramMemory::energy() const {
  const dram::MemoryStats s = timing_.stats(end_memory_cycle_);
  return Energy{s.act_energy_pj + s.read_energy_pj + s.write_energy_pj,
                s.background_energy_pj + s.refresh_energy_pj};
}

}  // namespace npusim
