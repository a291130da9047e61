#include "sim/membench_command.hpp"

#include <fmt/format.h>

#include <iostream>

#include "arch/dram/address_mapping.hpp"
#include "models/dram/membench.hpp"
#include "sim/command_line.hpp"
#include "support/presets.hpp"

namespace po = boost::program_options;

namespace npusim {

namespace {

uint64_t count_option(const po::variables_map& vm, const char* flag, uint64_t fallback,
                      uint64_t min, uint64_t max) {
  if (!vm.count(flag)) return fallback;
  // Boost reads "-1" into an unsigned as its two's complement, far above every max here.
  const uint64_t v = vm[flag].as<uint64_t>();
  if (v < min || v > max) {
    throw UsageError(
        fmt::format("--{}: expected an integer in [{}, {}], got {}", flag, min, max,
                    v > (uint64_t{1} << 63) ? std::to_string(int64_t(v)) : std::to_string(v)));
  }
  return v;
}

dram::MembenchOptions membench_options(const po::variables_map& vm) {
  dram::MembenchOptions opt;
  opt.requests = count_option(vm, "requests", 0, 1, uint64_t{1} << 40);
  opt.seed = count_option(vm, "seed", 1, 0, UINT64_MAX / 2);
  if (vm.count("trace")) {
    if (vm.count("pattern"))
      throw UsageError("--trace: give either --pattern or --trace, not both");
    opt.pattern = dram::Pattern::kTrace;
    opt.trace_file = vm["trace"].as<std::string>();
  } else if (!vm.count("pattern")) {
    throw UsageError("--pattern: required unless --trace is given");
  } else if (const std::string name = vm["pattern"].as<std::string>();
             !dram::parse_pattern(name, &opt.pattern)) {
    throw UsageError(
        fmt::format("--pattern: expected seq-read, seq-write, random-read, mix-2r1w, seq-mix-2r1w, "
                    "stride-row, idle-seq-read or idle-random-read, got \"{}\"",
                    name));
  }
  return opt;
}

// The preset --memory names, with --channels, --mapping, --page-policy and --no-refresh applied.
dram::MemoryConfig membench_memory(const po::variables_map& vm) {
  const std::string memory = vm["memory"].as<std::string>();
  const std::optional<PresetFile> file = find_preset("memory", memory);
  if (!file) throw UserError(fmt::format("--memory '{}': {}", memory, preset_not_found("memory")));
  dram::MemoryConfig cfg = dram::parse_memory_config(file->text, file->origin);
  const uint64_t channels = count_option(vm, "channels", 0, 1, 1024);
  if (channels != 0) {
    if ((channels & (channels - 1)) != 0) {
      throw UsageError(fmt::format("--channels: expected a power of two, got {}", channels));
    }
    cfg.org.channels = int(channels);
  }
  if (vm.count("mapping")) {
    const std::string mapping = vm["mapping"].as<std::string>();
    const std::string why = dram::AddressMapper::check_spec(mapping, cfg.org);
    if (!why.empty()) throw UsageError("--mapping: " + why);
    cfg.controller.address_mapping = mapping;
  } else if (channels != 0) {
    const std::string why =
        dram::AddressMapper::check_spec(cfg.controller.address_mapping, cfg.org);
    if (!why.empty()) {
      throw UserError(fmt::format("--channels {}: the preset's address mapping does not fit: {}",
                                  channels, why));
    }
  }
  if (vm.count("page-policy")) {
    const std::string policy = vm["page-policy"].as<std::string>();
    if (policy != "open" && policy != "closed") {
      throw UsageError(fmt::format("--page-policy: expected open or closed, got \"{}\"", policy));
    }
    cfg.controller.page_policy =
        policy == "open" ? dram::PagePolicy::kOpen : dram::PagePolicy::kClosed;
  }
  if (vm.count("no-refresh")) cfg.controller.refresh = false;
  return cfg;
}

}  // namespace

int command_membench(const std::vector<std::string>& args) {
  po::options_description o("membench options");
  const std::string presets = fmt::format("{}", fmt::join(preset_names("memory"), ", "));
  o.add_options()("memory", po::value<std::string>()->required(),
                  fmt::format("memory preset ({}) or a preset .json file", presets).c_str())(
      "channels", po::value<uint64_t>(), "override the preset's channel count (a power of two)")(
      "pattern", po::value<std::string>(),
      "seq-read | seq-write | random-read | mix-2r1w | seq-mix-2r1w | stride-row | "
      "idle-seq-read | idle-random-read: closed loop, as fast as the controller accepts; the "
      "idle patterns inject one request every 200 memory cycles")(
      "trace", po::value<std::string>(),
      "replay a trace written by gen_trace.py (DRAMsim3 or Ramulator format) instead")(
      "requests", po::value<uint64_t>(),
      "number of requests (default 1000000, idle patterns 20000, trace: all)")(
      "seed", po::value<uint64_t>(), "seed of the random patterns (default 1)")(
      "mapping", po::value<std::string>(), "override the address mapping, e.g. rorabgbachco")(
      "page-policy", po::value<std::string>(), "open | closed")("no-refresh", "disable refresh");
  po::variables_map vm;
  if (!parse_command_line("membench", "--memory PRESET (--pattern P | --trace FILE) [options]", o,
                          args, vm)) {
    return 0;
  }
  const dram::MembenchOptions opt = membench_options(vm);
  const dram::MemoryConfig cfg = membench_memory(vm);
  const dram::MembenchResult result = dram::run_membench(cfg, opt);
  const std::string pattern = opt.pattern == dram::Pattern::kTrace
                                  ? "trace:" + opt.trace_file
                                  : dram::pattern_name(opt.pattern);
  std::cout << dram::membench_report(vm["memory"].as<std::string>(), cfg, pattern, result).dump(2)
            << "\n";
  return 0;
}

}  // namespace npusim
