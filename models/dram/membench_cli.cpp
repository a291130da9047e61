#include "models/dram/membench_cli.hpp"
#include "models/dram/memory_stats.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "models/dram/membench.hpp"
#include "support/error.hpp"

namespace npusim::dram {

namespace {

constexpr const char* kUsage =
    R"(usage: npusim membench --memory <preset|file.json> --pattern <pattern> [options]
       npusim membench --memory <preset|file.json> --trace FILE [options]

Drives the DRAM model alone and prints a JSON summary.

  --memory NAME|FILE   memory preset from configs/memory (e.g. hbm2, hbm2e, hbm3, ddr3, lpddr4)
                       or a preset .json file
  --channels N         override the preset's channel count (a power of two)
  --pattern P          seq-read | seq-write | random-read | mix-2r1w | seq-mix-2r1w | stride-row
                       | idle-seq-read | idle-random-read
                       closed loop as fast as the controller accepts; the idle patterns inject
                       one request every 200 memory cycles
  --trace FILE         replay a trace written by gen_trace.py (DRAMsim3 or Ramulator format)
  --requests N         number of requests (default 1000000, idle 20000, trace: all)
  --seed S             seed of the random patterns (default 1)
  --mapping SPEC       override the address mapping, e.g. rorabgbachco
  --page-policy P      open | closed
  --no-refresh         disable refresh
  --help               this text

Presets are looked up in $NPUSIM_CONFIG_DIR/memory, else in the source tree's configs/memory.
)";

uint64_t parse_count(const std::string& flag, const std::string& value, uint64_t min,
                     uint64_t max) {
  uint64_t v = 0;
  bool ok = !value.empty() && value.size() <= 19;
  for (char c : value) ok = ok && c >= '0' && c <= '9';
  if (ok) v = std::stoull(value);
  if (!ok || v < min || v > max) {
    throw UserError(
        fmt::format("{}: expected an integer in [{}, {}], got \"{}\"", flag, min, max, value));
  }
  return v;
}

// The report: the run's `memory` figures with the same keys as stats.json's `memory` section
// (one registration, models/dram/memory_stats.cpp), what membench drove, and the host's speed.
nlohmann::ordered_json to_json(const std::string& preset, const MemoryConfig& cfg,
                               const std::string& pattern,
                               const MembenchResult& r) {
  const MemoryStats& s = r.stats;
  const double peak = cfg.peak_bandwidth_gbps();
  stats::Registry reg;
  register_memory_stats(reg, preset, cfg, s, r.channel_bursts);
  nlohmann::ordered_json j;
  j["pattern"] = pattern;
  j["memory_file"] = cfg.file;
  j["requests"] = r.requests;
  j["bandwidth_pct_of_peak"] = peak > 0 ? 100.0 * s.bandwidth_gbps / peak : 0.0;
  j["acts_per_request"] = r.requests > 0 ? double(s.acts) / double(r.requests) : 0.0;
  j["memory"] = reg.to_json();
  j["host"] = {
      {"wall_seconds", r.wall_seconds},
      {"cpu_seconds", r.cpu_seconds},
      {"requests_per_second", r.wall_seconds > 0 ? double(r.requests) / r.wall_seconds : 0.0},
      {"memory_cycles_per_second", r.wall_seconds > 0 ? double(s.cycles) / r.wall_seconds : 0.0},
      {"requests_per_cpu_second", r.cpu_seconds > 0 ? double(r.requests) / r.cpu_seconds : 0.0},
      {"memory_cycles_per_cpu_second",
       r.cpu_seconds > 0 ? double(s.cycles) / r.cpu_seconds : 0.0}};
  return j;
}

int run(const std::vector<std::string>& args) {
  std::string memory, pattern_name_arg, trace, mapping, page_policy;
  uint64_t channels = 0, requests = 0, seed = 1;
  bool no_refresh = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) throw UserError(fmt::format("{}: expected a value", a));
      return args[++i];
    };
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--memory") {
      memory = value();
    } else if (a == "--channels") {
      channels = parse_count(a, value(), 1, 1024);
    } else if (a == "--pattern") {
      pattern_name_arg = value();
    } else if (a == "--requests") {
      requests = parse_count(a, value(), 1, uint64_t{1} << 40);
    } else if (a == "--trace") {
      trace = value();
    } else if (a == "--seed") {
      seed = parse_count(a, value(), 0, UINT64_MAX / 2);
    } else if (a == "--mapping") {
      mapping = value();
    } else if (a == "--page-policy") {
      page_policy = value();
    } else if (a == "--no-refresh") {
      no_refresh = true;
    } else {
      throw UserError(fmt::format("{}: unknown flag (see npusim membench --help)", a));
    }
  }
  if (memory.empty()) throw UserError("--memory: required (a preset name or a .json file)");
  MembenchOptions opt;
  opt.requests = requests;
  opt.seed = seed;
  if (!trace.empty()) {
    if (!pattern_name_arg.empty()) {
      throw UserError("--trace: give either --pattern or --trace, not both");
    }
    opt.pattern = Pattern::kTrace;
    opt.trace_file = trace;
  } else if (pattern_name_arg.empty()) {
    throw UserError("--pattern: required unless --trace is given");
  } else if (!parse_pattern(pattern_name_arg, &opt.pattern)) {
    throw UserError(
        fmt::format("--pattern: expected seq-read, seq-write, random-read, mix-2r1w, seq-mix-2r1w, "
                    "stride-row, idle-seq-read or idle-random-read, got \"{}\"",
                    pattern_name_arg));
  }

  MemoryConfig cfg = resolve_memory_config(memory);
  if (channels != 0) {
    if ((channels & (channels - 1)) != 0) {
      throw UserError(fmt::format("--channels: expected a power of two, got {}", channels));
    }
    cfg.org.channels = int(channels);
  }
  if (!mapping.empty()) {
    std::string why = AddressMapper::check_spec(mapping, cfg.org);
    if (!why.empty()) throw UserError("--mapping: " + why);
    cfg.controller.address_mapping = mapping;
  } else if (channels != 0) {
    std::string why = AddressMapper::check_spec(cfg.controller.address_mapping, cfg.org);
    if (!why.empty()) {
      throw UserError(fmt::format("--channels {}: the preset's address mapping does not fit: {}",
                                  channels, why));
    }
  }
  if (!page_policy.empty()) {
    if (page_policy != "open" && page_policy != "closed") {
      throw UserError(
          fmt::format("--page-policy: expected open or closed, got \"{}\"", page_policy));
    }
    cfg.controller.page_policy = page_policy == "open" ? PagePolicy::kOpen : PagePolicy::kClosed;
  }
  if (no_refresh) cfg.controller.refresh = false;

  MembenchResult result = run_membench(cfg, opt);
  std::cout << to_json(
                   memory, cfg,
                   opt.pattern == Pattern::kTrace ? "trace:" + trace : pattern_name(opt.pattern),
                   result)
                   .dump(2)
            << "\n";
  return 0;
}

}  // namespace

int run_membench_cli(const std::vector<std::string>& args) {
  try {
    return run(args);
  } catch (const UserError& e) {
    std::cerr << "npusim membench: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "npusim membench: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace npusim::dram
