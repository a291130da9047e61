// Every zoo network on every preset, end to end from the CLI: outputs bit-exact against the
// reference, stats.json complete and consistent.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "fidelity_compare.hpp"
#include "run_npusim.hpp"

namespace {

using nlohmann::json;

struct Case {
  const char* hw;
  const char* workload;
  uint64_t macs;
};

class ZooEndToEnd : public testing::TestWithParam<Case> {};

TEST_P(ZooEndToEnd, RunsBitExactWithCompleteStats) {
  const Case c = GetParam();
  auto dir = fresh_dir(std::string(c.hw) + "-" + c.workload);
  CommandResult r = run_npusim(std::string("run --hw ") + c.hw + " --workload " + c.workload +
                               " --out " + dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("outputs match the reference bit for bit"), std::string::npos) << r.out;
  json stats = json::parse(slurp(dir / "stats.json"));
  EXPECT_TRUE(stats["functional_check"]["bit_exact"].get<bool>());
  EXPECT_EQ(stats["functional_check"]["max_abs_error"], 0);
  EXPECT_EQ(stats["macs"].get<uint64_t>(), c.macs);
  json hw = json::parse(slurp(dir / "config.resolved.json"));
  const double peak =
      hw["matrix_unit"]["rows"].get<double>() * hw["matrix_unit"]["cols"].get<double>();
  const auto cycles = stats["total_cycles"].get<uint64_t>();
  // No schedule beats the array's peak rate.
  EXPECT_GE(static_cast<double>(cycles), c.macs / peak);
  EXPECT_NEAR(stats["latency_s"].get<double>(), cycles / (hw["clock_mhz"].get<double>() * 1e6),
              1e-12);
  EXPECT_NEAR(stats["mxu_utilization"].get<double>(), c.macs / (peak * cycles), 1e-9);
  uint64_t layer_macs = 0;
  for (const auto& l : stats["layers"]) {
    layer_macs += l["macs"].get<uint64_t>();
    EXPECT_LE(l["end_cycle"].get<uint64_t>(), cycles);
    EXPECT_EQ(l["cycles"], l["end_cycle"].get<uint64_t>() - l["start_cycle"].get<uint64_t>());
  }
  EXPECT_EQ(layer_macs, c.macs);
  EXPECT_TRUE(std::filesystem::exists(dir / "report.txt"));
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(
    Zoo, ZooEndToEnd,
    testing::Values(Case{"tpu-v1", "mnist-cnn", 888192}, Case{"edge", "mnist-cnn", 888192},
                    Case{"tpu-v1", "mlp-1000", 64000000}, Case{"edge", "mlp-1000", 64000000}),
    [](const testing::TestParamInfo<Case>& param_info) {
      std::string name = std::string(param_info.param.hw) + "_" + param_info.param.workload;
      for (auto& ch : name) {
        if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
      }
      return name;
    });

TEST(EndToEnd, PeFidelityGivesTheSameCyclesAsFast) {
  auto fast_dir = fresh_dir("fast"), pe_dir = fresh_dir("pe");
  ASSERT_EQ(run_npusim("run --hw edge --workload mnist-cnn --out " + fast_dir.string()).exit_code,
            0);
  CommandResult pe =
      run_npusim("run --hw edge --workload mnist-cnn --fidelity pe --out " + pe_dir.string());
  ASSERT_EQ(pe.exit_code, 0) << pe.err;
  json fast = json::parse(slurp(fast_dir / "stats.json"));
  json slow = json::parse(slurp(pe_dir / "stats.json"));
  EXPECT_EQ(fast["total_cycles"], slow["total_cycles"]);
  EXPECT_EQ(slow["fidelity"], "pe");
  EXPECT_TRUE(slow["functional_check"]["bit_exact"].get<bool>());
  for (size_t i = 0; i < fast["layers"].size(); ++i) {
    EXPECT_EQ(fast["layers"][i]["cycles"], slow["layers"][i]["cycles"]);
  }
}

TEST(EndToEnd, BatchScalesWorkAndSeedChangesValuesNotTiming) {
  CommandResult b1 = run_npusim("run --hw edge --workload mlp-1000 --batch 1");
  CommandResult b4 = run_npusim("run --hw edge --workload mlp-1000 --batch 4 --seed 9");
  ASSERT_EQ(b1.exit_code, 0) << b1.err;
  ASSERT_EQ(b4.exit_code, 0) << b4.err;
  EXPECT_NE(b1.out.find("MACs               1000000"), std::string::npos) << b1.out;
  EXPECT_NE(b4.out.find("MACs               4000000"), std::string::npos) << b4.out;
}

TEST(EndToEnd, CompilePrintsTiledAssembly) {
  CommandResult r = run_npusim("compile --hw edge --workload mnist-cnn");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // pool1 runs in conv1's epilogue (compiler/passes/fusion.hpp): its MAXPOOL is in conv1's code.
  for (const char* s : {"; ---- layer conv1 (conv2d, fused: pool1)", "; tiling:", "DMA_LOAD",
                        "MATMUL", "REQUANT", "MAXPOOL", "SOFTMAX", "DMA_STORE", "wait("}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << s;
  }
  auto file = fresh_dir("prog") += ".asm";
  ASSERT_EQ(run_npusim("compile --hw edge --workload mnist-cnn -o " + file.string()).exit_code, 0);
  EXPECT_EQ(slurp(file), r.out);
  std::filesystem::remove(file);
}

TEST(EndToEnd, ListsPresetsAndZoo) {
  CommandResult p = run_npusim("presets");
  EXPECT_EQ(p.exit_code, 0);
  EXPECT_NE(
      p.out.find("tpu-v1       256x256 ws systolic array x1 at 700 MHz\n"
                 "             peak: 91.75 TOPS int8, 91.75 TFLOPS bf16 (65536 MACs per cycle)\n"
                 "             buffers: unified 24 MiB, weight 256 KiB, accumulators 4 MiB\n"
                 "             off-chip: 34.1 GB/s (ddr3-2133, 2 channels), 8 GiB\n"),
      std::string::npos)
      << p.out;
  EXPECT_NE(p.out.find("edge         32x32 ws systolic array x1 at 800 MHz"), std::string::npos)
      << p.out;
  // TPU v4 (ISCA 2023): 275 TFLOPS bf16 per chip of two cores; Ascend 910: 256 TFLOPS / 32 cores.
  EXPECT_NE(p.out.find("tpu-v4-like  128x128 ws systolic array x4 at 1050 MHz, 2 cores\n"
                       "             peak: 275.25 TOPS int8, 275.25 TFLOPS bf16 (131072 MACs per "
                       "cycle, 2 cores of 65536 MACs per cycle)\n"
                       "             interconnect: ring, 64 B/cycle per link, 4 cycles per hop\n"),
            std::string::npos)
      << p.out;
  EXPECT_NE(p.out.find("tpu-v4-like-core 128x128 ws systolic array x4 at 1050 MHz\n"
                       "             peak: 137.63 TOPS int8, 137.63 TFLOPS bf16"),
            std::string::npos)
      << p.out;
  EXPECT_NE(
      p.out.find("ascend-910-like 16x16x16 cube x1 at 976.5625 MHz, 32 cores\n"
                 "             peak: 256.00 TOPS int8, 256.00 TFLOPS bf16 (131072 MACs per "
                 "cycle, 32 cores of 4096 MACs per cycle)\n"
                 "             interconnect: crossbar, 256 B/cycle per link, 4 cycles per hop\n"),
      std::string::npos)
      << p.out;
  EXPECT_NE(p.out.find("ascend-like  16x16x16 cube x1 at 976.5625 MHz\n"
                       "             peak: 8.00 TOPS int8, 8.00 TFLOPS bf16 (4096 MACs per cycle)"),
            std::string::npos)
      << p.out;
  // scripts/zoo_runs.sh takes the first word of the lines that start with a lowercase letter.
  std::vector<std::string> names;
  std::istringstream lines(p.out);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && std::islower(static_cast<unsigned char>(line[0]))) {
      names.push_back(line.substr(0, line.find(' ')));
    }
  }
  EXPECT_EQ(names, (std::vector<std::string>{"ascend-910-like", "ascend-like", "edge", "tpu-v1-hbm",
                                             "tpu-v1", "tpu-v4-like-core", "tpu-v4-like-fp8",
                                             "tpu-v4-like"}));
  CommandResult z = run_npusim("zoo");
  EXPECT_EQ(z.exit_code, 0);
  EXPECT_NE(z.out.find("mnist-cnn"), std::string::npos);
  EXPECT_NE(z.out.find("mlp-1000"), std::string::npos);
}

