// The trace flags of `npusim run` and `npusim generate` (docs/traces.md, docs/llm.md): --trace DIR
// / --trace-json FILE (Chrome and Perfetto trace JSON), --html FILE (the self-contained report),
// --vcd FILE (SystemC waveforms), and the filters --trace-layers, --trace-window, --trace-detail.
// Bad flags and paths that cannot be written are UserErrors found before the simulation; every file
// is written to a temporary name and renamed, and an old file of the same name is removed first, so
// nothing left behind looks like this run's output.
#pragma once

#include <boost/program_options.hpp>
#include <string>

#include "npusim/npusim.hpp"
#include "sim/output_attempts.hpp"

namespace npusim {

class TraceOutputs {
 public:
  static void add_options(boost::program_options::options_description& o);
  // npusim generate's: no --vcd (a generation is several simulations), --trace-steps.
  static void add_generate_options(boost::program_options::options_description& o);
  // Checks the flags and prepares the paths (UserError on bad input).
  explicit TraceOutputs(const boost::program_options::variables_map& vm);

  const std::string& vcd_path() const { return vcd_path_; }
  bool records() const { return !json_path_.empty() || !html_path_.empty(); }
  // Asks the run for what these flags need: a recorded timeline and its filter, the VCD file.
  void request(RunOptions& options) const;
  void request(GenerateOptions& options) const;
  // Writes the trace JSON and the HTML report of a run that recorded them, each its own attempt.
  void write(const RunResult& result, OutputAttempts& attempts) const;
  void write(const GenerateResult& result, OutputAttempts& attempts) const;

 private:
  std::string json_path_, html_path_, vcd_path_;
  TraceFilter filter_;
  std::string trace_steps_ = "all";
};

}  // namespace npusim
