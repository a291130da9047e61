// The self-contained HTML report of a training run (`npusim train --html`, docs/training.md): one
// page of plain JS and SVG (traces/html/training.html, compiled into the binary) with the data
// inlined as JSON, no network. Sections: the summary, the loss per step with the held-out
// accuracy, a step's cycles by phase, the first step's energy by component, the off-chip memory
// at the peak, and the steps as a table.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace npusim {

// `stats`: the run's stats.json (its "training", "steps" and "first_step" sections).
std::string training_html_report(const nlohmann::json& stats);

}  // namespace npusim
