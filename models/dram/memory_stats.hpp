// The DRAM model's figures as registered statistics: the `memory` section of stats.json (npusim
// run, memory.model "dram") and of membench's report, with the same keys in both.
#pragma once

#include <vector>

#include "arch/dram/dram_config.hpp"
#include "models/dram/memory_system.hpp"
#include "support/stats.hpp"

namespace npusim::dram {

// Bursts (reads + writes) each channel served.
std::vector<uint64_t> channel_bursts(const MemorySystem& memory);

// Registers the figures of a memory at the end of a run (`s`, from MemorySystem::stats() or its
// end-of-run equivalent; `per_channel` from channel_bursts()), captured by value. `preset` is the
// preset as the user named it (the resolved configuration is registered as `config`).
void register_memory_stats(stats::Registry& reg, const std::string& preset,
                           const MemoryConfig& config, const MemoryStats& s,
                           const std::vector<uint64_t>& per_channel);

}  // namespace npusim::dram
