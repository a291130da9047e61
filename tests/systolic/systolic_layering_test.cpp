// The systolic cores are plain C++ below the SystemC models (docs/architecture layers): they may
// include std, fmt, support/ and arch/ headers and each other, nothing else of the project and no
// SystemC, so that unit tests drive them without sc_start.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

namespace {

TEST(SystolicLayering, CoresIncludeOnlySupportArchAndThemselves) {
  const std::filesystem::path folder =
      std::filesystem::path(NPUSIM_SOURCE_DIR) / "models" / "systolic";
  const std::regex include_line(R"(^\s*#\s*include\s*[<"]([^>"]+)[>"])");
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    const std::string ext = entry.path().extension().string();
    if (ext != ".hpp" && ext != ".cpp") continue;
    ++files;
    std::ifstream in(entry.path());
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
      std::smatch match;
      if (!std::regex_search(line, match, include_line)) continue;
      const std::string header = match[1];
      const bool project = header.find('/') != std::string::npos && header.rfind("fmt/", 0) != 0;
      const bool allowed = header.rfind("support/", 0) == 0 || header.rfind("arch/", 0) == 0 ||
                           header.rfind("models/systolic/", 0) == 0;
      EXPECT_FALSE(header.rfind("systemc", 0) == 0 || header.rfind("tlm", 0) == 0)
          << entry.path() << ":" << number << " includes " << header;
      EXPECT_TRUE(!project || allowed) << entry.path() << ":" << number << " includes " << header;
    }
  }
  EXPECT_GE(files, 8);
}

}  // namespace
