#include "models/interconnect_timing.hpp"

#include <algorithm>

#include "support/error.hpp"

namespace npusim {

InterconnectTiming::InterconnectTiming(const InterconnectConfig& config, int cores)
    : config_(config), cores_(cores) {
  NPUSIM_CHECK(cores >= 1 && config.link_bytes_per_cycle >= 1 && config.hop_latency_cycles >= 0,
               "interconnect: {} cores, {} B/cycle, {} cycles per hop", cores,
               config.link_bytes_per_cycle, config.hop_latency_cycles);
  const size_t links = config.topology == Topology::kRing ? size_t(2 * cores) : size_t(cores);
  free_.assign(links, 0);
  busy_.assign(links, 0);
}

int InterconnectTiming::hops(int from, int to) const {
  if (config_.topology == Topology::kCrossbar) return from == to ? 0 : 1;
  const int forward = ((to - from) % cores_ + cores_) % cores_;
  return std::min(forward, cores_ - forward);
}

std::vector<int> InterconnectTiming::path(int from, int to) const {
  NPUSIM_CHECK(from >= 0 && from < cores_ && to >= 0 && to < cores_ && from != to,
               "interconnect: a copy from core {} to core {} on a chip of {} cores", from, to,
               cores_);
  if (config_.topology == Topology::kCrossbar) return {to};
  const int forward = ((to - from) % cores_ + cores_) % cores_;
  std::vector<int> links;
  if (forward <= cores_ - forward) {  // clockwise: link c is c -> c + 1
    for (int c = from; c != to; c = (c + 1) % cores_) links.push_back(c);
  } else {  // counter-clockwise: link cores + c is c -> c - 1
    for (int c = from; c != to; c = (c + cores_ - 1) % cores_) links.push_back(cores_ + c);
  }
  return links;
}

CopyWindow InterconnectTiming::transfer(uint64_t now, int from, int to, uint64_t bytes) {
  const std::vector<int> links = path(from, to);
  const uint64_t width = uint64_t(config_.link_bytes_per_cycle);
  const uint64_t occupancy = (bytes + width - 1) / width;
  uint64_t start = now;
  for (int l : links) start = std::max(start, free_[size_t(l)]);
  for (int l : links) {
    free_[size_t(l)] = start + occupancy;
    busy_[size_t(l)] += occupancy;
  }
  wait_ += start - now;
  bytes_ += bytes;
  ++copies_;
  return {start,
          start + uint64_t(hops(from, to)) * uint64_t(config_.hop_latency_cycles) + occupancy};
}

uint64_t InterconnectTiming::busy_cycles() const {
  uint64_t n = 0;
  for (uint64_t b : busy_) n += b;
  return n;
}

}  // namespace npusim
