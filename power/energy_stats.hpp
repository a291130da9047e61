// The power model's figures in the stats registry (docs/stats.md): the event counts, the run's
// energy by component, average, peak and idle power, the die area by component and the efficiency
// figures, from the run's counts priced by power/power_model.hpp. Also the two inputs the price
// list takes from the hardware description alone: the off-chip interface and the die area.
#pragma once

#include <cstdint>

#include "arch/dram/dram_config.hpp"
#include "arch/energy_events.hpp"
#include "arch/hw_config.hpp"
#include "power/energy_table.hpp"
#include "power/power_model.hpp"
#include "support/stats.hpp"

namespace npusim {

// Peak power is the highest mean over this many microseconds of core clock (power.window_cycles).
constexpr double kPowerWindowUs = 1.0;

// The off-chip interface of `hw` for the PHY's area: the command-level model's pins (`dram`, its
// resolved preset) or, for the simple model (null), DDR pins enough for its bandwidth.
MemoryInterface memory_interface(const HwConfig& hw, const dram::MemoryConfig* dram);

// The die area of a hardware description (one DMA queue of each kind per core), mm2.
double die_area_mm2(const HwConfig& hw);

// Registers "events.*" (`counted`), "energy.*", "power.*", "area.*" and "efficiency.*" of a run of
// `total_cycles` and `batch` inferences: `e` is run_energy(model, ...) and `table` the node's table
// `model` was priced with.
void register_energy_stats(stats::Registry& reg, const HwConfig& hw, const EnergyTable& table,
                           const PowerModel& model, const EventCounts& counted, const RunEnergy& e,
                           int batch, uint64_t total_cycles);

}  // namespace npusim
