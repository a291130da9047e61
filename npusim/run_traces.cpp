#include "npusim/run_traces.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "support/error.hpp"
#include "traces/chrome_trace.hpp"
#include "traces/html_report.hpp"

namespace fs = std::filesystem;

namespace npusim {

traces::RunInfo trace_run_info(const HwConfig& hw, const Program& program,
                               const nlohmann::json& stats) {
  traces::RunInfo run;
  run.hardware = stats.value("hardware", hw.name);
  run.workload = stats.value("workload", program.network);
  run.total_cycles = stats.value("total_cycles", uint64_t{0});
  run.peak_macs_per_cycle = hw.chip_peak_macs_per_cycle();
  // The DRAM model states its peak in stats.json (memory.bandwidth_gbps may be 0 there).
  double gbps = hw.memory.bandwidth_gbps;
  if (stats.contains("memory")) gbps = stats["memory"].value("peak_bandwidth_gbps", gbps);
  run.memory_bytes_per_cycle = gbps / (hw.clock_mhz * 1e-3);
  return run;
}

namespace {

traces::RunInfo run_info(const RunRecording& r, const nlohmann::json& stats) {
  return trace_run_info(r.hw, r.program, stats);
}

}  // namespace

std::unique_ptr<timeline::Timeline> make_timeline(const TraceFilter& f, const HwConfig& hw,
                                                  const Program& program) {
  timeline::Filter filter;
  filter.window_start = f.window_start;
  filter.window_end = f.window_end;
  filter.detail = f.bursts ? timeline::Detail::kBursts : timeline::Detail::kInstructions;
  if (!f.layers.empty()) {
    filter.layers.assign(program.layers.size(), 0);
    for (const std::string& name : f.layers) {
      bool found = false;
      for (size_t l = 0; l < program.layers.size(); ++l) {
        // A pipeline's records are "<layer>@mb<k>": the layer's name selects every micro-batch.
        const std::string& rec = program.layers[l].name;
        if (rec == name || rec.rfind(name + "@mb", 0) == 0) filter.layers[l] = 1, found = true;
      }
      if (!found) {
        std::string known;
        for (const auto& l : program.layers) {
          if (!known.empty()) known += ", ";
          known += l.name;
        }
        throw UserError(
            fmt::format("--trace-layers: unknown layer '{}' (layers of {} after fusion: {})", name,
                        program.network, known));
      }
    }
  }
  return std::make_unique<timeline::Timeline>(std::move(filter), program.instructions.size(),
                                              hw.clock_mhz);
}

std::string trace_json_text(const RunRecording& r, const nlohmann::json& stats) {
  return traces::chrome_trace_json(*r.timeline, r.program, run_info(r, stats));
}

std::string html_report_text(const RunRecording& r, const nlohmann::json& stats) {
  return traces::html_report(*r.timeline, r.program, run_info(r, stats), stats);
}

void write_atomically(const std::string& flag, const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    out << text;
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw UserError(fmt::format("{} '{}': cannot write", flag, path));
    }
  }
  fs::rename(tmp, path);
}

}  // namespace npusim
