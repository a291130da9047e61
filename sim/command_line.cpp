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

}  // namespace npusim
