// traces/ writes what the models recorded (support/timeline.hpp) for the program (arch/): it may
// include std, fmt, nlohmann_json, support/, arch/ and its own headers; never models/, compiler/,
// sim/ or SystemC (docs/architecture.md, layers).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

namespace {

TEST(TracesLayering, WritersIncludeOnlySupportArchAndThemselves) {
  const std::filesystem::path folder = std::filesystem::path(NPUSIM_SOURCE_DIR) / "traces";
  const std::regex include_line(R"(^\s*#\s*include\s*[<"]([^>"]+)[>"])");
  int files = 0, includes = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(folder)) {
    const std::string ext = entry.path().extension().string();
    if (ext != ".hpp" && ext != ".cpp") continue;
    ++files;
    std::ifstream in(entry.path());
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
      std::smatch match;
      if (!std::regex_search(line, match, include_line)) continue;
      ++includes;
      const std::string header = match[1];
      const bool project = header.find('/') != std::string::npos && header.rfind("fmt/", 0) != 0 &&
                           header.rfind("nlohmann/", 0) != 0;
      const bool allowed = header.rfind("support/", 0) == 0 || header.rfind("arch/", 0) == 0 ||
                           header.rfind("traces/", 0) == 0;
      EXPECT_FALSE(header.rfind("systemc", 0) == 0 || header.rfind("tlm", 0) == 0 ||
                   header.rfind("sysc/", 0) == 0)
          << entry.path() << ":" << number << " includes " << header;
      EXPECT_TRUE(!project || allowed) << entry.path() << ":" << number << " includes " << header;
    }
  }
  EXPECT_GE(files, 6);
  EXPECT_GE(includes, 10);
}

// The recorder the writers read is plain C++ too.
TEST(TracesLayering, TimelineIsPlainCpp) {
  const std::filesystem::path support = std::filesystem::path(NPUSIM_SOURCE_DIR) / "support";
  for (const char* name : {"timeline.hpp", "timeline.cpp"}) {
    std::ifstream in(support / name);
    ASSERT_TRUE(in) << name;
    std::string line;
    while (std::getline(in, line)) {
      if (line.find("#include") == std::string::npos) continue;
      EXPECT_EQ(line.find("systemc"), std::string::npos) << name << ": " << line;
      EXPECT_EQ(line.find("models/"), std::string::npos) << name << ": " << line;
    }
  }
}

}  // namespace
