// Every key a run writes to stats.json (and membench to its `memory` section) is documented in
// docs/stats.md, and the two writers use the same memory keys.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "support/stats.hpp"
#include "tests/e2e/run_npusim.hpp"

namespace {

// "units.matrix_unit0.busy_cycles", "units.core1.matrix_unit0.busy_cycles" ->
// "units.<unit>.busy_cycles" (the page's spelling).
std::string documented_form(const std::string& path) {
  static const std::regex unit(
      R"(^units\.(core\d+\.)?(dma_load|dma_store|matrix_unit|vector_unit|link)\d*\.)");
  return std::regex_replace(path, unit, "units.<unit>.");
}

nlohmann::json run_stats(const std::string& args) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("npusim-statsdoc-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  CommandResult r = run_npusim(args + " --out " + dir.string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(slurp(dir / "stats.json"));
  std::filesystem::remove_all(dir);
  return j;
}

void expect_documented(const nlohmann::json& stats, const std::string& what) {
  const std::string page = slurp(std::filesystem::path(NPUSIM_SOURCE_DIR) / "docs/stats.md");
  for (const std::string& path : npusim::stats::flatten_paths(stats, {"memory.config"})) {
    const std::string key = fmt::format("`{}`", documented_form(path));
    EXPECT_NE(page.find(key), std::string::npos)
        << what << ": " << key << " is not in docs/stats.md";
  }
}

TEST(StatsDoc, EveryKeyOfADramRunIsDocumented) {
  expect_documented(run_stats("run --hw tpu-v1 --workload mnist-cnn"), "tpu-v1");
}

TEST(StatsDoc, EveryKeyOfASimpleMemoryRunWithTwoArraysIsDocumented) {
  expect_documented(
      run_stats(std::string("run --hw ") + NPUSIM_E2E_DATA + "/edge_os.json --workload lenet5"),
      "edge_os");
}

TEST(StatsDoc, EveryKeyOfATwoCoreRunIsDocumented) {
  const nlohmann::json stats =
      run_stats("run --hw tpu-v4-like --workload mnist-cnn --batch 2 --dtype int8");
  ASSERT_EQ(stats["chip"]["cores_used"].get<int>(), 2);
  ASSERT_TRUE(stats["units"].contains("core1"));
  expect_documented(stats, "tpu-v4-like");
}

TEST(StatsDoc, MembenchWritesTheMemoryKeysOfStatsJson) {
  CommandResult r = run_npusim("membench --memory hbm2 --pattern seq-read --requests 2000");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json bench = nlohmann::json::parse(r.out);
  const nlohmann::json run = run_stats("run --hw tpu-v1-hbm --workload mlp-1000");
  std::vector<std::string> bench_keys, run_keys;
  for (const auto& [k, v] : bench["memory"].items()) bench_keys.push_back(k);
  for (const auto& [k, v] : run["memory"].items()) {
    if (k != "model" && k != "fidelity") run_keys.push_back(k);  // the run's, not the memory's
  }
  EXPECT_EQ(bench_keys, run_keys);
  expect_documented(nlohmann::json{{"memory", bench["memory"]}}, "membench");
}

TEST(StatsDoc, EveryKeyOfARunWithAHostIsDocumented) {
  const auto hw = std::filesystem::temp_directory_path() /
                  ("npusim-statsdoc-host-" + std::to_string(::getpid()) + ".json");
  std::ofstream(hw) << R"({"schema_version": 1, "matrix_unit": {"rows": 16, "cols": 16},
    "host": {"link": {"pcie": {"generation": 4, "lanes": 8}}}})";
  const nlohmann::json stats =
      run_stats("run --hw " + hw.string() + " --workload mnist-cnn --host-ops softmax");
  std::filesystem::remove(hw);
  ASSERT_EQ(stats["host_cpu"]["layers"].get<int>(), 1);
  expect_documented(stats, "host");
}

}  // namespace
