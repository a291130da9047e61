#include "models/scoreboard.hpp"

#include "support/error.hpp"

namespace npusim {

Scoreboard::Scoreboard(sc_core::sc_module_name name, size_t instructions, const CoreClock& clock)
    : sc_module(name), clock_(clock), done_(instructions, 0), timings_(instructions) {
  SC_HAS_PROCESS(Scoreboard);
  SC_METHOD(retire);
  sensitive << retire_event_;
  dont_initialize();
}

void Scoreboard::wait_for(const std::vector<uint32_t>& deps) {
  for (uint32_t d : deps) {
    NPUSIM_CHECK(d < done_.size(), "dependency on instruction {} of {}", d, done_.size());
    while (!done_[d]) wait(changed_);
  }
}

void Scoreboard::mark_done(uint32_t id) {
  NPUSIM_CHECK(!done_[id], "instruction {} completed twice", id);
  done_[id] = 1;
  ++completed_;
  changed_.notify(sc_core::SC_ZERO_TIME);
}

void Scoreboard::complete(uint32_t id, uint64_t start, uint64_t end) {
  uint64_t now = clock_.now();
  NPUSIM_CHECK(id < done_.size() && start <= end && end >= now,
               "instruction {} reports [{}, {}] at cycle {}", id, start, end, now);
  timings_[id] = {start, end};
  if (end == now) {
    mark_done(id);
    return;
  }
  pending_.emplace(end, id);
  retire_event_.notify(clock_.cycles(end - now));  // an earlier pending notification wins
}

void Scoreboard::retire() {
  uint64_t now = clock_.now();
  while (!pending_.empty() && pending_.top().first <= now) {
    mark_done(pending_.top().second);
    pending_.pop();
  }
  if (!pending_.empty()) retire_event_.notify(clock_.cycles(pending_.top().first - now));
}

}  // namespace npusim
