// The on-chip interconnect's timing core, plain C++ (models/interconnect.hpp adapts it to TLM):
// which links a core-to-core copy crosses and when it completes (docs/multicore.md).
//
// Topology: a `ring` of the cores has two directed links between neighbours (clockwise c -> c + 1,
// counter-clockwise c -> c - 1, mod cores); a copy takes the shorter direction (clockwise on a tie)
// and crosses hops(a, b) = min(|a - b|, cores - |a - b|) links. A `crossbar` connects every core to
// every other in one hop; its links are its output ports, one per destination core, so copies to
// the same core share a link and copies to different cores do not.
//
// Timing rule (cut-through, the whole path reserved at once): a copy of `bytes` asked at cycle
// `now` starts when every link on its path is free, start = max(now, free cycle of each link);
// its bytes occupy each link of the path for ceil(bytes / link_bytes_per_cycle) cycles from start,
// and the last byte arrives hops x hop_latency_cycles after it left:
//   end = start + hops x hop_latency_cycles + ceil(bytes / link_bytes_per_cycle).
// Copies are served in the order they are asked (a later copy never overtakes an earlier one on a
// link it needs).
#pragma once

#include <cstdint>
#include <vector>

#include "arch/hw_config.hpp"

namespace npusim {

struct CopyWindow {
  uint64_t start = 0, end = 0;  // cycles: links granted, last byte arrived
};

class InterconnectTiming {
 public:
  InterconnectTiming(const InterconnectConfig& config, int cores);

  int hops(int from, int to) const;
  // The links (indices < links()) a copy from `from` to `to` crosses, in order.
  std::vector<int> path(int from, int to) const;
  // A copy of `bytes` from core `from` to core `to` asked at cycle `now`: reserves its path.
  CopyWindow transfer(uint64_t now, int from, int to, uint64_t bytes);

  int links() const { return int(free_.size()); }
  // Cycles link l carried bytes, and the sum over every link.
  uint64_t link_busy_cycles(int link) const { return busy_.at(size_t(link)); }
  uint64_t busy_cycles() const;
  uint64_t bytes() const { return bytes_; }
  uint64_t copies() const { return copies_; }
  // Cycles copies waited for a link another copy held.
  uint64_t wait_cycles() const { return wait_; }

 private:
  InterconnectConfig config_;
  int cores_;
  std::vector<uint64_t> free_;  // per link: the first cycle it is free
  std::vector<uint64_t> busy_;
  uint64_t bytes_ = 0, copies_ = 0, wait_ = 0;
};

}  // namespace npusim
