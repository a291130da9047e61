// Pipeline parallelism end to end (docs/multicore.md, "Pipeline parallelism"): mnist-cnn streamed
// through 2 and 4 cores in micro-batches gives every tensor of one core, bit for bit; the stage
// outputs kept on chip travel over the interconnect (stats, report, trace); `npusim compile`
// prints the stages; bad flags exit with 2.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "run_npusim.hpp"

namespace {

using nlohmann::json;

// A chip of `cores` small int8 cores (16x16 arrays) on a fast off-chip memory.
std::filesystem::path chip_file(int cores, const std::string& topology = "ring") {
  const auto path = fresh_dir("pipeline-hw-" + std::to_string(cores) + topology + ".json");
  std::ofstream(path) << R"({"schema_version": 1, "name": "pp", "clock_mhz": 1000, "cores": )"
                      << cores << R"(, "interconnect": {"topology": ")" << topology
                      << R"(", "link_bytes_per_cycle": 32, "hop_latency_cycles": 3},
    "matrix_unit": {"rows": 16, "cols": 16},
    "memory": {"model": "simple", "bandwidth_gbps": 1000, "latency_ns": 20}})";
  return path;
}

struct PipelineRun {
  json stats;
  std::map<std::string, std::string> tensors;  // every layer's saved tensor, by file name
  std::string report;
  json trace;
};

PipelineRun run_on(int cores, const std::string& parallel, const std::string& extra = "",
                   const std::string& topology = "ring") {
  const auto hw = chip_file(cores, topology);
  const auto dir = fresh_dir("pipeline-" + std::to_string(cores) + parallel);
  const auto saved = dir / "tensors";
  CommandResult r =
      run_npusim("run --hw " + hw.string() + " --workload mnist-cnn --batch 8 --parallel " +
                 parallel + " " + extra + " --out " + dir.string() + " --save-outputs " +
                 saved.string() + " --save-intermediates --trace " + dir.string());
  PipelineRun out;
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  if (r.exit_code == 0) {
    out.stats = json::parse(slurp(dir / "stats.json"));
    out.report = slurp(dir / "report.txt");
    out.trace = json::parse(slurp(dir / "trace.json"));
    for (const auto& e : std::filesystem::directory_iterator(saved)) {
      out.tensors[e.path().filename().string()] = slurp(e.path());
    }
  }
  std::filesystem::remove_all(dir);
  std::filesystem::remove(hw);
  return out;
}

// COPY slices per trace thread name.
std::map<std::string, int> copies_by_track(const json& trace) {
  std::map<std::pair<int, int>, std::string> names;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") {
      names[{e["pid"].get<int>(), e["tid"].get<int>()}] = e["args"]["name"].get<std::string>();
    }
  }
  std::map<std::string, int> out;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X" && e["name"] == "COPY") ++out[names[{e["pid"].get<int>(), e["tid"]}]];
  }
  return out;
}

// mnist-cnn at batch 8, one image per micro-batch. On 2 cores the stages are conv1 (+ pool1,
// flatten) and fc1 .. probs; pool1 (13 x 13 x 32 = 5408 bytes per image) stays in the unified
// buffer, so each micro-batch sends 5408 bytes from core 0 to core 1: 8 copies, 43264 bytes. On 4
// cores, fc1's and fc2's outputs (128 and 10 bytes per image, resident) travel on too.
TEST(Pipeline, MnistCnnOnTwoAndFourCoresIsBitExactWithCopiesOverTheLinks) {
  const PipelineRun one = run_on(1, "data");
  ASSERT_FALSE(one.tensors.empty());
  EXPECT_TRUE(one.stats["functional_check"]["bit_exact"].get<bool>());
  for (int cores : {2, 4}) {
    const PipelineRun p = run_on(cores, "pipeline", "", cores == 4 ? "crossbar" : "ring");
    ASSERT_FALSE(p.stats.is_null()) << cores;
    EXPECT_TRUE(p.stats["functional_check"]["bit_exact"].get<bool>()) << cores << " cores";
    EXPECT_TRUE(p.tensors == one.tensors) << cores << " cores: tensors differ";
    EXPECT_EQ(p.stats["chip"]["cores_used"].get<int>(), cores);
    EXPECT_EQ(p.stats["macs"], one.stats["macs"]);
    const json& ic = p.stats["interconnect"];
    const uint64_t expected = cores == 2 ? 8 * 5408 : 8 * (5408 + 128 + 10);
    EXPECT_EQ(ic["bytes"].get<uint64_t>(), expected) << cores;
    EXPECT_EQ(ic["copies"].get<uint64_t>(), cores == 2 ? 8u : 24u) << cores;
    uint64_t sent = 0;
    for (const auto& c : p.stats["cores"]) sent += c["link_bytes"].get<uint64_t>();
    EXPECT_EQ(sent, expected);
    EXPECT_GT(ic["link_utilization"].get<double>(), 0.0);
    EXPECT_EQ(p.stats["events"]["link_bytes"].get<uint64_t>(), expected);
    // The copies are on the sending cores' link tracks.
    const auto tracks = copies_by_track(p.trace);
    EXPECT_EQ(tracks.at("core0 link"), 8) << cores;
    if (cores == 4) {
      EXPECT_EQ(tracks.at("core2 link"), 8);
    }
    EXPECT_NE(p.report.find("pipeline: batch 8 in 8 micro-batches of 1"), std::string::npos)
        << p.report;
    EXPECT_NE(p.report.find(fmt::format("interconnect       {} B in", expected)), std::string::npos)
        << p.report;
  }
}

