// A run's energy, power and area figures: the event counts and spans read off the simulated SoC,
// handed to the power model (power/: it prices them and registers the figures, power/energy_stats
// .hpp), and the per-layer roofline and stall columns, registered in the stats registry
// (docs/stats.md), and their text and CSV forms.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "arch/hw_config.hpp"
#include "arch/program.hpp"
#include "models/soc.hpp"
#include "power/energy_stats.hpp"
#include "support/stats.hpp"
#include "support/timeline.hpp"

namespace npusim {

// After the run and Soc::register_stats (the DRAM model has reached `total_cycles`). Registers
// "events", "energy", "power", "area", "efficiency", "roofline" and the layers' energy_j,
// arithmetic_intensity, roofline_bound and stall columns, and the per-core figures
// (npusim/multicore_stats.hpp).
// With a `timeline`, gives it each instruction's energy for the traces' power counter.
void register_power_stats(stats::Registry& reg, const HwConfig& hw, const Program& program,
                          const Soc& soc, uint64_t total_cycles,
                          timeline::Timeline* timeline = nullptr);

// The report.txt section: summary lines and the component table; with `per_layer`, the layers'
// energy, roofline and stall table.
std::string power_report(const nlohmann::json& stats, bool per_layer);

// Every scalar column of stats.json's "layers", one row per layer, RFC 4180 quoting.
std::string layers_csv(const nlohmann::json& stats);

}  // namespace npusim
