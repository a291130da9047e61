// Epilogue fusion end to end (compiler/passes/fusion.hpp): a workload with every fusion case
// (tests/e2e/data/fusion.json) runs bit-exact in int8 and within tolerance in bf16 on hardware
// whose buffers split the fused layers into many spatial and channel blocks, in both fidelities;
// stats.json and `npusim compile` name what was fused.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "fidelity_compare.hpp"
#include "run_npusim.hpp"

namespace {

using nlohmann::json;

std::string data(const std::string& name) { return std::string(NPUSIM_E2E_DATA) + "/" + name; }

struct FusionCase {
  const char* hw;
  const char* dtype;
};

class EpilogueFusionRuns : public testing::TestWithParam<FusionCase> {};

TEST_P(EpilogueFusionRuns, MatchTheReferenceInBothFidelities) {
  const FusionCase c = GetParam();
  const std::string hw = std::string(c.hw).find(".json") != std::string::npos ? data(c.hw) : c.hw;
  const std::string args =
      "run --hw " + hw + " --workload " + data("fusion.json") + " --dtype " + c.dtype;
  auto dir = fresh_dir(std::string("fusion-") + c.dtype + c.hw);
  CommandResult r = run_npusim(args + " --out " + dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  json stats = json::parse(slurp(dir / "stats.json"));
  EXPECT_TRUE(stats["functional_check"]["within_tolerance"].get<bool>());
  if (std::string(c.dtype) == "int8") {
    EXPECT_TRUE(stats["functional_check"]["bit_exact"].get<bool>());
  }
  // The fused layers take the add's / pool's place and name them; the rest stay layers.
  std::map<std::string, std::string> fused;
  for (const auto& l : stats["layers"]) fused[l["name"]] = l["fused"];
  EXPECT_EQ(fused.count("res") + fused.count("mp") + fused.count("ap2") + fused.count("res2"), 0u);
  EXPECT_EQ(fused["c3"], "res");
  EXPECT_EQ(fused["c4"], "mp");
  EXPECT_EQ(fused["c5"], "ap2");
  EXPECT_EQ(fused["d2"], "res2");
  EXPECT_EQ(fused.count("ap"), 1u);  // its producer already pools in its epilogue
  expect_pe_run_agrees(args, stats, std::string("fusion-") + c.dtype + c.hw);
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Fusion, EpilogueFusionRuns,
                         testing::Values(FusionCase{"edge", "int8"}, FusionCase{"edge", "bf16"},
                                         FusionCase{"fusion_small_hw.json", "int8"},
                                         FusionCase{"fusion_small_hw.json", "bf16"},
                                         FusionCase{"edge_os.json", "int8"},
                                         FusionCase{"edge_is.json", "int8"}),
                         [](const testing::TestParamInfo<FusionCase>& p) {
                           std::string name = std::string(p.param.hw) + "_" + p.param.dtype;
                           for (auto& ch : name) {
                             if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

// --save-intermediates writes each fused layer's output and none of the tensors that fused away;
// a fused layer's output resident in the unified buffer (tpu-v1) is captured as it is written
// (models/tensor_shadows.hpp) and saves the same values as when it streams off chip (a 12 KiB
// unified buffer). The every-tensor check compares one tensor per layer.
TEST(EpilogueFusion, IntermediatesOnChipAndOffChipAreTheSame) {
  std::map<std::string, std::string> saved[2];
  const std::string hws[2] = {"tpu-v1", data("fusion_small_hw.json")};
  for (int i = 0; i < 2; ++i) {
    auto dir = fresh_dir("fusion-saved-" + std::to_string(i));
    CommandResult r = run_npusim("run --hw " + hws[i] + " --workload " + data("fusion.json") +
                                 " --out " + dir.string() + " --save-outputs " +
                                 (dir / "npy").string() + " --save-intermediates");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    json stats = json::parse(slurp(dir / "stats.json"));
    EXPECT_TRUE(stats["functional_check"]["bit_exact"].get<bool>()) << hws[i];
    EXPECT_EQ(stats["functional_check"]["tensors"], stats["layers"].size()) << hws[i];
    for (const char* fused_away : {"c3", "c4", "c5", "d2"}) {
      EXPECT_FALSE(std::filesystem::exists(dir / "npy" / (std::string(fused_away) + ".npy")))
          << fused_away;
    }
    for (const char* name : {"c1", "c2", "res", "mp", "ap", "ap2", "d1", "res2", "probs"}) {
      const auto path = dir / "npy" / (std::string(name) + ".npy");
      ASSERT_TRUE(std::filesystem::exists(path)) << name << " on " << hws[i];
      saved[i][name] = slurp(path);
    }
    std::filesystem::remove_all(dir);
  }
  for (const auto& [name, bytes] : saved[0]) EXPECT_EQ(bytes, saved[1].at(name)) << name;
}

TEST(EpilogueFusion, CompileShowsTheFusedLayers) {
  CommandResult r = run_npusim("compile --hw tpu-v1 --workload mnist-cnn");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("fused: pool1"), std::string::npos) << r.out;
}

}  // namespace
