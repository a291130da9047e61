// `npusim run --values off` is the same simulation without values: timing never depends on data in
// these models (docs/performance.md), so every figure of stats.json is identical with values on
// and off, except the functional check (not run), the mode itself and the host's timings.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/e2e/run_npusim.hpp"

namespace {

using nlohmann::json;

// Every leaf of a stats.json as "a.b.c" (arrays by index) -> value.
void flatten(const json& j, const std::string& path, std::map<std::string, json>& out) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) flatten(v, path.empty() ? k : path + "." + k, out);
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) flatten(j[i], path + "[" + std::to_string(i) + "]", out);
  } else {
    out[path] = j;
  }
}

bool differs_by_design(const std::string& key) {
  // A timing-only run calibrates nothing (quantization.calibration is "none").
  for (const char* prefix :
       {"functional_check.", "simulation.", "host.", "values", "quantization.calibration"}) {
    if (key.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

json run_stats(const std::string& args, const std::string& name) {
  const auto dir = fresh_dir(name);
  CommandResult r = run_npusim("run " + args + " --out " + dir.string());
  EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.err;
  json j = json::parse(slurp(dir / "stats.json"));
  std::filesystem::remove_all(dir);
  return j;
}

class ValuesOff : public ::testing::TestWithParam<std::string> {};

TEST_P(ValuesOff, GivesTheSameFiguresAsValuesOn) {
  const std::string args = GetParam();
  const json on = run_stats(args, "values-on");
  const json off = run_stats(args + " --values off", "values-off");
  EXPECT_EQ(on["values"], "on");
  EXPECT_EQ(off["values"], "off");
  EXPECT_TRUE(on["functional_check"]["checked"].get<bool>());
  EXPECT_TRUE(on["functional_check"]["within_tolerance"].get<bool>());
  EXPECT_FALSE(off["functional_check"]["checked"].get<bool>());
  EXPECT_EQ(off["functional_check"]["compared_values"], 0);
  std::map<std::string, json> a, b;
  flatten(on, "", a);
  flatten(off, "", b);
  ASSERT_EQ(a.size(), b.size()) << args;
  size_t compared = 0;
  for (const auto& [key, value] : a) {
    ASSERT_TRUE(b.count(key)) << args << ": " << key << " missing with --values off";
    if (differs_by_design(key)) continue;
    EXPECT_EQ(value, b.at(key)) << args << ": " << key;
    ++compared;
  }
  EXPECT_GT(on["total_cycles"].get<uint64_t>(), 0u);
  EXPECT_GT(compared, 50u) << args;
}

INSTANTIATE_TEST_SUITE_P(ZooAndPresets, ValuesOff,
                         ::testing::Values("--hw edge --workload mnist-cnn",
                                           "--hw edge --workload mobilenetv2",
                                           "--hw tpu-v1 --workload resnet18 --batch 2",
                                           "--hw tpu-v1-hbm --workload bert-encoder",
                                           "--hw tpu-v1 --workload lenet5 --dtype bf16",
                                           "--hw tpu-v1-hbm --workload alexnet --dtype bf16",
                                           "--hw edge --workload mnist-cnn --fidelity pe",
                                           "--hw edge --workload lenet5 --dtype bf16 --fidelity pe",
                                           "--hw ascend-like --workload mnist-cnn",
                                           "--hw ascend-like --workload lenet5 --fidelity pe",
                                           // Timing-only programs keep the weights' sizes
                                           // without contents: the same addresses when the
                                           // batch or the layers are split over cores, and a
                                           // host layer's parameter bytes.
                                           "--hw tpu-v4-like --workload lenet5 --batch 2 "
                                           "--parallel data",
                                           "--hw tpu-v4-like --workload mnist-cnn --dtype bf16 "
                                           "--parallel tensor",
                                           "--hw tpu-v1 --workload mnist-cnn --host-ops fc1"),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           std::string name;
                           for (char c : param_info.param) {
                             if (std::isalnum(static_cast<unsigned char>(c))) name += c;
                           }
                           return name;
                         });

TEST(ValuesOffCli, RejectsBadValuesAndSavedOutputs) {
  CommandResult bad = run_npusim("run --hw edge --workload mnist-cnn --values maybe");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--values 'maybe': expected on or off"), std::string::npos) << bad.err;
  CommandResult save =
      run_npusim("run --hw edge --workload mnist-cnn --values off --save-outputs " +
                 fresh_dir("values-save").string());
  EXPECT_EQ(save.exit_code, 2);
  EXPECT_NE(save.err.find("--save-outputs needs the values"), std::string::npos) << save.err;
  CommandResult report = run_npusim("run --hw edge --workload mnist-cnn --values off");
  EXPECT_EQ(report.exit_code, 0) << report.err;
  EXPECT_NE(report.out.find("functional check   not run (--values off"), std::string::npos)
      << report.out;
}

}  // namespace
