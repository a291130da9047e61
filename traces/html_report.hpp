// The self-contained HTML report of a run: one page, plain JS and SVG (traces/html/report.html,
// compiled into the binary), the run's data inlined as JSON; it opens from a file:// URL with no
// network. Sections: a summary, the timeline of every unit (instructions merged per layer where
// they are closer than a pixel at full width) with the bandwidth and buffer counters below it,
// cycles per layer, each unit's utilization, when stats.json has them the energy, power and area
// as stacked bars by component (energy, average power with its idle part and the peak, die area,
// and each layer's energy), and a roofline of the layers against the chip's peak compute and
// off-chip bandwidth. Every figure comes from stats.json or the timeline: the page computes none.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "arch/program.hpp"
#include "support/timeline.hpp"
#include "traces/chrome_trace.hpp"

namespace npusim::traces {

// `stats`: the run's stats.json.
std::string html_report(const timeline::Timeline& timeline, const Program& program,
                        const RunInfo& run, const nlohmann::json& stats);

}  // namespace npusim::traces