// Micro-batches of 3 images (3 + 3 + 2): two compilations, still bit-exact.
TEST(Pipeline, UnevenMicroBatchesAreBitExact) {
  const PipelineRun one = run_on(1, "data");
  const PipelineRun p = run_on(2, "pipeline", "--micro-batch 3");
  ASSERT_FALSE(p.stats.is_null());
  EXPECT_TRUE(p.stats["functional_check"]["bit_exact"].get<bool>());
  EXPECT_TRUE(p.tensors == one.tensors);
  EXPECT_EQ(p.stats["interconnect"]["copies"].get<uint64_t>(), 3u);
  EXPECT_EQ(p.stats["interconnect"]["bytes"].get<uint64_t>(), 8u * 5408);
}

TEST(Pipeline, CompilePrintsTheStages) {
  const auto hw = chip_file(2);
  CommandResult r = run_npusim("compile --hw " + hw.string() +
                               " --workload mnist-cnn --batch 4 --parallel pipeline "
                               "--micro-batch 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("; parallel: pipeline: batch 4 in 2 micro-batches of 2 over 2 cores"),
            std::string::npos)
      << r.out.substr(0, 600);
  EXPECT_NE(r.out.find(";   stage 0 on core 0: layers conv1 .. flatten"), std::string::npos);
  EXPECT_NE(r.out.find(";   stage 1 on core 1: layers fc1 .. probs"), std::string::npos);
  EXPECT_NE(r.out.find("link      COPY      core1.ub["), std::string::npos);
  std::filesystem::remove(hw);
}

// --trace-layers fc1 selects fc1 of every micro-batch; conv1@mb2 one micro-batch's conv1.
TEST(Pipeline, TraceLayersSelectMicroBatches) {
  const auto hw = chip_file(2);
  const auto dir = fresh_dir("pipeline-trace-layers");
  CommandResult r = run_npusim("run --hw " + hw.string() +
                               " --workload mnist-cnn --batch 4 --parallel pipeline --trace " +
                               dir.string() + " --trace-layers fc1,conv1@mb2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::set<std::string> layers;
  const json trace = json::parse(slurp(dir / "trace.json"));
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X" && e.contains("args") && e["args"].contains("layer")) {
      layers.insert(e["args"]["layer"].get<std::string>());
    }
  }
  EXPECT_EQ(layers,
            (std::set<std::string>{"conv1@mb2", "fc1@mb0", "fc1@mb1", "fc1@mb2", "fc1@mb3"}));
  std::filesystem::remove_all(dir);
  std::filesystem::remove(hw);
}

TEST(Pipeline, BadFlagsExitWith2) {
  const std::string base = "run --hw tpu-v4-like --workload mnist-cnn --values off ";
  CommandResult r = run_npusim(base + "--parallel pipeline --micro-batch 0");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(r.err.find("--micro-batch 0: expected at least 1 image"), std::string::npos) << r.err;
  r = run_npusim(base + "--parallel data --micro-batch 2");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--micro-batch 2: micro-batches are for --parallel pipeline"),
            std::string::npos)
      << r.err;
  r = run_npusim(base + "--parallel pipeline --micro-batch two");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("micro-batch"), std::string::npos) << r.err;
}

}  // namespace
