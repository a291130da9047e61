#include "compat/scalesim/scalesim_cli.hpp"

#include <fmt/core.h>

#include <boost/program_options.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "compat/scalesim/scalesim_config.hpp"
#include "compat/scalesim/scalesim_report.hpp"
#include "compat/scalesim/scalesim_sim.hpp"
#include "compat/scalesim/scalesim_topology.hpp"
#include "support/error.hpp"

namespace npusim::scalesim {

namespace {

namespace fs = std::filesystem;
namespace po = boost::program_options;

constexpr const char* kUsage =
    "usage: npusim scalesim -c CONFIG.cfg -t TOPOLOGY.csv [-i conv|gemm] -p OUTDIR [-q]\n"
    "\n"
    "Runs a SCALE-Sim v2 config and topology with SCALE-Sim's conventions and writes\n"
    "COMPUTE_REPORT.csv, BANDWIDTH_REPORT.csv and DETAILED_ACCESS_REPORT.csv into\n"
    "OUTDIR/<run_name>/ (run_name from the config's [general] section). See docs/scalesim.md.\n";

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw UserError(fmt::format("{}: cannot write the report", path.string()));
  out << text;
  out.close();
  if (!out) throw UserError(fmt::format("{}: cannot write the report", path.string()));
}

int run(const std::vector<std::string>& args) {
  po::options_description options("options");
  std::string config_path, topology_path, input_type = "conv", out_dir;
  options.add_options()("help,h", "print this help")(
      "config,c", po::value<std::string>(&config_path), "SCALE-Sim config file (.cfg)")(
      "topology,t", po::value<std::string>(&topology_path), "SCALE-Sim topology file (.csv)")(
      "input-type,i", po::value<std::string>(&input_type), "topology kind: conv (default) or gemm")(
      "path,p", po::value<std::string>(&out_dir),
      "output directory (reports go to OUTDIR/<run_name>/)")(
      "quiet,q", "print only the location of the reports");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(options).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "npusim scalesim: " << e.what() << "\n" << kUsage;
    return 2;
  }
  if (vm.count("help")) {
    std::cout << kUsage << "\n" << options;
    return 0;
  }
  std::vector<std::string> missing;
  if (config_path.empty()) missing.push_back("-c CONFIG.cfg");
  if (topology_path.empty()) missing.push_back("-t TOPOLOGY.csv");
  if (out_dir.empty()) missing.push_back("-p OUTDIR");
  if (!missing.empty()) {
    std::string list;
    for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
    std::cerr << "npusim scalesim: missing " << list << "\n" << kUsage;
    return 2;
  }
  TopologyKind kind;
  if (input_type == "conv") {
    kind = TopologyKind::kConv;
  } else if (input_type == "gemm") {
    kind = TopologyKind::kGemm;
  } else {
    std::cerr << fmt::format("npusim scalesim: option -i: expected conv or gemm, got '{}'\n",
                             input_type)
              << kUsage;
    return 2;
  }
  const bool quiet = vm.count("quiet") > 0;

  std::string warnings;
  const Config config = read_config(config_path, &warnings);
  std::cerr << warnings;
  // Reports of an earlier run under the same name must not survive a failed run.
  const fs::path dir = fs::path(out_dir) / config.run_name;
  const char* const kReportNames[] = {"COMPUTE_REPORT.csv", "BANDWIDTH_REPORT.csv",
                                      "DETAILED_ACCESS_REPORT.csv"};
  std::error_code ec;
  for (const char* name : kReportNames) fs::remove(dir / name, ec);
  const std::vector<Layer> layers = read_topology(topology_path, kind);

  const auto t0 = std::chrono::steady_clock::now();
  std::vector<LayerResult> results;
  results.reserve(layers.size());
  int64_t total_cycles = 0;
  for (size_t id = 0; id < layers.size(); ++id) {
    try {
      results.push_back(simulate_layer(config, layers[id]));
    } catch (const UserError& e) {
      throw UserError(
          fmt::format("{}: layer {} ('{}'): {}", topology_path, id, layers[id].name, e.what()));
    }
    const LayerResult& r = results.back();
    total_cycles += r.total_cycles;
    if (!quiet) {
      std::cout << fmt::format(
          "Layer {} ({}): total cycles {}, stall cycles {}, overall util {:.2f}%, mapping "
          "efficiency {:.2f}%\n",
          id, r.name, r.total_cycles, r.stall_cycles, r.overall_util_pct, r.mapping_efficiency_pct);
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  // Write under temporary names, then rename: a failed run never leaves reports that look
  // complete.
  fs::create_directories(dir, ec);
  if (ec) {
    throw UserError(
        fmt::format("{}: cannot create the output directory: {}", dir.string(), ec.message()));
  }
  const std::pair<const char*, std::string> reports[] = {
      {"COMPUTE_REPORT.csv", compute_report(results)},
      {"BANDWIDTH_REPORT.csv", bandwidth_report(results)},
      {"DETAILED_ACCESS_REPORT.csv", detailed_access_report(results)}};
  try {
    for (const auto& [name, text] : reports) write_file(dir / (std::string(name) + ".tmp"), text);
    for (const auto& [name, text] : reports) {
      fs::rename(dir / (std::string(name) + ".tmp"), dir / name);
    }
  } catch (...) {
    for (const auto& [name, text] : reports) fs::remove(dir / (std::string(name) + ".tmp"), ec);
    throw;
  }
  std::cout << fmt::format(
      "npusim scalesim: {} layers, {} cycles, simulated in {:.3f} s; reports in {}\n",
      results.size(), total_cycles, seconds, dir.string());
  return 0;
}

}  // namespace

int run_cli(const std::vector<std::string>& args) {
  try {
    return run(args);
  } catch (const UserError& e) {
    std::cerr << "npusim scalesim: error: " << e.what() << "\n";
    return 2;
  } catch (const InternalError& e) {
    std::cerr << "npusim scalesim: " << e.what() << "\n";
    return 1;
  } catch (const fs::filesystem_error& e) {
    std::cerr << "npusim scalesim: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "npusim scalesim: internal error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace npusim::scalesim
