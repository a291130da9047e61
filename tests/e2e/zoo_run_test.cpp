// Every zoo network end to end on the TPU v1 preset in fast fidelity: int8 outputs bit-exact
// against the reference, bf16 every layer within its bound (docs/reliability.md); every zoo
// network on the tpu-v4-like and ascend-like presets in int8 and bf16, on ascend-like's cube
// unit in both fidelities with identical cycles and tensors; every zoo network data parallel on
// 1, 2 and 4 TensorCores, and resnet50 at batch 8 on the two-core tpu-v4-like chip. Labelled
// "slow": VGG-16 alone is 15.5 G MACs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "fidelity_compare.hpp"
#include "run_npusim.hpp"

namespace {

using nlohmann::json;

struct ZooRun {
  const char* network;
  const char* dtype;
};
void PrintTo(const ZooRun& z, std::ostream* os) { *os << z.network << " " << z.dtype; }

// bert-encoder on tpu-v1 is not here: tests/zoo/bert_encoder_numpy_test.py runs it in both data
// types with this check and against numpy, and the suites below run it on three presets.
class ZooRuns : public testing::TestWithParam<ZooRun> {};

TEST_P(ZooRuns, OutputsMatchTheReference) {
  const ZooRun z = GetParam();
  auto dir = fresh_dir(std::string("zoo-") + z.network + z.dtype);
  CommandResult r = run_npusim(std::string("run --hw tpu-v1 --workload ") + z.network +
                               " --dtype " + z.dtype + " --out " + dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  json stats = json::parse(slurp(dir / "stats.json"));
  EXPECT_TRUE(stats["functional_check"]["within_tolerance"].get<bool>());
  if (std::string(z.dtype) == "int8") {
    EXPECT_TRUE(stats["functional_check"]["bit_exact"].get<bool>());
  }
  EXPECT_GT(stats["macs"].get<uint64_t>(), 0u);
  EXPECT_GT(stats["total_cycles"].get<uint64_t>(), 0u);
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooRuns,
                         testing::Values(ZooRun{"lenet5", "int8"}, ZooRun{"alexnet", "int8"},
                                         ZooRun{"vgg16", "int8"}, ZooRun{"resnet18", "int8"},
                                         ZooRun{"resnet50", "int8"}, ZooRun{"mobilenetv2", "int8"},
                                         ZooRun{"lenet5", "bf16"}, ZooRun{"resnet18", "bf16"},
                                         ZooRun{"mobilenetv2", "bf16"}),
                         [](const testing::TestParamInfo<ZooRun>& param_info) {
                           std::string name =
                               std::string(param_info.param.network) + "_" + param_info.param.dtype;
                           for (auto& ch : name) {
                             if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

// Epilogue fusion (compiler/passes/fusion.hpp) on the networks too large for the core tests: every
// 2x2 / 2 max pool of vgg16 runs in its conv's epilogue, every residual add of resnet50 in a
// conv's; `npusim compile` heads each layer with "; ---- layer NAME (OP...".
TEST(ZooFusion, Vgg16PoolsAndResnet50AddsRunInConvEpilogues) {
  struct Case {
    const char* network;
    const char* fused_op;
    int fused;
  };
  for (const Case c : {Case{"vgg16", "maxpool", 5}, Case{"resnet50", "add", 16}}) {
    CommandResult r = run_npusim(std::string("compile --hw tpu-v1 --workload ") + c.network);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out.find(std::string(" (") + c.fused_op + ")"), std::string::npos) << c.network;
    int fused = 0;
    for (size_t at = r.out.find("(conv2d, fused: "); at != std::string::npos;
         at = r.out.find("(conv2d, fused: ", at + 1)) {
      ++fused;
    }
    EXPECT_EQ(fused, c.fused) << c.network;
  }
}

const char* const kZoo[] = {"alexnet",     "bert-encoder", "lenet5",   "mlp-1000", "mnist-cnn",
                            "mobilenetv2", "resnet18",     "resnet50", "vgg16"};

std::string test_name(std::string name) {
  for (auto& ch : name) {
    if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

struct PresetRun {
  const char* hw;
  const char* network;
  const char* dtype;
};
void PrintTo(const PresetRun& z, std::ostream* os) {
  *os << z.network << " on " << z.hw << " in " << z.dtype;
}

std::vector<PresetRun> zoo_on(const char* hw) {
  std::vector<PresetRun> runs;
  for (const char* network : kZoo) {
    for (const char* dtype : {"int8", "bf16"}) runs.push_back({hw, network, dtype});
  }
  return runs;
}

class TpuV4LikeZoo : public testing::TestWithParam<PresetRun> {};

TEST_P(TpuV4LikeZoo, OutputsMatchTheReference) {
  const PresetRun z = GetParam();
  auto dir = fresh_dir(std::string("zoo-v4-") + z.network + z.dtype);
  CommandResult r = run_npusim(std::string("run --hw ") + z.hw + " --workload " + z.network +
                               " --dtype " + z.dtype + " --out " + dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  json stats = json::parse(slurp(dir / "stats.json"));
  EXPECT_TRUE(stats["functional_check"]["within_tolerance"].get<bool>());
  if (std::string(z.dtype) == "int8") {
    EXPECT_TRUE(stats["functional_check"]["bit_exact"].get<bool>());
  }
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Zoo, TpuV4LikeZoo, testing::ValuesIn(zoo_on("tpu-v4-like")),
                         [](const testing::TestParamInfo<PresetRun>& p) {
                           return test_name(std::string(p.param.network) + "_" + p.param.dtype);
                         });

class CubeZoo : public testing::TestWithParam<PresetRun> {};

TEST_P(CubeZoo, FidelitiesAgreeAndMatchTheReference) {
  const PresetRun z = GetParam();
  expect_fidelities_agree(z.hw, z.network, z.dtype);
}

INSTANTIATE_TEST_SUITE_P(Zoo, CubeZoo, testing::ValuesIn(zoo_on("ascend-like")),
                         [](const testing::TestParamInfo<PresetRun>& p) {
                           return test_name(std::string(p.param.network) + "_" + p.param.dtype);
                         });

// A chip of `cores` tpu-v4-like TensorCores (the tpu-v4-like-core preset, `cores` changed).
std::filesystem::path tensorcores(int cores) {
  CommandResult r = run_npusim("presets --show tpu-v4-like-core");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  json hw = json::parse(r.out);
  hw["cores"] = cores;
  const auto path = fresh_dir("tensorcores" + std::to_string(cores) + ".json");
  std::ofstream(path) << hw.dump();
  return path;
}

struct CoresRun {
  const char* network;
  int cores;
};
void PrintTo(const CoresRun& z, std::ostream* os) { *os << z.network << " on " << z.cores; }

// `npusim run` of z.network on z.cores TensorCores, int8, with `flags`: its stats.json (null,
// and a test failure, when the run fails).
json run_on_tensorcores(const CoresRun& z, const std::string& flags) {
  const auto hw = tensorcores(z.cores);
  const auto dir = fresh_dir(std::string("zoo-cores-") + z.network + std::to_string(z.cores));
  CommandResult r = run_npusim("run --hw " + hw.string() + " --workload " + z.network +
                               " --dtype int8 " + flags + " --out " + dir.string());
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  json stats = r.exit_code == 0 ? json::parse(slurp(dir / "stats.json")) : json();
  std::filesystem::remove_all(dir);
  std::filesystem::remove(hw);
  return stats;
}

class MulticoreZoo : public testing::TestWithParam<CoresRun> {};

// Data parallel, batch 4, int8: every layer's tensor bit-exact against the reference, so the same
// on 1, 2 and 4 cores.
TEST_P(MulticoreZoo, BitExactOnEveryCoreCount) {
  const CoresRun z = GetParam();
  const json stats = run_on_tensorcores(z, "--batch 4 --parallel data");
  ASSERT_FALSE(stats.is_null());
  EXPECT_TRUE(stats["functional_check"]["bit_exact"].get<bool>());
  EXPECT_EQ(stats["chip"]["cores_used"].get<int>(), z.cores);
  for (const auto& c : stats["cores"]) EXPECT_GT(c["macs"].get<uint64_t>(), 0u);
}

std::vector<CoresRun> zoo_on_cores(std::vector<int> core_counts = {1, 2, 4}) {
  std::vector<CoresRun> runs;
  for (const char* network : kZoo) {
    for (int cores : core_counts) runs.push_back({network, cores});
  }
  return runs;
}

INSTANTIATE_TEST_SUITE_P(Zoo, MulticoreZoo, testing::ValuesIn(zoo_on_cores()),
                         [](const testing::TestParamInfo<CoresRun>& p) {
                           return test_name(std::string(p.param.network) + "_" +
                                            std::to_string(p.param.cores) + "cores");
                         });

class TensorParallelZoo : public testing::TestWithParam<CoresRun> {};

// Tensor parallel, batch 1, int8 (docs/multicore.md, "Tensor parallelism"): every layer's tensor
// bit-exact against the reference with each matrix layer of two or more 128-column tiles split
// over up to `cores` TensorCores (the hazard checker checks every run's cross-core tokens).
TEST_P(TensorParallelZoo, BitExactWithTheLayersSplit) {
  const CoresRun z = GetParam();
  const json stats = run_on_tensorcores(z, "--batch 1 --parallel tensor");
  ASSERT_FALSE(stats.is_null());
  EXPECT_TRUE(stats["functional_check"]["bit_exact"].get<bool>());
  int widest = 1;
  for (const auto& l : stats["layers"]) widest = std::max(widest, l["cores"].get<int>());
  EXPECT_LE(widest, z.cores);
  EXPECT_EQ(stats["chip"]["cores_used"].get<int>(), widest);
  const std::string network = z.network;
  if (network == "resnet50" || network == "vgg16" || network == "alexnet") {
    EXPECT_EQ(widest, z.cores) << "layers of 512 or more channels split over every core";
  }
}

INSTANTIATE_TEST_SUITE_P(Zoo, TensorParallelZoo, testing::ValuesIn(zoo_on_cores({2, 4})),
                         [](const testing::TestParamInfo<CoresRun>& p) {
                           return test_name(std::string(p.param.network) + "_" +
                                            std::to_string(p.param.cores) + "cores");
                         });

class PipelineZoo : public testing::TestWithParam<CoresRun> {};

// Pipeline, batch 2 in micro-batches of one image, int8: every layer's tensor bit-exact against the
// reference on 2 and 4 cores (stage outputs over the interconnect or through off-chip memory).
TEST_P(PipelineZoo, BitExactOnTwoAndFourCores) {
  const CoresRun z = GetParam();
  const auto hw = tensorcores(z.cores);
  const auto dir = fresh_dir(std::string("zoo-pp-") + z.network + std::to_string(z.cores));
  CommandResult r = run_npusim("run --hw " + hw.string() + " --workload " + z.network +
                               " --batch 2 --dtype int8 --parallel pipeline --out " + dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  json stats = json::parse(slurp(dir / "stats.json"));
  EXPECT_TRUE(stats["functional_check"]["bit_exact"].get<bool>());
  // A stage per core, but no more stages than layers: mlp-1000 is one layer after fusion.
  const int stages = std::string(z.network) == "mlp-1000" ? 1 : z.cores;
  EXPECT_EQ(stats["chip"]["cores_used"].get<int>(), stages);
  std::filesystem::remove_all(dir);
  std::filesystem::remove(hw);
}

std::vector<CoresRun> zoo_in_pipelines() {
  std::vector<CoresRun> runs;
  for (const char* network : kZoo) {
    for (int cores : {2, 4}) runs.push_back({network, cores});
  }
  return runs;
}

INSTANTIATE_TEST_SUITE_P(Zoo, PipelineZoo, testing::ValuesIn(zoo_in_pipelines()),
                         [](const testing::TestParamInfo<CoresRun>& p) {
                           return test_name(std::string(p.param.network) + "_" +
                                            std::to_string(p.param.cores) + "cores");
                         });

// The acceptance run: resnet50 at batch 8 on both TensorCores of the TPU v4 chip, with
// per-core figures.
TEST(TpuV4Chip, Resnet50Batch8RunsOnBothTensorCores) {
  const auto dir = fresh_dir("zoo-v4-chip");
  CommandResult r =
      run_npusim("run --hw tpu-v4-like --workload resnet50 --batch 8 --out " + dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  json stats = json::parse(slurp(dir / "stats.json"));
  EXPECT_TRUE(stats["functional_check"]["within_tolerance"].get<bool>());
  EXPECT_EQ(stats["chip"]["cores_used"].get<int>(), 2);
  ASSERT_EQ(stats["cores"].size(), 2u);
  EXPECT_EQ(stats["cores"][0]["macs"], stats["cores"][1]["macs"]);
  EXPECT_LT(stats["chip"]["load_imbalance"].get<double>(), 1.05);
  EXPECT_NE(r.out.find("core 1 "), std::string::npos) << r.out;
  std::filesystem::remove_all(dir);
}

}  // namespace
