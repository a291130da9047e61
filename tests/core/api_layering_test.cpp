// The library API and its front ends (DESIGN.md, "Layers"): npusim/ is the library, one public
// header (npusim/npusim.hpp) over the layers above it, that neither parses command lines nor
// prints; sim/ (the command line) and python/ (the module) include that header, not the layers
// below it, and hold no simulation logic of their own.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>

namespace {

namespace fs = std::filesystem;

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

struct Include {
  std::string header, at;
};

std::vector<Include> includes(const fs::path& file) {
  static const std::regex include_line(R"(^\s*#\s*include\s*[<"]([^>"]+)[>"])");
  std::vector<Include> out;
  std::ifstream in(file);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    std::smatch match;
    if (std::regex_search(line, match, include_line)) {
      out.push_back({match[1], file.string() + ":" + std::to_string(number) + " includes " +
                                   std::string(match[1])});
    }
  }
  return out;
}

std::string text_of(const fs::path& file) {
  std::ifstream in(file);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::vector<fs::path> sources(const std::string& folder) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(fs::path(NPUSIM_SOURCE_DIR) / folder)) {
    const std::string ext = e.path().extension().string();
    if (ext == ".hpp" || ext == ".cpp") out.push_back(e.path());
  }
  return out;
}

TEST(ApiLayering, TheLibraryNeitherParsesCommandLinesNorPrints) {
  const std::regex printing(R"(std::cout|std::cerr|std::printf|\bprintf\(|\bputs\(|\bexit\()");
  int files = 0;
  for (const fs::path& file : sources("npusim")) {
    ++files;
    for (const Include& i : includes(file)) {
      EXPECT_FALSE(starts_with(i.header, "boost/program_options")) << i.at;
      EXPECT_FALSE(i.header == "iostream" || i.header == "cstdio") << i.at;
      EXPECT_FALSE(starts_with(i.header, "sim/")) << i.at;
      EXPECT_FALSE(starts_with(i.header, "python/")) << i.at;
    }
    EXPECT_FALSE(std::regex_search(text_of(file), printing)) << file << " prints or exits";
  }
  EXPECT_GE(files, 10);
}

TEST(ApiLayering, ThePublicHeaderExposesNoInternals) {
  for (const Include& i : includes(fs::path(NPUSIM_SOURCE_DIR) / "npusim" / "npusim.hpp")) {
    const bool allowed = i.header.find('/') == std::string::npos ||
                         i.header == "nlohmann/json.hpp" || i.header == "support/error.hpp";
    EXPECT_TRUE(allowed) << i.at;
  }
}

// The command line and the module reach the simulator through the public header only.
TEST(ApiLayering, FrontEndsIncludeOnlyThePublicHeader) {
  int files = 0;
  for (const std::string folder : {"sim", "python"}) {
    for (const fs::path& file : sources(folder)) {
      ++files;
      for (const Include& i : includes(file)) {
        if (i.header.find('/') == std::string::npos) continue;  // std, <systemc> in main.cpp
        const std::string& h = i.header;
        bool allowed = h == "npusim/npusim.hpp" || starts_with(h, "support/") ||
                       starts_with(h, "fmt/") || starts_with(h, "boost/program_options") ||
                       starts_with(h, "pybind11/") || starts_with(h, folder + "/") ||
                       h == "compat/scalesim/scalesim_cli.hpp";
        // `npusim membench` parses flags for the memory benchmark driver, an API of its own.
        if (file.filename() == "membench_command.cpp") {
          allowed =
              allowed || h == "models/dram/membench.hpp" || h == "arch/dram/address_mapping.hpp";
        }
        EXPECT_TRUE(allowed) << i.at;
      }
    }
  }
  EXPECT_GE(files, 8);
}

}  // namespace
