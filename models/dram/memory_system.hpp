// A DRAM memory system (all channels of a MemoryConfig) behind a small DRAMsim3-like embedding
// API, in memory clock cycles. Plain C++: a SystemC/TLM wrapper drives it by jumping to
// next_event_cycle() instead of ticking every clock.
//
// Contract:
//   - Time only moves forward through advance_to(c): it issues every DRAM command of the cycles
//     before c and reports, through the completion callback, every request whose data transfer
//     ended before c; callbacks of one channel arrive in cycle order. Afterwards now() == c.
//   - add_request(addr, is_write, id) enqueues at now(); call it only when will_accept() says
//     so (a full queue is an internal error), or use try_add_request(). `id` is the caller's and
//     comes back unchanged. Reads complete when their last data beat returns, writes when their
//     last beat is written.
//   - next_event_cycle() is the first cycle >= now() at which anything happens (a command, a
//     completion, a refresh); kNever when there is nothing left to do. Nothing changes between
//     now() and it, so advance_to(next_event_cycle() + 1) loses no precision.
//   - The callback must not call back into the MemorySystem.
//   - Errors: a bad config is a UserError from the loader; a broken timing invariant is an
//     InternalError naming the command, bank and cycle. Nothing calls exit().
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "arch/dram/address_mapping.hpp"
#include "arch/dram/dram_config.hpp"
#include "models/dram/channel_controller.hpp"

namespace npusim::dram {

// Totals over all channels, with energy from the config's per-event figures.
struct MemoryStats {
  uint64_t cycles = 0;
  uint64_t reads = 0, writes = 0;
  uint64_t acts = 0, pres = 0, refs = 0;
  uint64_t row_hits = 0;
  double avg_read_latency_cycles = 0;
  uint64_t p50_read_latency_cycles = 0, p99_read_latency_cycles = 0, max_read_latency_cycles = 0;
  double avg_write_latency_cycles = 0;
  uint64_t bytes = 0;
  double bandwidth_gbps = 0;  // bytes moved / (cycles * tCK)
  double row_hit_rate = 0;
  // Energy in pJ.
  double act_energy_pj = 0, read_energy_pj = 0, write_energy_pj = 0, refresh_energy_pj = 0;
  double background_energy_pj = 0, total_energy_pj = 0;
  double energy_pj_per_bit = 0;
  double average_power_mw = 0;
};

class MemorySystem {
 public:
  using Callback = ChannelController::Callback;

  explicit MemorySystem(MemoryConfig config, Callback on_complete = {});

  bool will_accept(uint64_t addr, bool is_write) const {
    return channels_[mapper_.map(addr).channel]->will_accept(is_write);
  }
  void add_request(uint64_t addr, bool is_write, uint64_t id);
  // The same for an address decoded by mapper() already.
  void add_request(const DramAddress& a, bool is_write, uint64_t id) {
    channels_[a.channel]->add(a, is_write, id, now_);
  }
  // will_accept() and add_request() in one address decode; false (and nothing queued) when full.
  bool try_add_request(uint64_t addr, bool is_write, uint64_t id) {
    const DramAddress a = mapper_.map(addr);
    ChannelController& ch = *channels_[a.channel];
    if (!ch.will_accept(is_write)) return false;
    ch.add(a, is_write, id, now_);
    return true;
  }
  uint64_t next_event_cycle();
  void advance_to(uint64_t cycle);
  void set_callback(Callback on_complete) { on_complete_ = std::move(on_complete); }
  // Observes the commands of channel `ch` (tracing; see ChannelController::CommandObserver).
  void set_command_observer(int ch, ChannelController::CommandObserver observer) {
    channels_[size_t(ch)]->set_command_observer(std::move(observer));
  }

  uint64_t now() const { return now_; }
  // Requests accepted and not yet completed.
  size_t outstanding() const;
  // Statistics over cycles [0, now()).
  MemoryStats stats() const;

  const MemoryConfig& config() const { return cfg_; }
  const AddressMapper& mapper() const { return mapper_; }
  const ChannelController& channel(int i) const { return *channels_[size_t(i)]; }
  int channels() const { return int(channels_.size()); }

 private:
  MemoryConfig cfg_;
  AddressMapper mapper_;
  std::vector<std::unique_ptr<ChannelController>> channels_;
  Callback on_complete_;
  uint64_t now_ = 0;
};

}  // namespace npusim::dram
