#include "npusim/generation_trace.hpp"

#include <fmt/format.h>

#include "npusim/run_traces.hpp"
#include "support/error.hpp"
#include "traces/chrome_trace.hpp"

namespace npusim {

namespace {
constexpr int kPidsPerProgram = 10000;
}  // namespace

std::vector<bool> parse_trace_steps(const std::string& spec, int decode_steps) {
  std::vector<bool> steps(size_t(decode_steps) + 1, false);
  auto fail = [&](const std::string& why) {
    throw UserError(fmt::format(
        "--trace-steps '{}': {} (expected all, or a comma-separated list of prefill, decode, last "
        "and decode step numbers 1 to {})",
        spec, why, decode_steps));
  };
  if (spec == "all") return std::vector<bool>(steps.size(), true);
  for (size_t p = 0; p <= spec.size();) {
    const size_t comma = std::min(spec.find(',', p), spec.size());
    const std::string item = spec.substr(p, comma - p);
    p = comma + 1;
    if (item == "prefill") {
      steps[0] = true;
    } else if (item == "decode") {
      if (decode_steps == 0) fail("the run has no decode step (--new-tokens 1)");
      for (size_t k = 1; k < steps.size(); ++k) steps[k] = true;
    } else if (item == "last") {
      if (decode_steps == 0) fail("the run has no decode step (--new-tokens 1)");
      steps.back() = true;
    } else {
      if (item.empty() || item.size() > 9 ||
          item.find_first_not_of("0123456789") != std::string::npos) {
        fail(item.empty() ? "an empty item" : fmt::format("'{}' is not a step", item));
      }
      const int k = std::stoi(item);
      if (k < 1 || k > decode_steps) {
        fail(fmt::format("decode step {} is not in the run", k));
      }
      steps[size_t(k)] = true;
    }
  }
  return steps;
}

std::unique_ptr<timeline::Timeline> GenerationTrace::timeline_for(const HwConfig& hw,
                                                                  const Program& program) const {
  return make_timeline(filter_, hw, program);
}

void GenerationTrace::add(int step, const std::string& label, const HwConfig& hw,
                          const Program& program, const timeline::Timeline& timeline,
                          const nlohmann::json& stats, uint64_t start_cycle) {
  NPUSIM_CHECK(records(step), "generation trace: step {} was not to be recorded", step);
  traces::RunInfo run = trace_run_info(hw, program, stats);
  run.offset_cycles = start_cycle;
  // Program k's processes are 10000 k + the one-run ids (those go up to the host's).
  NPUSIM_CHECK(traces::chrome_trace_max_pid() < kPidsPerProgram,
               "generation trace: one run's process ids reach {}", traces::chrome_trace_max_pid());
  run.pid_base = step * kPidsPerProgram;
  run.process_prefix = label + " · ";
  const std::string events = traces::chrome_trace_events(timeline, program, run, &flow_id_);
  if (!events.empty()) {
    if (!events_.empty()) events_ += ",\n";
    events_ += events;
  }
  programs_.push_back(
      {{"program", label}, {"start_cycle", start_cycle}, {"cycles", run.total_cycles}});
}

std::string GenerationTrace::json(const std::string& hardware, const std::string& workload,
                                  double clock_mhz) const {
  nlohmann::json other;
  other["generator"] = "npusim generate";
  other["hardware"] = hardware;
  other["workload"] = workload;
  other["clock_mhz"] = clock_mhz;
  other["time_unit"] = "us of simulated time";
  other["programs"] = programs_;
  other["trace_window_cycles_per_program"] = {
      filter_.window_start, filter_.window_end == UINT64_MAX ? nlohmann::json("end")
                                                             : nlohmann::json(filter_.window_end)};
  other["trace_detail"] = filter_.bursts ? "bursts" : "instructions";
  other["trace_layers"] = filter_.layers;
  return "{\"otherData\":" + other.dump() + ",\"traceEvents\":[\n" + events_ + "\n]}\n";
}

}  // namespace npusim
