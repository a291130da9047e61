// The energy, power, area and efficiency figures of a run (sim/power_model.hpp) and the per-layer
// roofline and stall columns, registered in the stats registry (docs/stats.md), and their text
// and CSV forms.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "arch/hw_config.hpp"
#include "arch/program.hpp"
#include "models/soc.hpp"
#include "support/stats.hpp"
#include "support/timeline.hpp"

namespace npusim {

// Peak power is the highest mean over this many microseconds of core clock (power.window_cycles).
constexpr double kPowerWindowUs = 1.0;

// After the run and Soc::register_stats (the DRAM model has reached `total_cycles`). Registers
// "events", "energy", "power", "area", "efficiency", "roofline" and the layers' energy_j,
// arithmetic_intensity, roofline_bound and stall columns, and the per-core figures
// (sim/multicore_stats.hpp).
// With a `timeline`, gives it each instruction's energy for the traces' power counter.
void register_power_stats(stats::Registry& reg, const HwConfig& hw, const Program& program,
                          const Soc& soc, uint64_t total_cycles,
                          timeline::Timeline* timeline = nullptr);

// The die area of a hardware description (one DMA queue of each kind per core), mm2.
double die_area_mm2(const HwConfig& hw);

// The report.txt section: summary lines and the component table; with `per_layer`, the layers'
// energy, roofline and stall table.
std::string power_report(const nlohmann::json& stats, bool per_layer);

// Every scalar column of stats.json's "layers", one row per layer, RFC 4180 quoting.
std::string layers_csv(const nlohmann::json& stats);

}  // namespace npusim
