// Command-level off-chip memory: the DRAM model of models/dram/ (dram::MemorySystem: channels,
// banks, JEDEC timing, FR-FCFS, refresh) behind the off-chip memory interface
// (models/offchip_memory_interface.hpp), plus the functional bytes.
//
// Protocol: base-protocol non-blocking transport, one DRAM burst per transaction. The initiator
// sends BEGIN_REQ with an annotated delay (core cycles until the burst leaves it); the module
// answers TLM_ACCEPTED and calls nb_transport_bw(BEGIN_RESP) at the core cycle the burst
// completes, which the initiator answers with TLM_COMPLETED. The bytes move when BEGIN_REQ is
// received: the compiler's dependency tokens forbid overlapping accesses in flight, so when they
// move inside the transfer's window cannot be observed.
//
// Timing rule (clock crossing, exact in integer picoseconds; core period Pc, memory tCK Pm):
//   - a burst issued at core cycle c enters the memory at memory cycle floor(c*Pc/Pm) + 1, the
//     first memory edge strictly after the core edge that issued it (one synchronizer edge);
//     bursts issued in the same core cycle enter by initiator (binding order: the load queue
//     first), each initiator's in the order it issued them;
//   - if its channel's controller queue is full it waits, in order, in a per-channel FIFO in front
//     of the controller and enters at the memory cycle after the event that freed a slot;
//   - a burst the memory completes at memory cycle e is seen at core cycle ceil(e*Pm/Pc), the
//     first core edge at or after it; bursts seen in the same core cycle are answered, while some
//     burst waits in a FIFO, by memory cycle, then channel; once none waits, by channel, then
//     memory cycle.
// The module's process wakes only at core cycles where a request arrives or a burst may complete
// (MemorySystem::next_completion_bound; with waveforms, every memory event), never on idle
// cycles: the commands between two wake-ups are issued by the next advance_to. With nothing in
// flight it sleeps until the next request, and the refreshes of the idle stretch are replayed by
// the next advance_to. The FIFOs live in the channel controllers (ChannelController::add_or_wait).
// Early responses (models/early_response.hpp): while no other process has activity pending before
// the next such cycle, one wake-up goes on to it and delivers its completions early, as long as
// their initiators call them quiet (without waveforms and timeline recording only); a cycle
// whose completions are not all quiet is a wake-up of its own, so the initiators see the same
// responses at the same cycles in the same order.
//
// Recording (off unless asked for): completed bytes per channel and, with burst detail, every DRAM
// command go to the timeline; with waveforms, "<channel>.command" (0 none, else 1 + the
// dram::Command) and "<channel>.bank" are traced. The command variables change at the core cycle
// in which the module processes the command: the core edge at or after it while requests are in
// flight, later for refreshes of a stretch without traffic (replayed at the next request); they
// return to 0 one core cycle later.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "models/dram/memory_system.hpp"
#include "models/early_response.hpp"
#include "models/offchip_memory_interface.hpp"

namespace npusim {

// The clock-domain crossing of the rule above, plain C++.
class ClockCrossing {
 public:
  ClockCrossing(uint64_t core_period_ps, uint64_t memory_period_ps)
      : core_ps_(core_period_ps), mem_ps_(memory_period_ps) {}
  // Memory cycle at which a request issued at core cycle `c` enters the memory.
  uint64_t entry_memory_cycle(uint64_t c) const { return c * core_ps_ / mem_ps_ + 1; }
  // Core cycle at which a completion at memory cycle `e` is seen.
  uint64_t seen_core_cycle(uint64_t e) const { return (e * mem_ps_ + core_ps_ - 1) / core_ps_; }
  // Core cycle during which memory cycle `e` begins.
  uint64_t core_cycle_of(uint64_t e) const { return e * mem_ps_ / core_ps_; }
  uint64_t memory_period_ps() const { return mem_ps_; }

 private:
  uint64_t core_ps_, mem_ps_;
};

// The requests sent and not yet handed to the memory, in the order of the rule: by arrival cycle,
// then initiator, then the order the initiator sent them. One queue per initiator, each kept in
// cycle order (an initiator sends in non-decreasing cycle order nearly always, so an insertion
// moves nothing), merged at their fronts: a few comparisons per request instead of a heap's.
class ArrivalQueues {
 public:
  struct Arrival {
    uint64_t cycle;  // core cycle of arrival
    tlm::tlm_generic_payload* payload;
  };
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  int initiators() const { return int(queues_.size()); }
  void push(int initiator, uint64_t cycle, tlm::tlm_generic_payload* payload) {
    if (size_t(initiator) >= queues_.size()) queues_.resize(size_t(initiator) + 1);
    queues_[size_t(initiator)].push({cycle, payload});
    ++size_;
    earliest_ = std::min(earliest_, cycle);
  }
  // The earliest arrival cycle; requires !empty().
  uint64_t earliest() const { return earliest_; }
  // Initiator `i`'s first arrival, if it has one at or before cycle `c`.
  const Arrival* front(int i, uint64_t c) const {
    const Queue& q = queues_[size_t(i)];
    return !q.empty() && q.front().cycle <= c ? &q.front() : nullptr;
  }
  void pop(int i) {
    queues_[size_t(i)].pop();
    --size_;
    update_earliest();
  }
  // Takes every arrival at or before cycle `c` out, initiator by initiator, each initiator's in
  // order, calling f(initiator, arrival) for each: the order of front() and pop() above, with the
  // earliest arrival recomputed once. `f` must not push.
  template <class F>
  void take(uint64_t c, F&& f) {
    if (size_ == 0 || earliest_ > c) return;
    for (size_t i = 0; i < queues_.size(); ++i) size_ -= queues_[i].take(c, int(i), f);
    update_earliest();
  }

