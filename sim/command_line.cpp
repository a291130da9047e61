#include "sim/command_line.hpp"

#include <fmt/format.h>

#include <fstream>
#include <iostream>

namespace po = boost::program_options;

namespace npusim {

bool parse_command_line(const std::string& command, const std::string& synopsis,
                        po::options_description& options, const std::vector<std::string>& args,
                        po::variables_map& vm) {
  options.add_options()("help,h", "show this help");
  try {
    po::store(po::command_line_parser(args).options(options).run(), vm);
    if (vm.count("help")) {
      std::cout << "usage: npusim " << command << " " << synopsis << "\n\n" << options << "\n";
      return false;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(
        fmt::format("npusim {}: {} (see npusim {} --help)", command, e.what(), command));
  }
  return true;
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  auto tmp = path;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    out << text;
    if (!out) throw UserError(fmt::format("{}: cannot write", tmp.string()));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw UserError(fmt::format("{}: cannot write: {}", path.string(), ec.message()));
}

void create_output_directory(const std::string& flag, const std::filesystem::path& dir,
                             const std::vector<std::string>& stale) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) {
    throw UserError(fmt::format("{} '{}': cannot create directory", flag, dir.string()));
  }
  for (const std::string& f : stale) std::filesystem::remove(dir / f, ec);
}

void add_memory_fidelity_option(boost::program_options::options_description& options) {
  options.add_options()("memory-fidelity", boost::program_options::value<std::string>(),
                        "how the DRAM model simulates (memory.model \"dram\"): command (every "
                        "burst through the command-level controller) or bulk (each DMA row timed "
                        "in closed form from the preset: within a few % of command, many times "
                        "faster on memory-bound runs; docs/memory_system.md); default: "
                        "the hardware's memory.fidelity (command unless it says otherwise)");
}

std::string memory_fidelity_from(const boost::program_options::variables_map& vm) {
  if (vm.count("memory-fidelity") == 0) return "";
  const std::string f = vm["memory-fidelity"].as<std::string>();
  if (f != "command" && f != "bulk") {
    throw UsageError(fmt::format("--memory-fidelity '{}': expected command or bulk", f));
  }
  return f;
}

}  // namespace npusim