// presets --show prints the description a run resolves (what scripts/dse.py edits by JSON pointer).
TEST(EndToEnd, ShowsAPresetAsTheResolvedDescription) {
  CommandResult s = run_npusim("presets --show edge");
  ASSERT_EQ(s.exit_code, 0) << s.err;
  auto dir = fresh_dir("presets-show");
  ASSERT_EQ(run_npusim("run --hw edge --workload mnist-cnn --out " + dir.string()).exit_code, 0);
  EXPECT_EQ(json::parse(s.out), json::parse(slurp(dir / "config.resolved.json")));
  std::filesystem::remove_all(dir);
  CommandResult bad = run_npusim("presets --show no-such-chip");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--show 'no-such-chip': no such file and no such preset"),
            std::string::npos)
      << bad.err;
}

}  // namespace

namespace {

// Every operator, on every dataflow, with one or two arrays: bit-exact in int8, within the stated
// tolerance in bf16, and fast and pe fidelity agree on every cycle.
struct CoverageCase {
  const char* hw;  // preset or file in tests/e2e/data
  const char* workload;
  const char* dtype;
};
void PrintTo(const CoverageCase& c, std::ostream* os) {
  *os << c.workload << " on " << c.hw << " in " << c.dtype;
}

class OperatorCoverage : public testing::TestWithParam<CoverageCase> {};

std::string data_path(const std::string& name) {
  return name.find(".json") == std::string::npos ? name : std::string(NPUSIM_E2E_DATA) + "/" + name;
}

TEST_P(OperatorCoverage, MatchesTheReference) {
  const CoverageCase c = GetParam();
  auto dir = fresh_dir(std::string("cov-") + c.workload + c.dtype + c.hw);
  const std::string args = "run --hw " + data_path(c.hw) + " --workload " + data_path(c.workload) +
                           " --dtype " + c.dtype;
  CommandResult r = run_npusim(args + " --out " + dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  json stats = json::parse(slurp(dir / "stats.json"));
  EXPECT_EQ(stats["dtype"], c.dtype);
  EXPECT_TRUE(stats["functional_check"]["within_tolerance"].get<bool>());
  if (std::string(c.dtype) == "int8") {
    EXPECT_TRUE(stats["functional_check"]["bit_exact"].get<bool>());
  } else {
    EXPECT_LE(stats["functional_check"]["max_relative_error"].get<double>(), 0.03);
  }
  expect_pe_run_agrees(args, stats, std::string("cov-") + c.workload + c.dtype + c.hw);
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(AllOps, OperatorCoverage,
                         testing::Values(CoverageCase{"edge", "all_ops.json", "int8"},
                                         CoverageCase{"edge_os.json", "all_ops.json", "int8"},
                                         CoverageCase{"edge_is.json", "all_ops.json", "int8"},
                                         CoverageCase{"edge", "conv3d.json", "int8"},
                                         CoverageCase{"edge_is.json", "conv3d.json", "int8"},
                                         CoverageCase{"edge", "all_ops.json", "bf16"},
                                         CoverageCase{"edge_os.json", "all_ops.json", "bf16"},
                                         CoverageCase{"edge", "conv3d.json", "bf16"},
                                         CoverageCase{"edge", "mlp-1000", "bf16"}),
                         [](const testing::TestParamInfo<CoverageCase>& param_info) {
                           std::string name = std::string(param_info.param.workload) + "_" +
                                              param_info.param.hw + "_" + param_info.param.dtype;
                           for (auto& ch : name) {
                             if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

TEST(EndToEnd, SavedOutputsAreTheRealValuesOfTheRun) {
  auto dir = fresh_dir("saved");
  CommandResult r = run_npusim("run --hw edge --workload mnist-cnn --save-outputs " + dir.string() +
                               " --save-intermediates");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* name : {"probs", "pool1", "fc1", "fc2"}) {
    EXPECT_TRUE(std::filesystem::exists(dir / (std::string(name) + ".npy"))) << name;
  }
  // conv1's output is pooled in its epilogue (compiler/passes/fusion.hpp): never stored.
  EXPECT_FALSE(std::filesystem::exists(dir / "conv1.npy"));
  // The probabilities are on scale 1/127 and sum to about 1.
  const std::string probs = slurp(dir / "probs.npy");
  EXPECT_EQ(probs.substr(1, 5), "NUMPY");
  CommandResult bad = run_npusim("run --hw edge --workload mnist-cnn --save-intermediates");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--save-intermediates needs --save-outputs DIR"), std::string::npos);
  CommandResult dtype = run_npusim("run --hw edge --workload mnist-cnn --dtype fp8");
  EXPECT_EQ(dtype.exit_code, 2);
  EXPECT_NE(dtype.err.find("--dtype 'fp8': expected int8, bf16, fp8-e4m3 or fp8-e5m2"),
            std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
