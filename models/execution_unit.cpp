#include "models/execution_unit.hpp"

#include <fmt/format.h>

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
      layer_stall_(program.layers.size(), 0),
      layer_causes_(program.layers.size()),
      layer_events_(program.layers.size()) {
  SC_HAS_PROCESS(ExecutionUnit);
  SC_THREAD(run);
}

void ExecutionUnit::add_busy(const Instruction& instr, uint64_t cycles) {
  stats_.busy_cycles += cycles;
  layer_busy_[instr.layer] += cycles;
}

void ExecutionUnit::trace_waveforms(sc_core::sc_trace_file* file, const std::string& prefix) {
  waves_ = std::make_unique<Waves>();
  waves_->queue_depth = static_cast<uint32_t>(stream_.size());
  sc_core::sc_trace(file, waves_->busy, prefix + ".busy");
  sc_core::sc_trace(file, waves_->waiting, prefix + ".waiting");
  sc_core::sc_trace(file, waves_->instruction, prefix + ".instruction");
  sc_core::sc_trace(file, waves_->queue_depth, prefix + ".queue_depth");
}

void ExecutionUnit::attribute_stall(const Instruction& instr, uint64_t stalled) {
  const auto& timings = scoreboard_.timings();
  uint32_t last = instr.deps.front();
  for (uint32_t d : instr.deps) {
    if (timings[d].end_cycle > timings[last].end_cycle) last = d;
  }
  StallCauses& c = layer_causes_[instr.layer];
  switch (program_.instructions[last].unit) {
    case UnitKind::kDmaLoad:
    case UnitKind::kDmaStore:
    case UnitKind::kLink:  // data movement, as the DMA's
      c.dma += stalled;
      break;
    case UnitKind::kVector:
      c.vector += stalled;
      break;
    case UnitKind::kMatrix:
      c.matrix += stalled;
      break;
    case UnitKind::kHost:
    case UnitKind::kHostLink:
      c.host += stalled;
      break;
  }
}

void ExecutionUnit::run() {
  try {
    for (uint32_t id : stream_) {
      const Instruction& instr = program_.instructions[id];
      before_issue(instr);
      uint64_t before = clock_.now();
      if (waves_) waves_->busy = false, waves_->waiting = true;
      waiting_on_tokens_ = true;
      scoreboard_.wait_for(instr.deps);
      waiting_on_tokens_ = false;
      uint64_t stalled = clock_.now() - before;
      stats_.stall_cycles += stalled;
      layer_stall_[instr.layer] += stalled;
      if (stalled > 0 && !instr.deps.empty()) attribute_stall(instr, stalled);
      if (waves_) {
        waves_->waiting = false;
        waves_->busy = true;
        waves_->instruction = id;
        --waves_->queue_depth;
      }
      execute(instr);
      count_instruction_events(instr, program_.dtype, ports_, layer_events_[instr.layer]);
      ++stats_.instructions;
      ++issued_;
    }
    if (waves_) waves_->busy = waves_->waiting = false;
  } catch (...) {
    if (!failure_) failure_ = std::current_exception();
    sc_core::sc_stop();
  }
}

std::string ExecutionUnit::state() const {
  auto describe = [this](uint32_t id) { return describe_instruction(program_, id); };
  if (issued_ == stream_.size()) return fmt::format("done ({} instructions)", stream_.size());
  const uint32_t id = stream_[issued_];
  if (!waiting_on_tokens_) {
    return fmt::format("stopped inside {}, {} of its {} instructions done", describe(id), issued_,
                       stream_.size());
  }
  std::string missing;
  for (uint32_t d : program_.instructions[id].deps) {
    if (scoreboard_.done(d)) continue;
    missing += fmt::format("{}{}", missing.empty() ? "" : ", ", describe(d));
  }
  return fmt::format("waits at {}, {} of its {} instructions done; tokens missing: {}",
                     describe(id), issued_, stream_.size(), missing);
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
