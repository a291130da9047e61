// What every unit of the SoC shares: it executes its own instruction stream in order, waiting on
// the scoreboard for each instruction's dependency tokens. A failure inside a unit's thread is
// kept and rethrown by the driver after sc_start returns, with its type intact.
//
// Recording (both off unless asked for): each instruction's [start, end) goes to the timeline
// (support/timeline.hpp) when one is attached; with waveforms, four variables traced by SystemC's
// VCD writer follow the unit: `busy` (from issuing an instruction until the unit can take the
// next), `waiting` (its next instruction waits on dependency tokens), `instruction` (id of the last
// instruction issued) and `queue_depth` (instructions of its stream not yet issued).
#pragma once

#include <exception>
#include <memory>
#include <string>
#include <systemc>
#include <vector>

#include "arch/program.hpp"
#include "models/clock.hpp"
#include "models/event_counting.hpp"
#include "models/scoreboard.hpp"
#include "support/stats.hpp"
#include "support/timeline.hpp"

namespace npusim {

// Cycles a unit's next instruction waited, by the unit of the dependency that completed last (a
// core-to-core copy counts as data movement, with the DMA).
struct StallCauses {
  uint64_t dma = 0, vector = 0, matrix = 0, host = 0;  // host: the host CPU or its link
};

struct UnitStats {
  uint64_t instructions = 0;
  uint64_t busy_cycles = 0;   // cycles the unit's datapath was occupied
  uint64_t stall_cycles = 0;  // cycles the head instruction waited on dependencies
};

class ExecutionUnit : public sc_core::sc_module {
 public:
  ExecutionUnit(sc_core::sc_module_name name, const Program& program, std::vector<uint32_t> stream,
                Scoreboard& scoreboard, const CoreClock& clock);

  const UnitStats& stats() const { return stats_; }
  // Per layer: cycles this unit was busy, and cycles it stalled on dependencies.
  const std::vector<uint64_t>& layer_busy_cycles() const { return layer_busy_; }
  const std::vector<uint64_t>& layer_stall_cycles() const { return layer_stall_; }
  const std::vector<StallCauses>& layer_stall_causes() const { return layer_causes_; }
  // Per layer: the energy events (models/event_counting.hpp) of the instructions it executed.
  const std::vector<EventCounts>& layer_events() const { return layer_events_; }
  // The port widths events are counted in (before sc_start; the Soc sets the hardware's).
  void set_buffer_ports(const BufferPorts& ports) { ports_ = ports; }
  static std::exception_ptr failure() { return failure_; }
  // Forgets a failure before the next run of the process (one run's failure is not another's:
  // the Python module and the run-path fuzz target simulate one run after another).
  static void clear_failure() { failure_ = nullptr; }
  // Registers this unit's counters under `prefix` (e.g. "units.dma_load"); the registry must be
  // formatted while the unit exists.
  virtual void register_stats(stats::Registry& reg, const std::string& prefix) const;
  // Records every instruction's [start, end) on `track` of `timeline` (which outlives the run).
  void record_to(timeline::Timeline* timeline, uint32_t track) {
    timeline_ = timeline;
    track_ = track;
  }
  // Traces this unit's waveform variables into `file` as "<prefix>.busy" etc. (before sc_start).
  void trace_waveforms(sc_core::sc_trace_file* file, const std::string& prefix);
  // Where the unit stands, for a run that could not finish: "done", or the instruction it waits on
  // and each of its dependency tokens not yet completed (with the unit that owns it).
  std::string state() const;

 protected:
  // Executes one instruction: computes its values, advances simulated time for as long as the
  // unit is occupied, and reports the instruction's completion to the scoreboard.
  virtual void execute(const Instruction& instr) = 0;
  // Waits, before `instr`'s dependency tokens are waited on, until the unit can take it (a DMA
  // queue with every transfer slot taken); the time is neither busy nor a dependency stall.
  virtual void before_issue(const Instruction& /*instr*/) {}
  void add_busy(const Instruction& instr, uint64_t cycles);
  // Reports the instruction's completion to the scoreboard (and the timeline, when recording).
  void complete(const Instruction& instr, uint64_t start, uint64_t end) {
    scoreboard_.complete(instr.id, start, end);
    if (timeline_) timeline_->instruction(track_, instr.id, start, end);
  }

  const Program& program_;
  Scoreboard& scoreboard_;
  const CoreClock& clock_;
  UnitStats stats_;
  timeline::Timeline* timeline_ = nullptr;
  uint32_t track_ = 0;

 private:
  struct Waves {
    bool busy = false, waiting = false;
    uint32_t instruction = 0, queue_depth = 0;
  };
  void run();
  // Charges `stalled` cycles to the unit of the dependency that completed last.
  void attribute_stall(const Instruction& instr, uint64_t stalled);

  std::vector<uint32_t> stream_;
  size_t issued_ = 0;               // instructions of stream_ issued so far
  bool waiting_on_tokens_ = false;  // stream_[issued_] waits on the scoreboard
  std::vector<uint64_t> layer_busy_, layer_stall_;
  std::vector<StallCauses> layer_causes_;
  std::vector<EventCounts> layer_events_;
  BufferPorts ports_;
  std::unique_ptr<Waves> waves_;  // only with waveforms
  static std::exception_ptr failure_;
};

}  // namespace npusim
