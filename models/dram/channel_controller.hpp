// The memory controller of one channel: bounded read and write queues, an FR-FCFS scheduler with
// write draining, open- or closed-page policy and all-bank or per-bank refresh per
// pseudo-channel, issuing commands to a ChannelTiming.
//
// Timing rule: at every cycle the scheduler issues, per command bus, the best command that is
// legal at that cycle: refresh work first (PRE of open banks, then REF, once tREFI has elapsed;
// the pseudo-channel takes no other ACT or column command meanwhile; with per-bank refresh, PRE
// of the bank whose turn it is, then REFpb, every tREFI / banks, only that bank waiting for
// it; the turn goes, when the refresh falls due, to the bank with the fewest requests (queued or
// waiting for a slot) among those not refreshed yet in this round of all the pseudo-channel's
// banks, of those one not served within the last 2 tRFCpb, of those the one served last (a
// stream has just left it), then the highest), then row hits (column
// commands), then the oldest request's ACT or PRE; ties go to the older request. A PRE that
// would close a row still wanted by a queued request is not a candidate (open page). Reads and
// writes are served from one queue at a time: writes once the write queue holds more than the
// high watermark or no read waits, reads again once it holds fewer than the low watermark. A
// read completes tCL + BL/2 after its RD, a write tCWL + BL/2 after its WR; the queue slot frees
// when the column command issues.
//
// Instead of evaluating every cycle, the controller keeps each bank's candidate command and the
// earliest cycle it becomes legal, and jumps to the best one. A candidate is recomputed only when
// its bank's state or queue changed; its bank-level timing bound changes only then too, and the
// bounds shared with other banks (bank group, pseudo-channel, bus) are a few loads per bank.
// Between two decisions nothing changes but time, so the chosen cycle is the first one a
// clock-by-clock scheduler would act on.
// ControllerConfig::clock_by_clock selects a literal cycle-by-cycle scan of every queued request;
// tests prove both give identical cycles.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "arch/dram/address_mapping.hpp"
#include "arch/dram/dram_config.hpp"
#include "models/dram/dram_timing.hpp"
#include "models/dram/queues.hpp"

namespace npusim::dram {

inline constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();
// Bank bitmasks are 64 bits wide (the config loader rejects more banks per channel).
inline constexpr int kMaxBanksPerChannel = 64;

struct ChannelStats {
  uint64_t reads = 0;   // RD/RDA issued
  uint64_t writes = 0;  // WR/WRA issued
  uint64_t acts = 0;
  uint64_t pres = 0;  // explicit PRE (auto-precharges not counted)
  uint64_t refs = 0;
  uint64_t row_hits = 0;  // column commands to a row that served another since its ACT
  uint64_t read_latency_sum = 0;
  uint64_t write_latency_sum = 0;
  std::vector<uint64_t> read_latency_histogram;  // [latency in cycles] -> reads
  uint64_t active_standby_cycles = 0;            // some bank of the channel open
  uint64_t precharge_standby_cycles = 0;         // every bank closed
};

class ChannelController {
 public:
  // Called once per completed request with the cycle its data transfer ends.
  using Callback = std::function<void(uint64_t id, uint64_t cycle)>;
  // Called for every command issued (tracing only; unset, it costs one branch per command).
  using CommandObserver =
      std::function<void(Command cmd, uint32_t bank, uint32_t row, uint64_t cycle)>;

  explicit ChannelController(const MemoryConfig& config);

  bool will_accept(bool is_write) const {
    return is_write ? queued_[1] < size_t(write_capacity_) : queued_[0] < size_t(read_capacity_);
  }
  // Enqueues at cycle `now` (== the last advance_to target); requires will_accept().
  void add(const DramAddress& a, bool is_write, uint64_t id, uint64_t now);
  // add() if the queue accepts the request and none waits before it; else the request waits, in
  // order, and enters at the cycle after the command that freed a slot for it (advance_to()).
  // Returns false when it waits.
  bool add_or_wait(const DramAddress& a, bool is_write, uint64_t id, uint64_t now) {
    if (waiting_.empty() && will_accept(is_write)) {
      add(a, is_write, id, now);
      return true;
    }
    waiting_.push_back({a, id, is_write});
    return false;
  }
  // Requests waiting for a queue slot, and the cycle the last of them entered the queue (valid
  // once none waits).
  size_t waiting() const { return waiting_.size(); }
  uint64_t waiting_drained_at() const { return drained_at_; }
  // The first cycle >= now at which a command issues or a request completes; kNever if none.
  uint64_t next_event_cycle();
  // Issues every command of the cycles before `cycle` and reports every completion before it.
  void advance_to(uint64_t cycle, const Callback& on_complete);
  // advance_to(cycle) for a channel whose next_event_cycle() is >= cycle: only the clock moves.
  void skip_to(uint64_t cycle) {
    if (cycle > now_) now_ = cycle;
  }
  // A lower bound of the first completion at or after now (see MemorySystem).
  uint64_t next_completion_bound();

  const ChannelStats& stats() const { return stats_; }
  // Standby cycles over [0, cycle): some bank open (active) or none (precharged).
  void background_cycles(uint64_t cycle, uint64_t* active, uint64_t* precharged) const;
  size_t outstanding() const {
    return waiting_.size() + queued_[0] + queued_[1] + read_done_.size() + write_done_.size();
  }
  const ChannelTiming& timing() const { return timing_; }
  void set_command_observer(CommandObserver observer) { observer_ = std::move(observer); }

