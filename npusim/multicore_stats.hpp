// The per-core and chip-wide figures of a run (docs/multicore.md): the `cores` table (one row per
// core of the chip) and `chip.*` in stats.json, and their report.txt lines.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "arch/hw_config.hpp"
#include "arch/program.hpp"
#include "models/soc.hpp"
#include "power/power_model.hpp"
#include "support/stats.hpp"

namespace npusim {

// After the run; `model` prices each core's energy events.
void register_core_stats(stats::Registry& reg, const HwConfig& hw, const Program& program,
                         const Soc& soc, uint64_t total_cycles, const PowerModel& model);

// The report.txt lines of a chip of several cores (nothing for one core).
std::string multicore_report(const nlohmann::json& stats);

}  // namespace npusim
