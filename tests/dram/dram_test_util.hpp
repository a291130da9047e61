// Helpers shared by the DRAM tests: presets, addresses and a small driver that records
// completions.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "arch/dram/dram_config.hpp"
#include "models/dram/memory_system.hpp"

namespace npusim::dram::testing {

inline MemoryConfig preset(const char* name, int channels = 1) {
  MemoryConfig cfg = resolve_memory_config(name);
  cfg.org.channels = channels;
  return cfg;
}

struct Completion {
  uint64_t id;
  uint64_t cycle;
  bool operator==(const Completion& o) const { return id == o.id && cycle == o.cycle; }
};

// Records every completion of a MemorySystem.
class Recorder {
 public:
  explicit Recorder(MemoryConfig cfg)
      : mem_(std::move(cfg), [this](uint64_t id, uint64_t cycle) {
          done_.push_back({id, cycle});
        }) {}
  MemorySystem& mem() { return mem_; }
  const std::vector<Completion>& done() const { return done_; }
  // Runs until `n` completions were seen (bounded by `limit` cycles).
  void run_until_done(size_t n, uint64_t limit = 100000000) {
    while (done_.size() < n) {
      const uint64_t next = mem_.next_event_cycle();
      ASSERT_NE(next, kNever);
      ASSERT_LT(next, limit);
      mem_.advance_to(next + 1);
    }
  }
  uint64_t cycle_of(uint64_t id) const {
    for (const auto& c : done_) {
      if (c.id == id) return c.cycle;
    }
    return kNever;
  }

 private:
  MemorySystem mem_;
  std::vector<Completion> done_;
};

inline uint64_t address(const MemorySystem& mem, uint32_t bank_group, uint32_t bank, uint32_t row,
                        uint32_t column = 0, uint32_t pseudo_channel = 0) {
  DramAddress a;
  a.bank_group = bank_group;
  a.bank = bank;
  a.row = row;
  a.column = column;
  a.pseudo_channel = pseudo_channel;
  return mem.mapper().unmap(a);
}

}  // namespace npusim::dram::testing
