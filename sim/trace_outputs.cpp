#include "sim/trace_outputs.hpp"

#include <fmt/format.h>

#include <charconv>
#include <filesystem>
#include <fstream>

#include "support/error.hpp"
#include "traces/chrome_trace.hpp"
#include "traces/html_report.hpp"

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace npusim {

namespace {

// The directory of `path` exists (created if needed), a file can be written next to `path`, and an
// older `path` is gone.
void prepare_file(const std::string& flag, const std::string& path) {
  if (path.empty()) throw UserError(fmt::format("{}: expected a file name", flag));
  const fs::path p(path);
  std::error_code ec;
  if (p.has_parent_path()) fs::create_directories(p.parent_path(), ec);
  if (ec || (p.has_parent_path() && !fs::is_directory(p.parent_path()))) {
    throw UserError(
        fmt::format("{} '{}': cannot create directory '{}'", flag, path, p.parent_path().string()));
  }
  if (fs::is_directory(p)) throw UserError(fmt::format("{} '{}': is a directory", flag, path));
  const std::string probe = path + ".tmp";
  {
    std::ofstream out(probe, std::ios::binary);
    if (!out) throw UserError(fmt::format("{} '{}': cannot write", flag, path));
  }
  fs::remove(probe, ec);
  fs::remove(p, ec);
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
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) throw UserError(fmt::format("{} '{}': cannot write: {}", flag, path, ec.message()));
}

uint64_t parse_cycles(const std::string& text, const std::string& whole) {
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    throw UserError(fmt::format(
        "--trace-window '{}': expected START:END, two whole numbers of cycles with START < END",
        whole));
  }
  return v;
}

}  // namespace

void TraceOutputs::add_options(po::options_description& o) {
  o.add_options()("trace", po::value<std::string>(),
                  "write DIR/trace.json: Chrome trace-event JSON for ui.perfetto.dev or "
                  "chrome://tracing (a track per unit, a slice per instruction, dependency "
                  "arrows, counters)")("trace-json", po::value<std::string>(),
                                       "write the trace JSON to FILE instead")(
      "trace-layers", po::value<std::string>(),
      "trace only these layers: NAME,NAME,... (layer names as in --layers)")(
      "trace-window", po::value<std::string>(),
      "trace only instructions overlapping cycles START:END")(
      "trace-detail", po::value<std::string>()->default_value("instructions"),
      "instructions (default) or bursts: also every DMA burst and DRAM command")(
      "html", po::value<std::string>(),
      "write a self-contained HTML report to FILE: timeline, cycles per layer, utilization, "
      "roofline")("vcd", po::value<std::string>(),
                  "write waveforms to FILE with SystemC's VCD tracing (GTKWave): each unit's "
                  "busy, waiting, instruction and queue depth, each DRAM channel's command");
}

TraceOutputs::TraceOutputs(const po::variables_map& vm) {
  if (vm.count("trace") && vm.count("trace-json")) {
    throw UserError("--trace and --trace-json: give one of them");
  }
  const bool trace = vm.count("trace") || vm.count("trace-json");
  for (const char* flag : {"trace-layers", "trace-window"}) {
    if (vm.count(flag) && !trace) {
      throw UserError(fmt::format("--{} needs --trace DIR or --trace-json FILE", flag));
    }
  }
  const std::string detail = vm["trace-detail"].as<std::string>();
  if (detail == "bursts") {
    detail_ = timeline::Detail::kBursts;
    if (!trace) throw UserError("--trace-detail bursts needs --trace DIR or --trace-json FILE");
  } else if (detail != "instructions") {
    throw UserError(fmt::format("--trace-detail '{}': expected instructions or bursts", detail));
  }
  if (vm.count("trace-window")) {
    const std::string w = vm["trace-window"].as<std::string>();
    const size_t colon = w.find(':');
    if (colon == std::string::npos) parse_cycles("", w);
    window_start_ = parse_cycles(w.substr(0, colon), w);
    window_end_ = parse_cycles(w.substr(colon + 1), w);
    if (window_start_ >= window_end_) parse_cycles("", w);
  }
  if (vm.count("trace-layers")) {
    const std::string list = vm["trace-layers"].as<std::string>();
    for (size_t p = 0; p <= list.size();) {
      const size_t comma = std::min(list.find(',', p), list.size());
      const std::string name = list.substr(p, comma - p);
      if (name.empty()) {
        throw UserError(
            fmt::format("--trace-layers '{}': expected NAME,NAME,... (an empty name)", list));
      }
      layers_.push_back(name);
      p = comma + 1;
    }
  }
  if (vm.count("trace")) {
    const std::string dir = vm["trace"].as<std::string>();
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (dir.empty() || ec || !fs::is_directory(dir)) {
      throw UserError(fmt::format("--trace '{}': cannot create directory", dir));
    }
    json_path_ = (fs::path(dir) / "trace.json").string();
    prepare_file("--trace", json_path_);
  }
  if (vm.count("trace-json")) {
    json_path_ = vm["trace-json"].as<std::string>();
    prepare_file("--trace-json", json_path_);
  }
  if (vm.count("html")) {
    html_path_ = vm["html"].as<std::string>();
    prepare_file("--html", html_path_);
  }
  if (vm.count("vcd")) {
    vcd_path_ = vm["vcd"].as<std::string>();
    prepare_file("--vcd", vcd_path_);
  }
}

std::unique_ptr<timeline::Timeline> TraceOutputs::make_timeline(const HwConfig& hw,
                                                                const Program& program) const {
  if (!records()) return nullptr;
  timeline::Filter filter;
  filter.window_start = window_start_;
  filter.window_end = window_end_;
  filter.detail = detail_;
  if (!layers_.empty()) {
    filter.layers.assign(program.layers.size(), 0);
    for (const std::string& name : layers_) {
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

void TraceOutputs::write(const timeline::Timeline& timeline, const HwConfig& hw,
                         const Program& program, const nlohmann::json& stats,
                         OutputAttempts& attempts) const {
  traces::RunInfo run;
  run.hardware = stats.value("hardware", hw.name);
  run.workload = stats.value("workload", program.network);
  run.total_cycles = stats.value("total_cycles", uint64_t{0});
  run.peak_macs_per_cycle = hw.chip_peak_macs_per_cycle();
  // The DRAM model states its peak in stats.json (memory.bandwidth_gbps may be 0 there).
  double gbps = hw.memory.bandwidth_gbps;
  if (stats.contains("memory")) gbps = stats["memory"].value("peak_bandwidth_gbps", gbps);
  run.memory_bytes_per_cycle = gbps / (hw.clock_mhz * 1e-3);
  if (!json_path_.empty()) {
    attempts.attempt(json_path_, [&] {
      write_atomically("--trace", json_path_, traces::chrome_trace_json(timeline, program, run));
    });
  }
  if (!html_path_.empty()) {
    attempts.attempt(html_path_, [&] {
      write_atomically("--html", html_path_, traces::html_report(timeline, program, run, stats));
    });
  }
}

}  // namespace npusim
