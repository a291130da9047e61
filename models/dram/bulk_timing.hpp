// Bulk DRAM timing: a memory preset's figures applied in closed form to whole runs of bursts
// instead of command by command (the "bulk" memory fidelity, docs/memory_system.md). Plain C++;
// models/bulk_dram_memory.hpp puts it behind the off-chip memory interface.
//
// Timing rule, for a request of `len` bytes at `addr` arriving at core cycle a (one DMA row):
//   - it enters the memory at memory cycle floor(a*Pc/Pm) + 1 plus the controller's front-end
//     latency (the command-level crossing, models/dram_memory.hpp);
//   - its bursts are cut by the preset's address mapping into segments: consecutive bursts in one
//     (channel, pseudo-channel, bank, row). A segment's n column commands go to its pseudo-channel
//     back to back, one every max(tCCD_L, BL/2) (same bank group), from the first cycle that
//       * its data bus is free: segments are served in the order they arrive, as the controller's
//         FIFO order does for a stream, each behind the last one's columns; a segment that
//         arrives before segments already placed (another DMA queue sent those earlier, with
//         their later arrival cycles) takes the first gap of its length those left on the bus,
//       * a read follows a write by tCWL + BL/2 + tWTR_S, a write a read by tCL + BL/2 - tCWL +
//         tRTRS,
//       * its row is open: a segment to another row of its bank pays PRE (after tRAS, tRTP or the
//         write recovery) + tRP, then ACT + tRCD; ACTs keep tRC per bank, tRRD_S and four per
//         tFAW per pseudo-channel, tRRD_L per bank group; an ACT for a closed bank is issued as
//         soon as the segment arrives, so it hides under other banks' data as FR-FCFS hides it;
//       * refresh: every tREFI each pseudo-channel precharges its open banks (after their last
//         column and tRAS), refreshes for tRFC and reopens rows on demand; a segment whose columns
//         would cross the due cycle is split there; with per-bank refresh no segment waits (the
//         command-level controller gives each REFpb a bank without queued requests, which a
//         stream leaves at all times: docs/memory.md), only the REFpb commands are counted;
//       * the DMA window: burst k of an initiator is sent no earlier than the core cycle at which
//         k - W + 1 of its earlier bursts have completed (W = memory.max_outstanding_bursts: at
//         most W in flight), as the DMA queue sends it; for a segment this bounds its first and
//         its last column;
//       * on a shared command bus (LPDDR4, DDR3), each ACT (PRE) delays the columns around it by
//         (its bus cycles - 1) / 2 on average, where it has to fit between column commands.
//   - a read completes tCL + BL/2 after its column command, a write tCWL + BL/2 after; the request
//     completes at its last segment's completion, seen at core cycle ceil(e*Pm/Pc).
// Energy: the command-level model's per-event prices (MemoryStats) applied to these counts: ACTs,
// read and write bursts, refreshes (every tREFI of the run, per pseudo-channel), background cycles
// active (some bank of the channel open) or precharged.
//
// Contract: access() returns the completion core cycle at once; requests may come in any order
// of arrival (a later-sent request may arrive earlier), and the model never fails on one.
// stats(end) covers memory cycles [0, end).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "arch/dram/address_mapping.hpp"
#include "arch/dram/dram_config.hpp"
#include "models/dram/memory_system.hpp"

namespace npusim::dram {

class BulkTiming {
 public:
  // `core_period_ps` and `memory_period_ps`: the clocks of the crossing; `window`: bursts in
  // flight per initiator (0: no limit).
  BulkTiming(MemoryConfig config, uint64_t core_period_ps, uint64_t memory_period_ps, int window);

  // Called per segment placed: its channel, bytes (whole bursts) and completion core cycle.
  using SegmentObserver = std::function<void(uint32_t channel, uint64_t bytes, uint64_t cycle)>;
  void set_segment_observer(SegmentObserver observer) { observer_ = std::move(observer); }

  // The core cycle the request's last burst completes (> arrival).
  uint64_t access(int initiator, uint64_t addr, uint64_t len, bool is_write, uint64_t arrival);

  uint64_t entry_memory_cycle(uint64_t core_cycle) const {
    return core_cycle * core_ps_ / mem_ps_ + 1;
  }
  uint64_t seen_core_cycle(uint64_t memory_cycle) const {
    return (memory_cycle * mem_ps_ + core_ps_ - 1) / core_ps_;
  }
  // Figures over memory cycles [0, end), priced as MemorySystem::stats() prices them.
  MemoryStats stats(uint64_t end) const;
  std::vector<uint64_t> channel_bursts() const { return channel_bursts_; }
  const MemoryConfig& config() const { return cfg_; }
  const AddressMapper& mapper() const { return mapper_; }

