#include "models/execution_unit.hpp"

namespace npusim {

std::exception_ptr ExecutionUnit::failure_;

ExecutionUnit::ExecutionUnit(sc_core::sc_module_name name, const Program& program,
                             std::vector<uint32_t> stream, Scoreboard& scoreboard,
                             const CoreClock& clock)
    : sc_module(name),
      program_(program),
      scoreboard_(scoreboard),
      clock_(clock),
      stream_(std::move(stream)),
      layer_busy_(program.layers.size(), 0),
      layer_stall_(program.layers.size(), 0) {
  SC_HAS_PROCESS(ExecutionUnit);
  SC_THREAD(run);
}

void ExecutionUnit::add_busy(const Instruction& instr, uint64_t cycles) {
  stats_.busy_cycles += cycles;
  layer_busy_[instr.layer] += cycles;
}

void ExecutionUnit::run() {
  try {
    for (uint32_t id : stream_) {
      const Instruction& instr = program_.instructions[id];
      uint64_t before = clock_.now();
      scoreboard_.wait_for(instr.deps);
      uint64_t stalled = clock_.now() - before;
      stats_.stall_cycles += stalled;
      layer_stall_[instr.layer] += stalled;
      execute(instr);
      ++stats_.instructions;
    }
  } catch (...) {
    if (!failure_) failure_ = std::current_exception();
    sc_core::sc_stop();
  }
}

void ExecutionUnit::register_stats(stats::Registry& reg, const std::string& prefix) const {
  reg.counter(prefix + ".instructions", "count", "instructions the unit executed",
              stats_.instructions);
  reg.counter(prefix + ".busy_cycles", "cycles", "cycles the unit's datapath was occupied",
              stats_.busy_cycles);
  reg.counter(prefix + ".stall_cycles", "cycles",
              "cycles the unit's next instruction waited on its dependencies", stats_.stall_cycles);
}

}  // namespace npusim
