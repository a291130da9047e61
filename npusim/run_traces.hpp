// The traces a run records (docs/traces.md): a timeline filtered by layer, cycle window and
// detail, and the Chrome/Perfetto trace JSON and the HTML report written from it afterwards.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "arch/hw_config.hpp"
#include "arch/program.hpp"
#include "npusim/npusim.hpp"
#include "support/timeline.hpp"
#include "traces/chrome_trace.hpp"

namespace npusim {

// What RunResult keeps to write its traces after the run.
struct RunRecording {
  HwConfig hw;
  Program program;
  std::unique_ptr<timeline::Timeline> timeline;
};

// A timeline for `program` with `filter` applied; a layer name that is not the program's is a
// UserError naming --trace-layers.
std::unique_ptr<timeline::Timeline> make_timeline(const TraceFilter& filter, const HwConfig& hw,
                                                  const Program& program);

// The figures of a run that its trace and HTML report show (stats: its stats.json).
traces::RunInfo trace_run_info(const HwConfig& hw, const Program& program,
                               const nlohmann::json& stats);

// The trace JSON and the HTML report of a recorded timeline and its run's stats.json.
std::string trace_json_text(const RunRecording& r, const nlohmann::json& stats);
std::string html_report_text(const RunRecording& r, const nlohmann::json& stats);

// Writes `text` to `path` through a temporary name; a failure is a UserError naming `flag`.
void write_atomically(const std::string& flag, const std::string& path, const std::string& text);

}  // namespace npusim
