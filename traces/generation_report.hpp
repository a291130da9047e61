// The self-contained HTML report of a generation (`npusim generate --html`, docs/llm.md): one
// page of plain JS and SVG (traces/html/generation.html, compiled into the binary) with the data
// inlined as JSON, no network. Sections: the summary (time to first token, time per output token,
// tokens/s, energy per token), each program (the prefill, then every decode step) as a bar of its
// time, energy and off-chip bytes, the energy of the prefill and of the last decode step by
// component, the last decode step's slowest layers, and the steps as a table.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace npusim {

// `stats`: the generation's stats.json (its "generation", "steps", "prefill" and "decode"
// sections).
std::string generation_html_report(const nlohmann::json& stats);

}  // namespace npusim
