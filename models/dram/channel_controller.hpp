// The memory controller of one channel: bounded read and write queues, an FR-FCFS scheduler with
// write draining, open- or closed-page policy and all-bank refresh per pseudo-channel, issuing
// commands to a ChannelTiming.
//
// Timing rule: at every cycle the scheduler issues, per command bus, the best command that is
// legal at that cycle: refresh work first (PRE of open banks, then REF, once tREFI has elapsed;
// the pseudo-channel takes no other ACT or column command meanwhile), then row hits (column
// commands), then the oldest request's ACT or PRE. A PRE that would close a row still wanted by
// a queued request is not a candidate (open page). Reads and writes are served from one queue
// at a time: writes once the write queue holds more than the high watermark or no read waits,
// reads again once it holds fewer than the low watermark. A read completes tCL + BL/2 after its
// RD, a write tCWL + BL/2 after its WR. The queue slot frees when the column command issues.
//
// Instead of evaluating every cycle, the controller computes the earliest cycle any candidate
// becomes legal and jumps there: between two decisions nothing changes but time, so that cycle
// is the first one a clock-by-clock scheduler would act on. ControllerConfig::clock_by_clock
// selects a literal cycle-by-cycle evaluation; tests prove both give identical cycles.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <vector>

#include "models/dram/address_mapping.hpp"
#include "models/dram/dram_config.hpp"
#include "models/dram/dram_timing.hpp"

namespace npusim::dram {

inline constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();

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
  uint64_t active_standby_cycles = 0;     // some bank of the channel open
  uint64_t precharge_standby_cycles = 0;  // every bank closed
};

class ChannelController {
 public:
  // Called once per completed request with the cycle its data transfer ends.
  using Callback = std::function<void(uint64_t id, uint64_t cycle)>;

  explicit ChannelController(const MemoryConfig& config);

  bool will_accept(bool is_write) const {
    return is_write ? writes_.size() < size_t(write_capacity_)
                    : reads_.size() < size_t(read_capacity_);
  }
  // Enqueues at cycle `now` (>= the last advance_to target); requires will_accept().
  void add(const DramAddress& a, bool is_write, uint64_t id, uint64_t now);
  // The first cycle >= now at which a command issues or a request completes; kNever if none.
  uint64_t next_event_cycle();
  // Issues every command of the cycles before `cycle` and reports every completion before it.
  void advance_to(uint64_t cycle, const Callback& on_complete);

  const ChannelStats& stats() const { return stats_; }
  // Standby cycles over [0, cycle): some bank open (active) or none (precharged).
  void background_cycles(uint64_t cycle, uint64_t* active, uint64_t* precharged) const;
  size_t outstanding() const {
    return reads_.size() + writes_.size() + read_done_.size() + write_done_.size();
  }
  const ChannelTiming& timing() const { return timing_; }

 private:
  struct Request {
    uint64_t id;
    uint64_t arrival;
    uint64_t ready;  // arrival + front-end latency
    uint32_t bank;   // flat bank within the channel
    uint32_t row;
  };
  struct Completion {
    uint64_t id;
    uint64_t arrival;
    uint64_t cycle;
  };
  enum class Kind : uint8_t { kNone, kRefreshDue, kCommand };
  struct Decision {
    uint64_t cycle = kNever;
    Kind kind = Kind::kNone;
    Command cmd = Command::kAct;
    uint32_t bank = 0;
    uint32_t row = 0;
    int rank = 3;          // 0 refresh, 1 row hit, 2 request's ACT/PRE: lower wins a tie
    int index = -1;        // queue position of the request a column command serves
    bool from_writes = false;
    uint32_t pc = 0;       // for kRefreshDue
  };

  const Decision& decision();
  // Best command legal exactly at `cycle` (clock-by-clock mode), or kind kNone.
  Decision decide_at(uint64_t cycle);
  void update_write_mode();
  void consider(Decision& best, const Decision& c) const;
  void collect(Decision& best, bool at_cycle_only, uint64_t cycle);
  void execute(const Decision& d);
  void deliver(uint64_t before, const Callback& on_complete);
  void track_background(uint64_t cycle);

  const MemoryConfig& cfg_;
  ChannelTiming timing_;
  int read_capacity_, write_capacity_;
  size_t write_high_, write_low_;
  bool closed_page_;
  bool refresh_;
  int frontend_;
  int read_latency_, write_latency_;
  uint64_t now_ = 0;

  std::vector<Request> reads_;   // arrival order
  std::vector<Request> writes_;  // arrival order
  bool write_mode_ = false;
  std::deque<Completion> read_done_;   // completion cycles are non-decreasing
  std::deque<Completion> write_done_;  // likewise

  std::vector<uint64_t> refresh_due_;  // per pseudo-channel
  std::vector<uint8_t> refresh_pending_;

  Decision cached_;
  bool cached_valid_ = false;

  // Scratch of the scheduler scan, per flat bank.
  std::vector<int> first_hit_, first_any_;
  std::vector<uint32_t> touched_;

  bool any_open_ = false;
  uint64_t background_since_ = 0;
  ChannelStats stats_;
};

}  // namespace npusim::dram
