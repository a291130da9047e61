// The trace outputs of `npusim run` (docs/traces.md): --trace DIR / --trace-json FILE (Chrome and
// Perfetto trace JSON), --html FILE (the self-contained report), --vcd FILE (SystemC waveforms),
// and the filters --trace-layers, --trace-window, --trace-detail. Bad flags and paths that cannot
// be written are UserErrors found before the simulation; every file is written to a temporary name
// and renamed, and an old file of the same name is removed first, so nothing left behind looks like
// this run's output.
#pragma once

#include <boost/program_options.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "arch/hw_config.hpp"
#include "arch/program.hpp"
#include "sim/output_attempts.hpp"
#include "support/timeline.hpp"

namespace npusim {

class TraceOutputs {
 public:
  static void add_options(boost::program_options::options_description& o);
  // Checks the flags and prepares the paths (UserError on bad input).
  explicit TraceOutputs(const boost::program_options::variables_map& vm);

  bool records() const { return !json_path_.empty() || !html_path_.empty(); }
  const std::string& vcd_path() const { return vcd_path_; }
  // A timeline for `program` with the filter applied (layer names checked against the program),
  // or null when no trace output was asked for.
  std::unique_ptr<timeline::Timeline> make_timeline(const HwConfig& hw,
                                                    const Program& program) const;
  // Writes the trace JSON and the HTML report from the recorded timeline and the run's stats.json,
  // each as its own attempt (one that fails does not keep the other from being written).
  void write(const timeline::Timeline& timeline, const HwConfig& hw, const Program& program,
             const nlohmann::json& stats, OutputAttempts& attempts) const;

 private:
  std::string json_path_, html_path_, vcd_path_;
  std::vector<std::string> layers_;
  uint64_t window_start_ = 0, window_end_ = UINT64_MAX;
  timeline::Detail detail_ = timeline::Detail::kInstructions;
};

}  // namespace npusim
