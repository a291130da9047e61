// Dependency tokens from buffer accesses: the compiler declares what each instruction reads and
// writes, and this tracker returns the earlier instructions it must wait for (read-after-write,
// write-after-read, write-after-write on overlapping byte ranges of the same buffer).
//
// Contract: every unit executes its own instructions in order and completes them in order, so
// waiting for a unit's latest conflicting instruction covers its earlier ones, and conflicts with
// an instruction of the same unit need no token at all. On a chip of several cores, off-chip
// memory is one space and each core's on-chip buffers are spaces of their own; a unit key names
// the core too (a core reading what another stored off chip waits for that store: the token
// crosses cores).
//
// Each space keeps its live records by length class (class k: lengths in (2^(k-1), 2^k]), each
// class ordered by start address: the records overlapping [b, e) of class k start in
// [b - 2^k + 1, e), so a query visits those ranges instead of every record of the space (a
// decoder's weights are read once each and never overwritten: their records only accumulate).
// Reads and writes are kept apart: a read conflicts only with writes and supersedes only reads, so
// a read visits one of the two (a network's weight loads, most of the off-chip records, are reads).
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <vector>

#include "arch/isa.hpp"

namespace npusim {

struct BufferAccess {
  BufferId buffer = BufferId::kUnified;
  uint64_t begin = 0;
  uint64_t end = 0;  // exclusive
  bool write = false;
  int core = -1;  // an on-chip buffer's core; -1: the instruction's (a COPY touches two cores)
};

class HazardTracker {
 public:
  // Returns the dependencies of instruction `id` on `unit_key` (unique over the chip) of core
  // `core` and records its accesses (on-chip buffers: that core's).
  std::vector<uint32_t> add(uint32_t id, int unit_key, const std::vector<BufferAccess>& accesses,
                            int core = 0);

 private:
  struct Record {
    uint64_t end;
    uint32_t id;
    int unit_key;
    bool write;
  };
  // One buffer space's live records of one kind (reads or writes): by length class, then by
  // start address.
  struct Records {
    std::array<std::multimap<uint64_t, Record>, 64> by_class;
    uint64_t used = 0;  // bit k: class k holds records
  };
  struct Space {
    Records reads, writes;
  };
  Space& space(BufferId buffer, int core);
  // Calls f(class map, iterator) for each record of `s` overlapping [begin, end); f may erase the
  // record and returns the iterator to continue from.
  template <class F>
  static void for_each_overlapping(Records& s, uint64_t begin, uint64_t end, F f);
  // Off-chip memory first, then per core its unified, weight and accumulator buffers.
  std::deque<Space> spaces_;
};

}  // namespace npusim
