// The hazard checker: proves after every run that no instruction touched bytes before the
// instruction it depends on was done with them, in simulated time.
//
// Each unit computes an instruction's values when it issues and then waits out its duration, so an
// instruction that started before its producer finished would still see correct data: a missing
// dependency token would shorten the cycle count and the bit-exact check would not notice. This
// checker does not trust the compiler's tokens. It derives every instruction's accesses from the
// ISA alone (accesses_of: the byte ranges of each buffer and of off-chip memory it reads and
// writes, the same extents the units touch), walks the program in order and keeps, per byte range,
// the instructions whose reads or writes are still pending with the cycle they end. With each
// instruction's window [start, end) from the scoreboard:
//   RAW: a read that starts before an earlier write of the same bytes has completed,
//   WAR: a write that starts before an earlier read of the same bytes has ended,
//   WAW: a write that starts before an earlier write of the same bytes has completed
// is an error naming both instructions, the range and the cycles. Instructions of one unit execute
// and complete in order (the ISA's contract), so pairs on the same unit are not hazards (a DMA
// queue overlaps its transfers in time, but reports their completions in order and starts one
// whose destination overlaps a transfer in flight only after that one completed).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "arch/isa.hpp"
#include "arch/program.hpp"
#include "arch/types.hpp"

namespace npusim {

struct Access {
  BufferId space = BufferId::kUnified;  // kDram: off-chip memory
  uint64_t begin = 0, end = 0;          // bytes, end exclusive
  bool write = false;
  int core = -1;  // whose buffer: -1 the instruction's own core (a COPY writes another core's)
};

// What `instr` reads and writes, from its operands; DMA boxes as their contiguous off-chip runs; a
// COPY reads its core's unified buffer and writes the destination core's.
std::vector<Access> accesses_of(const Instruction& instr, DataType dtype);

struct Window {
  uint64_t start = 0, end = 0;  // cycles
};

struct Hazard {
  std::string kind;  // "RAW", "WAR", "WAW"
  uint32_t earlier = 0, later = 0;
  Access range;  // the overlap
  Window earlier_window, later_window;
  std::string message;  // everything above, for a person
};

// The first hazard of `program` run with these windows (one per instruction), if any.
std::optional<Hazard> find_hazard(const Program& program, const std::vector<Window>& windows);

}  // namespace npusim
