// Multi-core chips end to end (docs/multicore.md): data parallelism gives the values of one core,
// bit for bit, on 1, 2 and 4 cores; on a compute-bound network two cores take about half the
// compute cycles; stats.json, report.txt and the trace show every core; bad `cores` and
// `interconnect` keys and a bad --parallel exit with 2.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "run_npusim.hpp"

namespace {

using nlohmann::json;

// A chip of `cores` copies of a small int8 core whose off-chip memory is fast enough that the
// matrix unit bounds the layers of the small zoo networks (a 16x16 array against 1 TB/s).
std::filesystem::path chip_file(int cores, const std::string& extra = "") {
  const auto path = fresh_dir("multicore-hw-" + std::to_string(cores) + ".json");
  std::ofstream(path) << R"({"schema_version": 1, "name": "mc", "clock_mhz": 1000, "cores": )"
                      << cores << extra << R"(, "matrix_unit": {"rows": 16, "cols": 16},
    "memory": {"model": "simple", "bandwidth_gbps": 1000, "latency_ns": 20}})";
  return path;
}

struct CoreRun {
  json stats;
  std::map<std::string, std::string> tensors;  // every layer's saved tensor, by file name
  std::string report;
};

CoreRun run_on(int cores, const std::string& network, int batch) {
  const auto hw = chip_file(cores);
  const auto dir = fresh_dir("multicore-" + std::filesystem::path(network).stem().string() +
                             std::to_string(cores));
  const auto saved = dir / "tensors";
  CommandResult r = run_npusim("run --hw " + hw.string() + " --workload " + network + " --batch " +
                               std::to_string(batch) + " --parallel data --out " + dir.string() +
                               " --save-outputs " + saved.string() + " --save-intermediates");
  CoreRun out;
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  if (r.exit_code == 0) {
    out.stats = json::parse(slurp(dir / "stats.json"));
    out.report = slurp(dir / "report.txt");
    for (const auto& e : std::filesystem::directory_iterator(saved)) {
      out.tensors[e.path().filename().string()] = slurp(e.path());
    }
  }
  std::filesystem::remove_all(dir);
  std::filesystem::remove(hw);
  return out;
}

uint64_t max_core(const json& stats, const char* key) {
  uint64_t m = 0;
  for (const auto& c : stats["cores"]) m = std::max(m, c[key].get<uint64_t>());
  return m;
}

// Two cores take each half of a batch of 8 of a compute-bound network (three 3x3 convolutions
// over 32x32 images on a 16x16 array fed at 1 TB/s): the matrix work per core halves, and so,
// within the fill and drain of the first and last layers, does the run; four cores take a
// quarter. Tolerance: each core's compute cycles within 2 % of 1/N of one core's, the run's
// cycles within 2 % below and 10 % above 1/N of one core's.
TEST(Multicore, TwoAndFourCoresDivideTheComputeCyclesWithTheSameValues) {
  const std::string net = std::string(NPUSIM_E2E_DATA) + "/conv_stack.json";
  const CoreRun one = run_on(1, net, 8);
  ASSERT_FALSE(one.stats.is_null());
  EXPECT_TRUE(one.stats["functional_check"]["bit_exact"].get<bool>());
  for (int cores : {2, 4}) {
    const CoreRun many = run_on(cores, net, 8);
    ASSERT_FALSE(many.stats.is_null());
    EXPECT_TRUE(many.stats["functional_check"]["bit_exact"].get<bool>());
    EXPECT_TRUE(many.tensors == one.tensors) << cores << " cores: tensors differ";
    EXPECT_EQ(many.stats["chip"]["cores_used"].get<int>(), cores);
    ASSERT_EQ(many.stats["cores"].size(), size_t(cores));
    EXPECT_EQ(many.stats["cores"][0]["macs"], many.stats["cores"][cores - 1]["macs"]);
    EXPECT_EQ(many.stats["macs"], one.stats["macs"]);
    const double compute = double(max_core(many.stats, "mxu_busy_cycles")) * cores /
                           double(one.stats["units"]["mxu_busy_cycles"].get<uint64_t>());
    EXPECT_NEAR(compute, 1.0, 0.02) << cores << " cores";
    const double total = double(many.stats["total_cycles"].get<uint64_t>()) * cores /
                         double(one.stats["total_cycles"].get<uint64_t>());
    EXPECT_GE(total, 0.98) << cores << " cores";
    EXPECT_LE(total, 1.10) << cores << " cores";
    EXPECT_LT(many.stats["chip"]["load_imbalance"].get<double>(), 1.05);
    EXPECT_NE(many.report.find("load imbalance"), std::string::npos) << many.report;
    EXPECT_NE(many.report.find("core 1 "), std::string::npos) << many.report;
  }
}

struct Network {
  const char* name;
  int batch;  // 3: uneven shares (2 + 1 on two cores, 1 + 1 + 1 on four)
};
void PrintTo(const Network& n, std::ostream* os) { *os << n.name << " batch " << n.batch; }

class SmallZooOnCores : public testing::TestWithParam<Network> {};

// The same tensors, every layer's, on 1, 2 and 4 cores, each run bit-exact against the reference.
TEST_P(SmallZooOnCores, EveryTensorIsTheSameOnOneTwoAndFourCores) {
  const Network n = GetParam();
  const CoreRun one = run_on(1, n.name, n.batch);
  ASSERT_FALSE(one.tensors.empty());
  for (int cores : {2, 4}) {
    const CoreRun many = run_on(cores, n.name, n.batch);
    EXPECT_TRUE(many.stats["functional_check"]["bit_exact"].get<bool>()) << cores << " cores";
    EXPECT_EQ(many.stats["chip"]["cores_used"].get<int>(), std::min(cores, n.batch));
    EXPECT_TRUE(many.tensors == one.tensors) << cores << " cores: tensors differ";
  }
}