 private:
  struct Bank {
    bool open = false;
    uint32_t row = 0;
    uint64_t act = 0;  // last ACT
    bool activated = false;
    uint64_t last_read = 0, last_write = 0;  // last column commands (0: none)
    bool read_seen = false, write_seen = false;
  };
  // A placed segment, as later arrivals see it.
  struct Placed {
    uint64_t ready;      // the cycle it could start (arrival, window)
    uint64_t bus_start;  // its first column
    uint64_t bus_end;    // the cycle its columns left the bus free
  };
  struct Pc {
    uint64_t bus_free = 0;
    uint64_t last_read = 0, last_write = 0;
    bool read_seen = false, write_seen = false;
    uint64_t last_act = 0;
    bool any_act = false;
    uint64_t faw[4] = {0, 0, 0, 0};  // the last four ACTs' cycle + tFAW
    int faw_pos = 0;
    uint64_t act_ok = 0;    // tRFC after the last refresh
    uint64_t next_due = 0;  // the next refresh
    uint64_t refs = 0;
    int open_banks = 0;
    std::deque<Placed> recent;  // the last segments placed, in placement order
    uint64_t max_ready = 0;     // of every segment placed
    uint64_t act_bus_loss = 0;  // half cycles of shared command bus not yet charged
  };
  struct Channel {
    int open_banks = 0;
    uint64_t open_since = 0;
    uint64_t active_cycles = 0;
  };
  // An initiator's bursts as its window sees them: how many complete at each memory cycle from
  // `cursor` on (a ring indexed by cycle), and how many completed before it.
  struct Initiator {
    uint64_t next = 0;                  // bursts so far
    std::vector<uint32_t> completions;  // power-of-two size
    uint64_t cursor = 0;
    uint64_t counted = 0;
  };

  // Places one segment; returns its last burst's completion (memory cycle).
  uint64_t place(int initiator, const DramAddress& a, uint64_t n, bool is_write, uint64_t ready);
  // The first cycle >= `from` at which `cycles` of bus are free between the recent segments.
  static uint64_t first_fit(const Pc& p, uint64_t from, uint64_t cycles);
  // Applies pc's refreshes due at or before `cycle`.
  void refresh_until(uint32_t pc_index, uint64_t cycle);
  // The first memory cycle by which `count` of `init`'s bursts have completed.
  uint64_t completed_by(Initiator& init, uint64_t count) const;
  void add_completion(Initiator& init, uint64_t cycle) const;
  uint64_t window_bound(Initiator& init, uint64_t n, uint64_t step) const;
  void open_bank(uint32_t channel, Bank& b, uint64_t act_cycle);
  void close_pc_banks(uint32_t pc_index, uint64_t pre_cycle);

  MemoryConfig cfg_;
  AddressMapper mapper_;
  uint64_t core_ps_, mem_ps_;
  uint64_t window_;
  uint64_t burst_bytes_;
  bool column_lowest_ = false;  // the column is the mapping's lowest field, without XOR
  int pcs_per_channel_, banks_per_pc_, bank_groups_;
  // Timing in memory cycles.
  uint64_t step_l_, step_s_, rl_, wl_, rcd_r_, rcd_w_, rp_, ras_, rc_, rtp_, wtp_, rrd_s_, rrd_l_,
      faw_, rfc_, refi_, rtw_, wtr_, frontend_;
  bool refresh_;  // all-bank refresh holds segments (per-bank refresh is only counted)
  uint64_t per_bank_interval_ = 0;  // per-bank refresh: cycles between a pc's REFpb, else 0
  // ACT - 1 and PRE - 1 command bus cycles, in half cycles (0: dual bus).
  uint64_t act_bus_halves_, pre_bus_halves_;
  std::vector<Bank> banks_;          // [channel][pc][bank group][bank]
  std::vector<Pc> pcs_;              // [channel][pc]
  std::vector<uint64_t> group_act_;  // [channel][pc][bank group]: last ACT + tRRD_L
  std::vector<Channel> channels_;
  std::vector<Initiator> initiators_;
  SegmentObserver observer_;

  // Counts.
  uint64_t reads_ = 0, writes_ = 0, acts_ = 0, pres_ = 0, row_hits_ = 0;
  uint64_t read_latency_sum_ = 0, write_latency_sum_ = 0;
  std::vector<uint64_t> read_latency_histogram_;
  std::vector<uint64_t> channel_bursts_;
  uint64_t last_cycle_ = 0;  // latest completion placed
};

}  // namespace npusim::dram
