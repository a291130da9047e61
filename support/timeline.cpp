#include "support/timeline.hpp"

#include "support/error.hpp"

namespace npusim::timeline {

const char* to_string(TrackKind kind) {
  switch (kind) {
    case TrackKind::kDmaLoad:
      return "dma_load";
    case TrackKind::kDmaStore:
      return "dma_store";
    case TrackKind::kMatrix:
      return "matrix";
    case TrackKind::kVector:
      return "vector";
    case TrackKind::kMemoryChannel:
      return "memory_channel";
    case TrackKind::kBursts:
      return "bursts";
    case TrackKind::kHost:
      return "host";
    case TrackKind::kHostLink:
      return "host_link";
    case TrackKind::kLink:
      return "link";
  }
  return "?";
}

Timeline::Timeline(Filter filter, size_t instructions, double clock_mhz)
    : filter_(std::move(filter)), clock_mhz_(clock_mhz), instructions_(instructions) {
  NPUSIM_CHECK(clock_mhz > 0, "timeline: clock {} MHz", clock_mhz);
}

uint32_t Timeline::add_track(std::string name, TrackKind kind, int index, int process) {
  tracks_.push_back({std::move(name), kind, index, process});
  buckets_.emplace_back();
  return static_cast<uint32_t>(tracks_.size() - 1);
}

void Timeline::memory_bytes(uint32_t track, uint64_t cycle, uint64_t bytes) {
  NPUSIM_CHECK(track < tracks_.size() && tracks_[track].kind == TrackKind::kMemoryChannel,
               "timeline: memory bytes on track {}", track);
  auto& b = buckets_[track];
  const size_t i = size_t(cycle / kBucketCycles);
  if (b.size() <= i) b.resize(i + 1, 0);
  b[i] += bytes;
}

}  // namespace npusim::timeline
