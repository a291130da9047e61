// Bad input from the command line: a clear message naming the file and place, exit code 2, and no
// result left behind that looks complete.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "run_npusim.hpp"

namespace {

const std::string kData = NPUSIM_E2E_DATA;

TEST(CliErrors, BadHardwareFileReportsEveryProblem) {
  CommandResult r = run_npusim("validate --hw " + kData + "/bad_hw.json");
  EXPECT_EQ(r.exit_code, 2);
  const std::string f = kData + "/bad_hw.json";
  for (const std::string& line :
       {f + ": /matrix_unit/rows: expected an integer in [1, 512], got 0",
        f + ": /matrix_unit/dataflow: expected one of \"ws\", \"os\", \"is\", got \"diagonal\"",
        f + ": /buffers/unified_buffer/capacity_bytes: expected an integer in [1024, "
            "1099511627776], got -5",
        f + ": /memory/bandwidth_gbps: expected a number in [0.001, 1000000], got a string",
        f + ": /turbo: unknown key \"turbo\""}) {
    EXPECT_NE(r.err.find(line), std::string::npos) << "missing: " << line << "\nin:\n" << r.err;
  }
}

TEST(CliErrors, MalformedJsonNamesLine) {
  CommandResult r = run_npusim("validate --hw " + kData + "/malformed.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(kData + "/malformed.json:4:15: malformed JSON: syntax error"),
            std::string::npos)
      << r.err;
}

// Found by fuzzing (tests/fuzz): a number beyond a double's range ended in an uncaught exception.
TEST(CliErrors, NumberOutOfRangeIsMalformedJson) {
  const auto dir = fresh_dir("huge-number");
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "huge.json").string();
  std::ofstream(path) << "{\"schema_version\": 1, \"clock_mhz\": 7e777777}";
  CommandResult r = run_npusim("validate --hw " + path);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(path + ": malformed JSON: number overflow parsing '7e777777'"),
            std::string::npos)
      << r.err;
  std::filesystem::remove_all(dir);
}

TEST(CliErrors, BadWorkloadNamesLayerAndKey) {
  CommandResult r = run_npusim("run --hw edge --workload " + kData + "/bad_net.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(kData + "/bad_net.json: /layers/0/stride: unknown key \"stride\""),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(kData + "/bad_net.json: /layers/1/units: expected an integer in [1, "
                               "1048576], got 0"),
            std::string::npos)
      << r.err;
}

TEST(CliErrors, NetworkThatDoesNotFitSaysWhatToChange) {
  auto dir = fresh_dir("nofit");
  CommandResult r =
      run_npusim("run --hw " + kData + "/tiny_hw.json --workload mnist-cnn --out " + dir.string());
  EXPECT_EQ(r.exit_code, 2);
  // conv1 fits in 1 KiB (3 input rows of 28 bytes and a 26x8 output row, double-buffered, plus
  // 128 bytes of bias); pool1 does not: 2 input rows of 26x32 (1664, aligned 1664) and one output
  // row of 13x32 (416, aligned 448), both double-buffered: 2*1664 + 2*448 = 4224 bytes.
  EXPECT_NE(r.err.find("layer 'pool1' does not fit: one pooled output row needs 4224 bytes of "
                       "unified buffer, the hardware has 1024"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("raise buffers.unified_buffer.capacity_bytes to at least"),
            std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir / "stats.json"));
  std::filesystem::remove_all(dir);
}

TEST(CliErrors, BadFlagsAndCommands) {
  CommandResult unknown_flag = run_npusim("run --hw edge --workload mnist-cnn --turbo");
  EXPECT_EQ(unknown_flag.exit_code, 2);
  EXPECT_NE(
      unknown_flag.err.find("npusim run: unrecognised option '--turbo' (see npusim run --help)"),
      std::string::npos)
      << unknown_flag.err;
  CommandResult missing = run_npusim("run --hw edge");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("the option '--workload' is required"), std::string::npos)
      << missing.err;
  CommandResult fidelity = run_npusim("run --hw edge --workload mnist-cnn --fidelity rtl");
  EXPECT_EQ(fidelity.exit_code, 2);
  EXPECT_NE(fidelity.err.find("--fidelity 'rtl': expected fast or pe"), std::string::npos);
  CommandResult batch = run_npusim("run --hw edge --workload mnist-cnn --batch 0");
  EXPECT_EQ(batch.exit_code, 2);
  EXPECT_NE(batch.err.find("--batch 0: expected 1 to 65536"), std::string::npos);
  CommandResult nonnum = run_npusim("run --hw edge --workload mnist-cnn --batch two");
  EXPECT_EQ(nonnum.exit_code, 2);
  CommandResult command = run_npusim("simulate");
  EXPECT_EQ(command.exit_code, 2);
  EXPECT_NE(command.err.find("npusim: unknown command 'simulate'"), std::string::npos);
  CommandResult preset = run_npusim("validate --hw tpu-v7");
  EXPECT_EQ(preset.exit_code, 2);
  EXPECT_NE(preset.err.find("--hw 'tpu-v7': no such file and no such preset"), std::string::npos);
}

TEST(CliErrors, EveryCommandHasHelp) {
  for (const char* cmd : {"run", "compile", "validate", "presets", "zoo"}) {
    CommandResult r = run_npusim(std::string(cmd) + " --help");
    EXPECT_EQ(r.exit_code, 0) << cmd;
    EXPECT_NE(r.out.find(std::string("usage: npusim ") + cmd), std::string::npos) << r.out;
  }
  CommandResult top = run_npusim("--help");
  EXPECT_EQ(top.exit_code, 0);
  EXPECT_NE(top.out.find("commands:"), std::string::npos);
}

}  // namespace
