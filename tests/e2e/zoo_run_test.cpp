// Every zoo network end to end on the TPU v1 preset in fast fidelity: int8 outputs bit-exact
// against the reference, bf16 within the stated tolerance (docs/quantization.md). Labelled
// "slow": VGG-16 alone is 15.5 G MACs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "run_npusim.hpp"

namespace {

using nlohmann::json;

struct ZooRun {
  const char* network;
  const char* dtype;
};
void PrintTo(const ZooRun& z, std::ostream* os) { *os << z.network << " " << z.dtype; }

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

INSTANTIATE_TEST_SUITE_P(
    Zoo, ZooRuns,
    testing::Values(ZooRun{"lenet5", "int8"}, ZooRun{"alexnet", "int8"}, ZooRun{"vgg16", "int8"},
                    ZooRun{"resnet18", "int8"}, ZooRun{"resnet50", "int8"},
                    ZooRun{"mobilenetv2", "int8"}, ZooRun{"bert-encoder", "int8"},
                    ZooRun{"lenet5", "bf16"}, ZooRun{"resnet18", "bf16"},
                    ZooRun{"mobilenetv2", "bf16"}, ZooRun{"bert-encoder", "bf16"}),
    [](const testing::TestParamInfo<ZooRun>& param_info) {
      std::string name = std::string(param_info.param.network) + "_" + param_info.param.dtype;
      for (auto& ch : name) {
        if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
      }
      return name;
    });

}  // namespace
