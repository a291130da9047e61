// The bf16 runs issue 13's users reported as FUNCTIONAL MISMATCH against the whole-graph
// reference with a fixed 3 % tolerance, on hardware built from configs/hw/tpu-v1.json. Each is
// rounding order (the array sums in its own fp32 order, the reference in index order, and one
// bf16 step in a layer moves every later one; docs/reliability.md, "The bf16 cases of issue 13"):
// every layer is within its bound on its own simulated inputs, while the whole-graph error
// reaches or passes 3 %. Labelled "slow" with the zoo runs: ResNet-50 at batch 4 and VGG-16.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "run_npusim.hpp"

namespace {

using nlohmann::json;

// tpu-v1.json as bf16 hardware with `count` arrays of rows x cols in `dataflow`.
std::string hardware(const std::string& name, int rows, int cols, const std::string& dataflow,
                     int count, uint64_t unified_buffer, const json& memory) {
  json hw = json::parse(slurp(std::string(NPUSIM_SOURCE_DIR) + "/configs/hw/tpu-v1.json"));
  hw["name"] = name;
  hw["matrix_unit"]["rows"] = rows;
  hw["matrix_unit"]["cols"] = cols;
  hw["matrix_unit"]["dataflow"] = dataflow;
  hw["matrix_unit"]["count"] = count;
  hw["buffers"]["unified_buffer"]["capacity_bytes"] = unified_buffer;
  hw["memory"] = memory;
  hw["data_types"] = {{"activation", "bf16"}, {"weight", "bf16"}, {"accumulator", "fp32"}};
  const auto dir = fresh_dir("bf16-hw-" + name);
  std::filesystem::create_directories(dir);
  const std::string path = (dir / (name + ".json")).string();
  std::ofstream(path) << hw.dump(2);
  return path;
}

// Runs the network and returns functional_check; every layer within its bound.
json run_checked(const std::string& hw, const std::string& network, int batch) {
  auto dir = fresh_dir("bf16-run-" + network + std::to_string(batch));
  CommandResult r =
      run_npusim("run --hw " + hw + " --workload " + network + " --dtype bf16 --batch " +
                 std::to_string(batch) + " --out " + dir.string());
  EXPECT_EQ(r.exit_code, 0) << hw << " " << network << ": " << r.err;
  if (r.exit_code != 0) return json::object();
  const json c = json::parse(slurp(dir / "stats.json"))["functional_check"];
  EXPECT_TRUE(c["within_tolerance"].get<bool>()) << hw << " " << network << ": " << c.dump();
  EXPECT_EQ(c["bound_exceeded"].get<uint64_t>(), 0u) << c.dump();
  EXPECT_LE(c["max_bound_ratio"].get<double>(), 1.0);
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(std::filesystem::path(hw).parent_path());
  return c;
}

const json kHbm2x4 = {{"model", "dram"}, {"preset", "hbm2"}, {"channels", 4}};

// Two (and one) 128x128 output-stationary arrays, 8 MiB unified buffer, four hbm2 channels:
// 757 of 4000 outputs and a relative error of 0.115 against the whole graph.
TEST(Bf16Cases, ResNet50Batch4OnOutputStationaryArrays) {
  for (int count : {2, 1}) {
    const std::string hw =
        hardware("r50-os" + std::to_string(count), 128, 128, "os", count, 8u << 20, kHbm2x4);
    const json c = run_checked(hw, "resnet50", 4);
    if (count == 2 && !c.empty()) {
      // Against the whole graph (the old verdict) the error depends on the summation order the
      // tiling gives: 0.115 when the issue was written, 0.0297 with activations on chip. Recorded,
      // not asserted: the per-layer bound above is the verdict.
      RecordProperty("whole_graph_relative_error",
                     std::to_string(c["max_relative_error"].get<double>()));
    }
  }
  const std::string ws = hardware("r50-ws2", 128, 128, "ws", 2, 8u << 20, kHbm2x4);
  run_checked(ws, "resnet50", 4);
}

// VGG-16 on the same chip, each dataflow (0.022 to 0.03 against the whole graph).
TEST(Bf16Cases, Vgg16OnEveryDataflow) {
  for (const char* dataflow : {"os", "ws", "is"}) {
    const std::string hw =
        hardware(std::string("vgg-") + dataflow, 128, 128, dataflow, 2, 8u << 20, kHbm2x4);
    run_checked(hw, "vgg16", 1);
  }
}

}  // namespace
