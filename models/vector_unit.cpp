#include "models/vector_unit.hpp"

#include "models/vector_core.hpp"

namespace npusim {

VectorUnit::VectorUnit(sc_core::sc_module_name name, const Program& program,
                       std::vector<uint32_t> stream, Scoreboard& scoreboard, const CoreClock& clock,
                       OnChipBuffers& buffers, const VectorUnitConfig& config, bool compute_values)
    : ExecutionUnit(name, program, std::move(stream), scoreboard, clock),
      buffers_(buffers),
      config_(config),
      compute_values_(compute_values) {}

void VectorUnit::execute(const Instruction& instr) {
  const uint64_t start = clock_.now();
  const uint64_t cycles = vector_cycles(config_, instr.op);
  elements_ += vector_execute(buffers_, program_, instr, compute_values_);
  if (shadows_ != nullptr && compute_values_) {
    shadows_->capture(instr, buffers_.contents(BufferId::kUnified));
  }
  add_busy(instr, cycles);
  wait(clock_.cycles(cycles));
  complete(instr, start, start + cycles);
}

}  // namespace npusim
