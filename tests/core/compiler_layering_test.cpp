// The compiler's stages are folders and CMake libraries (compiler/CMakeLists.txt): front ends and
// the reference build on the IR, passes on the IR and the reference, lowering on the IR. A stage
// may include its own headers and those of the stages it builds on, support/ and arch/, never a
// later stage, the models, the simulator or SystemC (docs/architecture.md, "Layers of the code").
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>

namespace {

const std::map<std::string, std::set<std::string>> kStageMayInclude = {
    {"ir", {"ir"}},
    {"frontend", {"ir", "frontend"}},
    {"reference", {"ir", "reference"}},
    {"passes", {"ir", "reference", "passes"}},
    {"lowering", {"ir", "lowering"}},
};

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

TEST(CompilerLayering, EachStageIncludesOnlyEarlierStages) {
  const std::filesystem::path compiler = std::filesystem::path(NPUSIM_SOURCE_DIR) / "compiler";
  const std::regex include_line(R"(^\s*#\s*include\s*[<"]([^>"]+)[>"])");
  std::map<std::string, int> files_per_stage;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(compiler)) {
    const std::string ext = entry.path().extension().string();
    if (ext != ".hpp" && ext != ".cpp") continue;
    const std::filesystem::path relative = std::filesystem::relative(entry.path(), compiler);
    const std::string stage = relative.begin()->string();
    const auto allowed = kStageMayInclude.find(stage);
    ASSERT_NE(allowed, kStageMayInclude.end())
        << entry.path() << " is in no stage folder (ir, frontend, reference, passes, lowering) "
        << "and is built by no compiler library";
    ++files_per_stage[stage];
    std::ifstream in(entry.path());
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
      std::smatch match;
      if (!std::regex_search(line, match, include_line)) continue;
      const std::string header = match[1];
      const std::string at =
          entry.path().string() + ":" + std::to_string(number) + " includes " + header;
      EXPECT_FALSE(starts_with(header, "systemc") || starts_with(header, "tlm")) << at;
      for (const char* later_layer : {"models/", "sim/", "traces/", "compat/"}) {
        EXPECT_FALSE(starts_with(header, later_layer)) << at;
      }
      if (starts_with(header, "onnx/")) {
        EXPECT_EQ(stage, "frontend") << at;
      }
      if (starts_with(header, "compiler/")) {
        const std::string included_stage = header.substr(9, header.find('/', 9) - 9);
        EXPECT_TRUE(allowed->second.count(included_stage) != 0)
            << at << ": the " << stage << " stage may not include the " << included_stage
            << " stage";
      }
    }
  }
  for (const auto& [stage, _] : kStageMayInclude) {
    EXPECT_GE(files_per_stage[stage], 2) << "compiler/" << stage;
  }
}

}  // namespace
