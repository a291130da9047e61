// Counter series derived from a recorded timeline, shared by the trace writers. Each series is a
// step function sampled once per window of `window_cycles` (the last window may be shorter); the
// value of a window is its time-weighted mean:
//   - "<channel> bandwidth" (GB/s): off-chip bytes completed on the channel in the window / its
//   time;
//   - "<unit> utilization" (%): share of the window with an instruction of the unit in flight;
//   - "unified buffer in use", "weight buffer in use" (bytes): bytes a producer wrote into the
//     buffer (a DMA load, a vector instruction's output) that are live from the producer's start
//     until the last instruction that names it as a dependency completes (its own end if none
//     does); the compiler's dependency tokens name every reader of a buffer range it wrote;
//   - "power" (W), when the run gave the timeline its energies: each instruction's dynamic energy
//     spread over its [start, end), plus the constant power (docs/power.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "arch/program.hpp"
#include "support/timeline.hpp"

namespace npusim::traces {

struct Series {
  std::string name;            // "dram ch0 bandwidth"
  std::string unit;            // "GB/s", "%", "bytes"
  std::vector<double> values;  // window i covers cycles [i * window, (i + 1) * window)
};

// About 400 windows over the run, a multiple of the timeline's bandwidth buckets.
uint64_t counter_window_cycles(uint64_t total_cycles);

std::vector<Series> counter_series(const timeline::Timeline& timeline, const Program& program,
                                   uint64_t total_cycles, uint64_t window_cycles);

// Cycle -> whole nanoseconds of simulated time at the timeline's clock (period rounded to whole
// picoseconds, as the SystemC clock does).
uint64_t cycle_to_ns(const timeline::Timeline& timeline, uint64_t cycle);

}  // namespace npusim::traces
