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

// Fills in the figures of `s` that follow from its counts (reads, writes, acts, refs, row hits;
// s.cycles the run's end, in memory cycles): bytes, the read latencies' mean and nearest-rank
// percentiles from `read_latency_histogram` (reads per latency in cycles), the write latency's
// mean, the row hit rate, bandwidth, and the energy priced from `config` (background from the
// channels' active and precharged cycles). Both DRAM fidelities (command-level MemorySystem and
// the bulk model, bulk_timing.hpp) end their stats with it, so they price alike.
void derive_memory_figures(MemoryStats& s, const MemoryConfig& config, uint64_t read_latency_sum,
                           uint64_t write_latency_sum,
                           const std::vector<uint64_t>& read_latency_histogram,
                           uint64_t active_cycles, uint64_t precharged_cycles);

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
    enqueue(a.channel, a, is_write, id);
  }
  // will_accept() and add_request() in one address decode; false (and nothing queued) when full.
  bool try_add_request(uint64_t addr, bool is_write, uint64_t id) {
    const DramAddress a = mapper_.map(addr);
    ChannelController& ch = *channels_[a.channel];
    if (!ch.will_accept(is_write)) return false;
    enqueue(a.channel, a, is_write, id);
    return true;
  }
  // Enqueues at now(), or, if the channel's queue is full, lets the request wait there in order
  // until a column command frees a slot; it enters at the cycle after that command.
  void add_or_wait(const DramAddress& a, bool is_write, uint64_t id) {
    ChannelController& c = *channels_[a.channel];
    c.skip_to(now_);
    if (!c.add_or_wait(a, is_write, id, now_)) ++waiting_;
    next_[a.channel] = kUnknown;
    bound_[a.channel] = kUnknown;
  }
  // Requests waiting for a queue slot (add_or_wait()).
  size_t waiting() const { return waiting_; }
  // Of the last advance_to(): 0 if no request waited at its start; else the cycle at which the
  // last waiting request entered its queue, or kNever if some still wait.
  uint64_t waiting_ended_at() const { return waiting_ended_at_; }
  uint64_t next_event_cycle();
  // A cycle <= the first cycle >= now() at which a request completes (kNever if none is queued):
  // the earliest completion queued, or the next command plus the shorter of the read and write
  // latencies. Nothing is delivered before it, so a caller that only waits for completions may
  // sleep until then.
  uint64_t next_completion_bound();
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
  void enqueue(uint32_t ch, const DramAddress& a, bool is_write, uint64_t id) {
    ChannelController& c = *channels_[ch];
    c.skip_to(now_);
    c.add(a, is_write, id, now_);
    next_[ch] = kUnknown;
    bound_[ch] = kUnknown;
  }
  uint64_t channel_next(size_t ch) {
    if (next_[ch] == kUnknown) next_[ch] = channels_[ch]->next_event_cycle();
    return next_[ch];
  }

  // Each channel's next_event_cycle(), kept while nothing is added to it and time does not pass
  // it: a channel with nothing to do before a cycle is neither asked nor advanced (its clock
  // catches up when a request comes).
  static constexpr uint64_t kUnknown = kNever - 1;

  MemoryConfig cfg_;
  AddressMapper mapper_;
  std::vector<std::unique_ptr<ChannelController>> channels_;
  std::vector<uint64_t> next_;
  std::vector<uint64_t> bound_;  // each channel's next_completion_bound(), kept the same way
  size_t waiting_ = 0;
  uint64_t waiting_ended_at_ = 0;
  Callback on_complete_;
  uint64_t now_ = 0;
};

}  // namespace npusim::dram
