// The trace of `npusim generate` (docs/llm.md, "Traces and the HTML report"): the programs it
// runs (the prefill, then each decode step) in one Chrome / Perfetto trace, one after the other
// on the time axis as they run, each program's chip, cores and host as processes of their own
// named "prefill · ...", "decode 1 · ..." (program k's process ids are 10000 k + those of a
// one-run trace). `--trace-steps` chooses the programs recorded; the
// filters of `npusim run` (--trace-layers, --trace-window, --trace-detail) apply to each.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "arch/hw_config.hpp"
#include "arch/program.hpp"
#include "npusim/npusim.hpp"
#include "support/timeline.hpp"

namespace npusim {

// Which programs a generation traces: "all" (the default), or a comma-separated list of
// "prefill", "decode" (every decode step), "last" (the last decode step) and decode step numbers
// (1 is the first decode step). Parsed against the run's number of decode steps; a malformed or
// out-of-range item is a UserError naming --trace-steps.
std::vector<bool> parse_trace_steps(const std::string& spec, int decode_steps);

class GenerationTrace {
 public:
  // `steps`: per program (0 the prefill, k decode step k), whether it is recorded.
  GenerationTrace(TraceFilter filter, std::vector<bool> steps)
      : filter_(std::move(filter)), steps_(std::move(steps)) {}

  bool records(int step) const { return step < int(steps_.size()) && steps_[size_t(step)]; }
  // A timeline for the program of `step` (the run's filter applied).
  std::unique_ptr<timeline::Timeline> timeline_for(const HwConfig& hw,
                                                   const Program& program) const;
  // Adds a recorded program: its label ("prefill", "decode 3"), its run's stats.json, and the
  // cycle it starts at (the cycles of every program before it).
  void add(int step, const std::string& label, const HwConfig& hw, const Program& program,
           const timeline::Timeline& timeline, const nlohmann::json& stats, uint64_t start_cycle);
  // The whole trace JSON.
  std::string json(const std::string& hardware, const std::string& workload,
                   double clock_mhz) const;

 private:
  TraceFilter filter_;
  std::vector<bool> steps_;
  std::string events_;
  uint64_t flow_id_ = 0;
  nlohmann::json programs_ = nlohmann::json::array();
};

}  // namespace npusim