INSTANTIATE_TEST_SUITE_P(Zoo, SmallZooOnCores,
                         testing::Values(Network{"mnist-cnn", 4}, Network{"lenet5", 3},
                                         Network{"mlp-1000", 4}),
                         [](const testing::TestParamInfo<Network>& p) {
                           std::string name =
                               std::string(p.param.name) + "_b" + std::to_string(p.param.batch);
                           for (auto& ch : name) {
                             if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

TEST(Multicore, CompilePrintsTheChoice) {
  CommandResult data = run_npusim("compile --hw tpu-v4-like --workload mnist-cnn --batch 3");
  ASSERT_EQ(data.exit_code, 0) << data.err;
  EXPECT_NE(data.out.find("; parallel: data parallel: batch 3 over 2 cores (2+1 images)"),
            std::string::npos)
      << data.out.substr(0, 400);
  EXPECT_NE(data.out.find("\ncore1 "), std::string::npos);
  CommandResult single = run_npusim("compile --hw tpu-v4-like --workload mnist-cnn --batch 1");
  ASSERT_EQ(single.exit_code, 0) << single.err;
  EXPECT_NE(single.out.find("; parallel: single core (auto: batch 1 on a chip of 2 cores)"),
            std::string::npos);
  CommandResult one_core = run_npusim("compile --hw tpu-v4-like-core --workload mnist-cnn");
  ASSERT_EQ(one_core.exit_code, 0) << one_core.err;
  EXPECT_EQ(one_core.out.find("; parallel:"), std::string::npos);
}

// The ascend-910-like preset: a chip of 32 Da Vinci cores. A batch of 32 gives every core one
// image; the values are the reference's bit for bit and each core's row reports its own work.
TEST(Multicore, Ascend910ChipRunsABatchOnAll32Cores) {
  const auto dir = fresh_dir("multicore-ascend-910");
  CommandResult r =
      run_npusim("run --hw ascend-910-like --workload mnist-cnn --batch 32 --dtype int8 --out " +
                 dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const json stats = json::parse(slurp(dir / "stats.json"));
  EXPECT_EQ(stats["chip"]["cores"], 32);
  EXPECT_EQ(stats["chip"]["cores_used"], 32);
  EXPECT_DOUBLE_EQ(stats["chip"]["peak_macs_per_cycle"].get<double>(), 32.0 * 4096);
  EXPECT_TRUE(stats["functional_check"]["bit_exact"].get<bool>());
  ASSERT_EQ(stats["cores"].size(), 32u);
  uint64_t macs = 0;
  for (const auto& c : stats["cores"]) {
    EXPECT_GT(c["mxu_busy_cycles"].get<uint64_t>(), 0u) << c;
    macs += c["macs"].get<uint64_t>();
  }
  // One image per core: the cores' MACs are 32 equal shares of the chip's.
  EXPECT_EQ(stats["cores"][0]["macs"].get<uint64_t>() * 32, macs);
  std::filesystem::remove_all(dir);
}

TEST(Multicore, TheTraceHasAProcessPerCore) {
  const auto hw = chip_file(2);
  const auto dir = fresh_dir("multicore-trace");
  CommandResult r = run_npusim("run --hw " + hw.string() +
                               " --workload mnist-cnn --batch 2 --trace " + dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json trace = json::parse(slurp(dir / "trace.json"));
  std::map<int, std::string> processes;
  std::map<int, std::set<std::string>> threads;
  std::set<int> slices;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") {
      processes[e["pid"].get<int>()] = e["args"]["name"].get<std::string>();
    }
    if (e["ph"] == "M" && e["name"] == "thread_name") {
      threads[e["pid"].get<int>()].insert(e["args"]["name"].get<std::string>());
    }
    if (e["ph"] == "X" && e["cat"] == "matrix") slices.insert(e["pid"].get<int>());
  }
  ASSERT_EQ(processes.size(), 3u);  // the chip (memory, counters) and two cores
  EXPECT_EQ(processes[2], "core 0");
  EXPECT_EQ(processes[3], "core 1");
  EXPECT_TRUE(threads[3].count("core1 matrix_unit0"));
  EXPECT_EQ(slices, (std::set<int>{2, 3}));
  std::filesystem::remove_all(dir);
  std::filesystem::remove(hw);
}

TEST(Multicore, BadCoresAndInterconnectKeysExitWith2) {
  const auto hw = chip_file(
      0, R"(, "interconnect": {"topology": "mesh", "link_bytes_per_cycle": 0, "hops": 2})");
  CommandResult r = run_npusim("run --hw " + hw.string() + " --workload mnist-cnn");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.out.empty()) << r.out;
  for (const char* pointer : {"/cores", "/interconnect/topology",
                              "/interconnect/link_bytes_per_cycle", "/interconnect/hops"}) {
    EXPECT_NE(r.err.find(hw.string() + ": " + pointer), std::string::npos)
        << pointer << " in: " << r.err;
  }
  std::filesystem::remove(hw);
  const auto many = chip_file(65);
  r = run_npusim("validate --hw " + many.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/cores"), std::string::npos) << r.err;
  std::filesystem::remove(many);
}

TEST(Multicore, BadParallelFlagExitsWith2) {
  CommandResult r =
      run_npusim("run --hw tpu-v4-like --workload mnist-cnn --parallel pipe --values off");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--parallel 'pipe': expected data, pipeline or auto"), std::string::npos)
      << r.err;
}

}  // namespace
