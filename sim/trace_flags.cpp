#include "sim/trace_flags.hpp"

#include <fmt/format.h>

#include <charconv>
#include <filesystem>
#include <fstream>

#include "support/error.hpp"

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

void TraceOutputs::add_generate_options(po::options_description& o) {
  o.add_options()("trace", po::value<std::string>(),
                  "write DIR/trace.json: one Chrome trace-event JSON (ui.perfetto.dev, "
                  "chrome://tracing) of the programs, the prefill then each decode step one after "
                  "the other, each program's units as its own processes")(
      "trace-json", po::value<std::string>(), "write the trace JSON to FILE instead")(
      "trace-steps", po::value<std::string>()->default_value("all"),
      "the programs traced: all (default) or a list of prefill, decode (every decode step), "
      "last and decode step numbers: prefill,1,last")(
      "trace-layers", po::value<std::string>(),
      "trace only these layers of each program: NAME,NAME,...")(
      "trace-window", po::value<std::string>(),
      "trace only instructions overlapping cycles START:END of each program")(
      "trace-detail", po::value<std::string>()->default_value("instructions"),
      "instructions (default) or bursts: also every DMA burst and DRAM command")(
      "html", po::value<std::string>(),
      "write a self-contained HTML report of the generation to FILE: each program's time, "
      "energy and off-chip bytes, energy by component, the last decode step's slowest layers");
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
    filter_.bursts = true;
    if (!trace) throw UserError("--trace-detail bursts needs --trace DIR or --trace-json FILE");
  } else if (detail != "instructions") {
    throw UserError(fmt::format("--trace-detail '{}': expected instructions or bursts", detail));
  }
  if (vm.count("trace-window")) {
    const std::string w = vm["trace-window"].as<std::string>();
    const size_t colon = w.find(':');
    if (colon == std::string::npos) parse_cycles("", w);
    filter_.window_start = parse_cycles(w.substr(0, colon), w);
    filter_.window_end = parse_cycles(w.substr(colon + 1), w);
    if (filter_.window_start >= filter_.window_end) parse_cycles("", w);
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
      filter_.layers.push_back(name);
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
  if (vm.count("trace-steps")) {
    trace_steps_ = vm["trace-steps"].as<std::string>();
    if (!vm["trace-steps"].defaulted() && json_path_.empty()) {
      throw UserError("--trace-steps needs --trace DIR or --trace-json FILE");
    }
  }
}

void TraceOutputs::request(RunOptions& options) const {
  options.record_trace = records();
  options.trace_filter = filter_;
  options.vcd_path = vcd_path_;
}

void TraceOutputs::request(GenerateOptions& options) const {
  // The HTML report of a generation is drawn from its stats.json: only the trace records.
  options.record_trace = !json_path_.empty();
  options.trace_filter = filter_;
  options.trace_steps = trace_steps_;
}

void TraceOutputs::write(const GenerateResult& result, OutputAttempts& attempts) const {
  if (!json_path_.empty()) {
    attempts.attempt(json_path_, [&] { result.write_trace_json(json_path_); });
  }
  if (!html_path_.empty()) {
    attempts.attempt(html_path_, [&] { result.write_html(html_path_); });
  }
}

void TraceOutputs::write(const RunResult& result, OutputAttempts& attempts) const {
  if (!json_path_.empty()) {
    attempts.attempt(json_path_, [&] { result.write_trace_json(json_path_); });
  }
  if (!html_path_.empty()) attempts.attempt(html_path_, [&] { result.write_html(html_path_); });
}

}  // namespace npusim
