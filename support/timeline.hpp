// The timeline: what the units did over time, recorded during a simulation for the trace writers
// (traces/: Chrome/Perfetto JSON, the HTML report). It is the time-stamped sibling of the stats
// registry (support/stats.hpp): the registry holds end-of-run figures, the timeline holds when
// things happened. Plain C++, times in core-clock cycles.
//
// Contract:
//   - A unit that records holds a Timeline* that is null when nothing is recorded, so recording
//     costs one branch when off.
//   - Tracks are registered before the simulation: one per unit (each DMA queue, each matrix unit,
//     the vector unit), one per off-chip memory channel, and, for `Detail::kBursts`, one per DMA
//     queue for its bursts.
//   - Every instruction's [start, end) is recorded (16 bytes each, whatever the filter): the
//     writers need all of them for counters (utilization, buffer occupancy) and apply the filter
//     when they write. Bursts and DRAM commands, which are many, are recorded only with
//     `Detail::kBursts` and only inside the filter (layer and window), so they stay bounded.
//   - Off-chip bytes per channel are summed in buckets of `kBucketCycles` (bandwidth counters).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace npusim::timeline {

enum class Detail { kInstructions, kBursts };

struct Filter {
  std::vector<uint8_t> layers;  // per layer index: 1 to record; empty: every layer
  uint64_t window_start = 0;    // cycles, [start, end)
  uint64_t window_end = std::numeric_limits<uint64_t>::max();
  Detail detail = Detail::kInstructions;

  bool layer(uint32_t l) const { return layers.empty() || (l < layers.size() && layers[l]); }
  // [start, end) touches the window; an empty interval counts if it lies inside it.
  bool window(uint64_t start, uint64_t end) const {
    return start < window_end && (end > window_start || (end == start && start >= window_start));
  }
};

enum class TrackKind : uint8_t {
  kDmaLoad,
  kDmaStore,
  kMatrix,
  kVector,
  kMemoryChannel,
  kBursts,
  kHost,      // the host CPU of a heterogeneous system
  kHostLink,  // its link to the accelerator, one track per direction
  kLink       // a core's queue onto the interconnect
};
const char* to_string(TrackKind kind);

struct Track {
  std::string name;  // "dma_load", "matrix_unit0", "dram ch1", "dma_load bursts"
  TrackKind kind;
  int index = 0;  // queue, matrix unit or channel number
  // 0: the chip (off-chip memory, every unit of a one-core chip); c + 1: core c; kHostProcess:
  // the host CPU and its link.
  int process = 0;
};
constexpr int kHostProcess = 1000;

struct InstructionRecord {
  uint32_t track = kNone;
  uint64_t start = 0, end = 0;
  static constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
};

struct BurstRecord {
  uint32_t track;        // a kBursts track
  uint32_t instruction;  // the DMA instruction it belongs to
  uint64_t start, end;   // issue and completion cycles
  uint64_t address;
  uint32_t bytes;
  bool write;
};

struct CommandRecord {
  uint32_t track;   // a kMemoryChannel track
  uint64_t cycle;   // core cycle in which the command issued
  uint8_t command;  // index into command_names
  uint32_t bank, row;
};

class Timeline {
 public:
  static constexpr uint64_t kBucketCycles = 64;

  // `instructions`: the program's instruction count; `layers`: its layer count (for the filter).
  Timeline(Filter filter, size_t instructions, double clock_mhz);

  uint32_t add_track(std::string name, TrackKind kind, int index, int process = 0);
  // Names of the memory's commands ("ACT", "RD", ...), in the order of CommandRecord::command.
  void set_command_names(std::vector<std::string> names) { command_names_ = std::move(names); }

  // Instruction `id` ran on `track` over [start, end).
  void instruction(uint32_t track, uint32_t id, uint64_t start, uint64_t end) {
    instructions_[id] = {track, start, end};
  }
  bool bursts_wanted(uint32_t layer, uint64_t start, uint64_t end) const {
    return filter_.detail == Detail::kBursts && filter_.layer(layer) && filter_.window(start, end);
  }
  void burst(const BurstRecord& b) { bursts_.push_back(b); }
  bool commands_wanted(uint64_t cycle) const {
    return filter_.detail == Detail::kBursts && filter_.window(cycle, cycle + 1);
  }
  void command(const CommandRecord& c) { commands_.push_back(c); }
  // `bytes` of off-chip traffic completed on the channel's track at `cycle`.
  void memory_bytes(uint32_t track, uint64_t cycle, uint64_t bytes);
  // After the run: each instruction's dynamic energy in pJ (spread over its [start, end)) and the
  // power the chip draws besides, in W (docs/power.md): the traces' "power" counter.
  void set_energy(std::vector<double> instruction_pj, double constant_w) {
    energy_pj_ = std::move(instruction_pj);
    constant_w_ = constant_w;
  }

  const Filter& filter() const { return filter_; }
  double clock_mhz() const { return clock_mhz_; }
  const std::vector<Track>& tracks() const { return tracks_; }
  const std::vector<InstructionRecord>& instructions() const { return instructions_; }
  const std::vector<BurstRecord>& bursts() const { return bursts_; }
  const std::vector<CommandRecord>& commands() const { return commands_; }
  const std::vector<std::string>& command_names() const { return command_names_; }
  // Bytes per bucket of a memory track (bucket i covers cycles [i, i + 1) * kBucketCycles).
  const std::vector<uint64_t>& memory_buckets(uint32_t track) const { return buckets_[track]; }
  const std::vector<double>& instruction_energy_pj() const { return energy_pj_; }  // empty: none
  double constant_power_w() const { return constant_w_; }

 private:
  Filter filter_;
  double clock_mhz_;
  std::vector<Track> tracks_;
  std::vector<InstructionRecord> instructions_;
  std::vector<BurstRecord> bursts_;
  std::vector<CommandRecord> commands_;
  std::vector<std::string> command_names_;
  std::vector<std::vector<uint64_t>> buckets_;  // per track (empty except memory channels)
  std::vector<double> energy_pj_;
  double constant_w_ = 0;
};

}  // namespace npusim::timeline