 private:
  struct Request {
    uint64_t id;
    uint64_t arrival;
    uint64_t ready;  // arrival + front-end latency
    uint64_t seq;    // arrival order over both queues
    uint32_t bank;   // flat bank within the channel
    uint32_t row;
  };
  struct Completion {
    uint64_t id;
    uint64_t cycle;
  };
  struct Waiting {
    DramAddress address;
    uint64_t id;
    bool is_write;
  };
  enum class Kind : uint8_t { kNone, kRefreshDue, kCommand };
  // rank: -1 refresh due, 0 refresh PRE/REF, 1 row hit, 2 ACT/PRE of a request; lower wins a
  // tie on cycle, then the older request (smaller seq).
  struct Decision {
    uint64_t cycle = kNever;
    int rank = 3;
    uint64_t seq = kNever;
    Kind kind = Kind::kNone;
    Command cmd = Command::kAct;
    uint32_t bank = 0;
    uint32_t row = 0;
    uint32_t pos = 0;  // position of the served request in its bank queue
    uint32_t pc = 0;   // for kRefreshDue
    uint64_t own = 0;  // bank-level timing bound and request readiness (see select())
    int cls = 0;       // ChannelTiming::timing_class(cmd)
    bool better_than(const Decision& o) const {
      if (cycle != o.cycle) return cycle < o.cycle;
      if (rank != o.rank) return rank < o.rank;
      return seq < o.seq;
    }
  };

  // Event mode: the cached best decision, recomputed lazily.
  const Decision& decision() {
    if (!cached_valid_) {
      select();
      cached_valid_ = true;
    }
    return cached_;
  }
  // Computes the best decision into cached_.
  void select();
  // The candidate of bank `b` from the active queue (kind kNone if the bank has no request), into
  // `c` (every field).
  void bank_candidate(uint32_t b, Decision& c) const;
  void refresh_candidates(Decision& best, bool due_events) const;
  // Clock-by-clock mode: the best command legal exactly at `cycle`, by scanning every request.
  Decision decide_at(uint64_t cycle);
  // The read/write mode a decision made now would use (hysteresis between the watermarks).
  bool next_write_mode() const {
    const size_t writes = queued_[1];
    const bool reads_waiting = queued_[0] > 0;
    if (!write_mode_) return writes > 0 && (writes > high_writes_ || !reads_waiting);
    return !(writes == 0 || (writes < low_writes_ && reads_waiting));
  }
  bool update_write_mode();
  void execute(const Decision& d);
  void deliver(uint64_t before, const Callback& on_complete);
  void track_background(uint64_t cycle);
  void set_refresh_pending(uint32_t pc);
  // The banks a pending refresh of `pc` holds: all of the pseudo-channel's, or with per-bank
  // refresh the one whose turn it is.
  uint64_t refresh_banks(uint32_t pc) const;
  // Moves waiting requests into the queue at `cycle` while it accepts them.
  void admit_waiting(uint64_t cycle);
  uint64_t blocked_banks() const { return pending_mask_; }

  const MemoryConfig& cfg_;
  ChannelTiming timing_;
  int read_capacity_, write_capacity_;
  bool closed_page_;
  bool refresh_;
  bool per_bank_refresh_;
  uint64_t refresh_interval_;  // cycles between two refresh commands of a pseudo-channel
  int frontend_;
  int read_latency_, write_latency_;
  uint64_t now_ = 0;
  uint64_t next_seq_ = 0;

  // Per queue (0 reads, 1 writes) and flat bank, requests in arrival order.
  std::vector<FrontErasingVector<Request>> bank_queue_[2];
  size_t queued_[2] = {0, 0};
  uint64_t nonempty_[2] = {0, 0};  // banks with a queued request
  bool write_mode_ = false;
  RingQueue<Completion> read_done_;   // completion cycles are non-decreasing
  RingQueue<Completion> write_done_;  // likewise
  RingQueue<Waiting> waiting_;        // requests that found their queue full, in order
  uint64_t drained_at_ = 0;

  std::vector<uint64_t> refresh_due_;        // per pseudo-channel
  uint64_t earliest_refresh_due_ = 0;        // the minimum of refresh_due_
  size_t high_writes_ = 0, low_writes_ = 0;  // the watermarks in requests (constructor)
  std::vector<uint8_t> refresh_pending_;
  // Per-bank refresh, per pseudo-channel: the bank (within it) whose refresh is pending, and the
  // banks refreshed so far in this round.
  std::vector<uint32_t> refresh_turn_;
  std::vector<uint64_t> refreshed_in_round_;
  std::vector<uint64_t> last_column_;  // per bank: the cycle of its last column command + 1
  uint64_t pending_mask_ = 0;          // banks of pseudo-channels waiting for their refresh
  uint64_t pc_bank_mask_ = 0;          // banks of pseudo-channel 0 (shifted for the others)

  // Per-bank candidates of the active queue. A candidate's command, request and bank-level bound
  // change only when its bank's state or queue does (then it is `dirty_`); the bounds it shares
  // with other banks are read afresh at every selection.
  std::vector<Decision> candidate_;
  uint64_t dirty_ = ~uint64_t{0};
  Decision cached_;
  bool cached_valid_ = false;

  bool any_open_ = false;
  uint64_t background_since_ = 0;
  ChannelStats stats_;
  CommandObserver observer_;
};

}  // namespace npusim::dram
