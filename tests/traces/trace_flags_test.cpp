// Bad trace flags: a clear message naming the flag and what was expected, exit code 2, and no
// trace file left behind (nor an older one that would look like this run's).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "../e2e/run_npusim.hpp"

namespace {

namespace fs = std::filesystem;

fs::path fresh(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("npusim-trace-flags-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

const std::string kRun = "run --hw tpu-v1 --workload mnist-cnn ";

void expect_usage_error(const std::string& args, const std::string& message) {
  const CommandResult r = run_npusim(kRun + args);
  EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
  EXPECT_NE(r.err.find(message), std::string::npos)
      << args << "\nexpected: " << message << "\ngot: " << r.err;
}

TEST(TraceFlags, BadWindowSyntax) {
  const fs::path dir = fresh("window");
  for (const std::string w : {"100", "a:b", "5:5", "9:3", ":10", "10:", "1:2:3"}) {
    expect_usage_error("--trace " + dir.string() + " --trace-window " + w,
                       "--trace-window '" + w + "': expected START:END");
  }
  EXPECT_FALSE(fs::exists(dir / "trace.json"));
}

TEST(TraceFlags, UnknownLayerNamesTheLayersThatExist) {
  const fs::path dir = fresh("layers");
  std::ofstream(dir / "trace.json") << "{\"old\": true}";  // an older trace must not survive
  expect_usage_error("--trace " + dir.string() + " --trace-layers conv1,nosuch",
                     "--trace-layers: unknown layer 'nosuch' (layers of mnist-cnn after fusion: "
                     "conv1, flatten");
  EXPECT_FALSE(fs::exists(dir / "trace.json"));
  EXPECT_FALSE(fs::exists(dir / "trace.json.tmp"));
}

TEST(TraceFlags, BadDetailAndFiltersWithoutTrace) {
  const fs::path dir = fresh("detail");
  expect_usage_error("--trace " + dir.string() + " --trace-detail cycles",
                     "--trace-detail 'cycles': expected instructions or bursts");
  expect_usage_error("--trace-layers conv1",
                     "--trace-layers needs --trace DIR or --trace-json FILE");
  expect_usage_error("--html " + (dir / "r.html").string() + " --trace-window 1:2",
                     "--trace-window needs --trace DIR or --trace-json FILE");
  expect_usage_error("--trace " + dir.string() + " --trace-json " + (dir / "t.json").string(),
                     "--trace and --trace-json: give one of them");
}

TEST(TraceFlags, UnwritablePaths) {
  const fs::path dir = fresh("paths");
  std::ofstream(dir / "file") << "x";
  expect_usage_error("--vcd " + (dir / "file" / "w.vcd").string(), "--vcd '");
  expect_usage_error("--html " + dir.string(), "is a directory");
  expect_usage_error("--trace " + (dir / "file").string(),
                     "--trace '" + (dir / "file").string() + "': cannot create directory");
  EXPECT_FALSE(fs::exists(dir / "file" / "w.vcd"));
}

TEST(TraceFlags, HelpDocumentsEveryFlag) {
  const CommandResult r = run_npusim("run --help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* flag : {"--trace arg", "--trace-json", "--trace-layers", "--trace-window",
                           "--trace-detail", "--html", "--vcd"}) {
    EXPECT_NE(r.out.find(flag), std::string::npos) << flag;
  }
}

}  // namespace
