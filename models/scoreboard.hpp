// Completion of instructions: the dependency tokens of the ISA. A unit waits here until every
// instruction it depends on has completed; units report completions, possibly in the future (the
// matrix unit accepts its next tile before the previous one has drained).
#pragma once

#include <cstdint>
#include <queue>
#include <systemc>
#include <vector>

#include "models/clock.hpp"

namespace npusim {

struct InstructionTiming {
  uint64_t start_cycle = 0;
  uint64_t end_cycle = 0;
};

class Scoreboard : public sc_core::sc_module {
 public:
  Scoreboard(sc_core::sc_module_name name, size_t instructions, const CoreClock& clock);

  // Blocks the calling thread until all `deps` completed.
  void wait_for(const std::vector<uint32_t>& deps);
  // Instruction `id` ran from `start` and completes at `end` (>= now).
  void complete(uint32_t id, uint64_t start, uint64_t end);

  bool all_done() const { return completed_ == done_.size(); }
  bool done(uint32_t id) const { return id < done_.size() && done_[id]; }
  size_t completed() const { return completed_; }
  const std::vector<InstructionTiming>& timings() const { return timings_; }

 private:
  void retire();
  void mark_done(uint32_t id);

  const CoreClock& clock_;
  std::vector<uint8_t> done_;
  std::vector<InstructionTiming> timings_;
  size_t completed_ = 0;
  sc_core::sc_event changed_;
  sc_core::sc_event retire_event_;
  using Pending = std::pair<uint64_t, uint32_t>;  // (end cycle, id)
  std::priority_queue<Pending, std::vector<Pending>, std::greater<>> pending_;
};

}  // namespace npusim
