// The layers include only what docs/architecture.md allows: support/ nothing of the project,
// arch/ (its memory presets in arch/dram/ included) only support/ and itself, the plain-C++ cores
// the models adapt (models/dma_core.hpp) no SystemC, models/ nothing of the compiler, power/,
// traces/ or sim/ (the units count energy events; power/ prices them), power/ only support/, arch/
// and itself (no SystemC, no models: it prices the counts it is handed), and compat/ (SCALE-Sim
// mode) only support/, itself and Boost.program_options. compiler/ and traces/ have tests of their
// own (compiler_layering_test.cpp, tests/traces/).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

namespace {

// Every project or SystemC header `file` includes that is not under one of `allowed`.
std::vector<std::string> bad_includes(const std::filesystem::path& file,
                                      const std::vector<std::string>& allowed,
                                      bool systemc_allowed = false) {
  static const std::regex include_line(R"(^\s*#\s*include\s*[<"]([^>"]+)[>"])");
  std::vector<std::string> bad;
  std::ifstream in(file);
  std::string line;
  for (int number = 1; std::getline(in, line) && number < 100000; ++number) {
    std::smatch match;
    if (!std::regex_search(line, match, include_line)) continue;
    const std::string header = match[1];
    const bool systemc =
        !systemc_allowed && (header.rfind("systemc", 0) == 0 || header.rfind("tlm", 0) == 0);
    // <sys/...>: the C library's POSIX headers (support/zeroed_bytes.cpp maps pages).
    const bool project = header.find('/') != std::string::npos && header.rfind("fmt/", 0) != 0 &&
                         header.rfind("sys/", 0) != 0 && header.rfind("nlohmann/", 0) != 0 &&
                         !(systemc_allowed && header.rfind("tlm_utils/", 0) == 0);
    bool ok = !systemc && !project;
    for (const auto& prefix : allowed) ok = ok || (!systemc && header.rfind(prefix, 0) == 0);
    if (!ok) bad.push_back(file.string() + ":" + std::to_string(number) + " includes " + header);
  }
  return bad;
}

std::vector<std::filesystem::path> sources(const std::string& folder) {
  std::vector<std::filesystem::path> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(
           std::filesystem::path(NPUSIM_SOURCE_DIR) / folder)) {
    const std::string ext = e.path().extension().string();
    if (ext == ".hpp" || ext == ".cpp") out.push_back(e.path());
  }
  return out;
}

TEST(Layering, SupportIncludesNothingOfTheProject) {
  const auto files = sources("support");
  EXPECT_GE(files.size(), 10u);
  for (const auto& f : files) {
    for (const auto& b : bad_includes(f, {"support/"})) ADD_FAILURE() << b;
  }
}

TEST(Layering, ArchIncludesOnlySupportAndItself) {
  const auto files = sources("arch");
  EXPECT_GE(files.size(), 16u);
  for (const auto& f : files) {
    for (const auto& b : bad_includes(f, {"support/", "arch/"})) ADD_FAILURE() << b;
  }
}

TEST(Layering, DmaCoreHasNoSystemC) {
  const auto core = std::filesystem::path(NPUSIM_SOURCE_DIR) / "models" / "dma_core.hpp";
  for (const auto& b : bad_includes(core, {"support/", "arch/"})) ADD_FAILURE() << b;
}

TEST(Layering, ModelsIncludeNoCompilerPowerTracesOrSim) {
  const auto files = sources("models");
  EXPECT_GE(files.size(), 40u);
  for (const auto& f : files) {
    for (const auto& b : bad_includes(f, {"support/", "arch/", "models/"}, true)) {
      ADD_FAILURE() << b;
    }
  }
}

TEST(Layering, PowerIncludesOnlySupportArchAndItself) {
  const auto files = sources("power");
  EXPECT_GE(files.size(), 6u);
  for (const auto& f : files) {
    for (const auto& b : bad_includes(f, {"support/", "arch/", "power/"})) ADD_FAILURE() << b;
  }
}

TEST(Layering, ServingIncludesOnlySupportAndItself) {
  const auto files = sources("serving");
  EXPECT_GE(files.size(), 6u);
  for (const auto& f : files) {
    for (const auto& b : bad_includes(f, {"support/", "serving/"})) ADD_FAILURE() << b;
  }
}

TEST(Layering, CompatIncludesOnlySupportAndItself) {
  const auto files = sources("compat");
  EXPECT_GE(files.size(), 8u);
  for (const auto& f : files) {
    for (const auto& b : bad_includes(f, {"support/", "compat/", "boost/"})) ADD_FAILURE() << b;
  }
}

}  // namespace