 private:
  class Queue {
   public:
    bool empty() const { return head_ == v_.size(); }
    const Arrival& front() const { return v_[head_]; }
    void push(Arrival a) {
      if (head_ >= 64 && 2 * head_ >= v_.size()) {  // reuse the popped front
        v_.erase(v_.begin(), v_.begin() + std::ptrdiff_t(head_));
        head_ = 0;
      }
      v_.push_back(a);
      // After the arrivals of later cycles, keeping the order of equal ones (the order sent).
      for (size_t i = v_.size() - 1; i > head_ && v_[i - 1].cycle > a.cycle; --i) {
        std::swap(v_[i - 1], v_[i]);
      }
    }
    void pop() {
      if (++head_ == v_.size()) {
        v_.clear();
        head_ = 0;
      }
    }
    template <class F>
    size_t take(uint64_t c, int initiator, F& f) {
      const size_t first = head_, end = v_.size();
      size_t i = first;
      for (; i < end && v_[i].cycle <= c; ++i) f(initiator, v_[i]);
      head_ = i;
      if (head_ == end) {
        v_.clear();
        head_ = 0;
      }
      return i - first;
    }

   private:
    std::vector<Arrival> v_;
    size_t head_ = 0;
  };
  void update_earliest() {
    earliest_ = UINT64_MAX;
    for (const Queue& q : queues_) {
      if (!q.empty()) earliest_ = std::min(earliest_, q.front().cycle);
    }
  }

  std::vector<Queue> queues_;
  size_t size_ = 0;
  uint64_t earliest_ = UINT64_MAX;
};

class DramMemory : public OffChipMemoryInterface {
 public:
  // `bytes`: functional storage (the program's footprint); `config`: a resolved memory preset,
  // `preset` as the user named it.
  DramMemory(sc_core::sc_module_name name, uint64_t bytes, std::string preset,
             dram::MemoryConfig config, const CoreClock& clock);

  // Bytes of one DRAM burst: the DMA splits its rows at multiples of it.
  uint64_t burst_bytes() const override { return burst_bytes_; }
  const dram::MemorySystem& memory() const { return memory_; }
  const ClockCrossing& crossing() const { return crossing_; }
  // Activations of the module's process (tests: early responses save some).
  uint64_t wake_ups() const { return wake_ups_; }
  // Brings the memory to core cycle `end_cycle` (refresh and background of the tail included) and
  // returns its statistics. Contract: nothing may be in flight.
  dram::MemoryStats finish(uint64_t end_cycle);
  // The figures of models/dram/memory_stats.hpp, after finish(end_cycle).
  void register_stats(stats::Registry& reg, const std::string& prefix, uint64_t end_cycle) override;
  std::optional<Energy> energy() const override;
  // A track per channel, "dram ch<c>": its completed bytes and, with burst detail, its commands.
  void record_to(timeline::Timeline& timeline) override;
  // Traces "dram.ch<c>.command" and ".bank" into `file` (before sc_start).
  void trace_waveforms(sc_core::sc_trace_file* file) override;

 private:
  struct InFlight {
    tlm::tlm_generic_payload* payload = nullptr;
    int initiator = 0;
    dram::DramAddress address;  // decoded once, on arrival
    bool is_write = false;
  };

  tlm::tlm_sync_enum nb_transport_fw(int initiator, tlm::tlm_generic_payload& payload,
                                     tlm::tlm_phase& phase, sc_core::sc_time& delay) override;
  // The module's process: brings the memory to now, then sleeps until the next arrival or event.
  void step();
  // Brings the memory to core cycle `c` and delivers the completions seen at `c`. With `early`
  // (c is after the simulated time, early_response.hpp) it stops before a response that is not
  // quiet and returns false; the rest are delivered by advance(c) at cycle c.
  bool advance(uint64_t c, bool early);
  // Hands the requests arriving at `c` to the memory (they wait there while their queue is full).
  void admit_arrivals(uint64_t c);
  // Puts completed_ in the order of the rule (see advance()).
  void order_completions(uint64_t waiting_ended_at);
  // Hands the commands of the last advance to the timeline in the same order.
  void record_commands(bool in_flight, uint64_t waiting_ended_at);
  bool deliver(uint64_t c, bool early);
  void observe_commands();
  void on_command(int channel, dram::Command cmd, uint32_t bank, uint32_t row, uint64_t cycle);
  void clear_commands();

  std::string preset_;
  dram::MemorySystem memory_;
  ClockCrossing crossing_;
  uint64_t burst_bytes_;
  ArrivalQueues arrivals_;
  std::vector<InFlight> in_flight_;  // indexed by the id given to the MemorySystem
  std::vector<uint32_t> free_slots_;
  struct Completion {
    uint32_t slot;
    uint64_t memory_cycle;
  };
  std::vector<Completion> completed_;  // completed; [delivered_, end) not yet delivered
  size_t delivered_ = 0;
  sc_core::sc_event arrival_event_;
  bool in_step_ = false;   // step() is delivering completions
  uint64_t step_now_ = 0;  // the core cycle of step()'s wake-up
  uint64_t wake_ups_ = 0;

  timeline::Timeline* timeline_ = nullptr;
  struct CommandRecord {
    uint32_t channel;
    dram::Command cmd;
    uint32_t bank, row;
    uint64_t cycle;  // memory cycle
  };
  bool record_commands_ = false;         // the timeline wants every command
  std::vector<CommandRecord> commands_;  // of the advance in progress
  std::vector<uint32_t> channel_tracks_;
  struct Waves {
    std::vector<unsigned> command, bank;
    std::vector<uint64_t> set_at;  // core cycle each command variable was set
  };
  std::unique_ptr<Waves> waves_;
  sc_core::sc_event clear_event_;
};

}  // namespace npusim
