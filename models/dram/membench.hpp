// membench: drives a MemorySystem alone with a synthetic pattern or a trace file and reports
// bandwidth, latency, row-buffer, command and energy figures.
//
// Injection: closed loop, as fast as the controller queues accept, in stream order per channel;
// a request for a channel whose controller queue is full waits in that channel's FIFO (like a
// DMA engine with a queue per channel) while later requests go on to other channels, and the
// stream stops while the FIFO of the channel it needs is full. With one channel this is plain
// in-order injection. The idle patterns and timestamped traces inject request i no earlier than
// its cycle (200 * i for the idle patterns).
//
// Contract: run_membench() is deterministic for a given config, options and seed (wall time
// aside); a trace file with a bad line is a UserError naming the file and line.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "arch/dram/dram_config.hpp"
#include "models/dram/memory_system.hpp"

namespace npusim::dram {

enum class Pattern {
  kSeqRead,
  kSeqWrite,
  kRandomRead,
  kMix2r1w,
  kSeqMix2r1w,
  kStrideRow,
  kIdleSeqRead,
  kIdleRandomRead,
  kTrace,
};

// "seq-read" ... "idle-random-read"; false when unknown.
bool parse_pattern(const std::string& name, Pattern* out);
const char* pattern_name(Pattern p);
bool is_idle_pattern(Pattern p);

struct MembenchRequest {
  uint64_t addr = 0;
  bool is_write = false;
  uint64_t not_before = 0;  // earliest injection cycle
};

// Reads a trace in either of gen_trace.py's formats: DRAMsim3 "0x<addr> READ|WRITE <cycle>" or
// Ramulator "LD|ST 0x<addr>". Addresses are wrapped into `capacity_bytes` and aligned down to
// `access_bytes`.
std::vector<MembenchRequest> read_trace_file(const std::string& path, uint64_t capacity_bytes,
                                             uint64_t access_bytes);

// The i-th request of a synthetic pattern (a pure function of i and the seed's generator state,
// which must be advanced in order for the random patterns).
class PatternGenerator {
 public:
  PatternGenerator(Pattern pattern, const MemoryConfig& config, uint64_t seed,
                   uint64_t idle_gap_cycles);
  MembenchRequest next();

 private:
  uint64_t random_line();
  Pattern pattern_;
  uint64_t access_, lines_, row_bytes_, capacity_, gap_;
  uint64_t index_ = 0;
  uint64_t state_;  // splitmix64
};

struct MembenchOptions {
  Pattern pattern = Pattern::kSeqRead;
  uint64_t requests = 0;  // 0: the pattern's default (1 M loaded, 20 k idle, the whole trace)
  uint64_t seed = 1;
  std::string trace_file;
  uint64_t idle_gap_cycles = 200;
  int channel_fifo_depth = 128;  // requests waiting per channel in front of the controller
};

struct MembenchResult {
  MemoryStats stats;
  std::vector<uint64_t> channel_bursts;  // reads + writes per channel
  uint64_t requests = 0;
  double wall_seconds = 0;
  double cpu_seconds = 0;  // of this process, as the reference simulators' speeds are measured
};

MembenchResult run_membench(const MemoryConfig& config, const MembenchOptions& options);

// The report `npusim membench` prints: what it drove (`pattern`, `memory_file`, `requests`, ...),
// the run's figures under `memory` with the keys of stats.json's `memory` section (one
// registration, memory_stats.hpp) and the host's speed under `host`. `preset` is the memory as
// the user named it.
nlohmann::ordered_json membench_report(const std::string& preset, const MemoryConfig& config,
                                       const std::string& pattern, const MembenchResult& result);

}  // namespace npusim::dram
