// memory.fidelity "bulk" against "command" through the CLI: a memory-bound and a compute-bound
// zoo run within 2 % in cycles and DRAM energy (the bar of docs/memory_system.md, "Memory
// fidelity"), the fidelity recorded in stats.json and the resolved config, and bad values refused.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "run_npusim.hpp"

namespace {

using nlohmann::json;

std::filesystem::path fresh_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  return dir;
}

json run_stats(const std::string& args, const std::string& fidelity) {
  const auto dir = fresh_dir("npusim-fidelity-" + fidelity);
  CommandResult r = run_npusim(args + " --memory-fidelity " + fidelity + " --out " + dir.string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  json stats = json::parse(slurp(dir / "stats.json"));
  EXPECT_EQ(json::parse(slurp(dir / "config.resolved.json"))["memory"]["fidelity"], fidelity);
  std::filesystem::remove_all(dir);
  return stats;
}

void expect_within_two_percent(const std::string& args) {
  SCOPED_TRACE(args);
  const json command = run_stats(args, "command");
  const json bulk = run_stats(args, "bulk");
  EXPECT_EQ(command["memory"]["fidelity"], "command");
  EXPECT_EQ(bulk["memory"]["fidelity"], "bulk");
  const double c = command["total_cycles"].get<double>(), b = bulk["total_cycles"].get<double>();
  EXPECT_NEAR(b, c, 0.02 * c);
  const double ec = command["memory"]["energy_pj"].get<double>();
  EXPECT_NEAR(bulk["memory"]["energy_pj"].get<double>(), ec, 0.02 * ec);
  // The same bytes in the same bursts.
  EXPECT_EQ(bulk["memory"]["read_bursts"], command["memory"]["read_bursts"]);
  EXPECT_EQ(bulk["memory"]["write_bursts"], command["memory"]["write_bursts"]);
}

TEST(MemoryFidelity, MemoryBoundRunWithinTwoPercent) {
  expect_within_two_percent("run --hw tpu-v4-like-core --workload mlp-1000 --values off");
}

TEST(MemoryFidelity, ComputeBoundRunWithinTwoPercent) {
  expect_within_two_percent("run --hw tpu-v1-hbm --workload mnist-cnn --values off");
}

TEST(MemoryFidelity, BadValuesAreUserErrors) {
  CommandResult r = run_npusim("run --hw tpu-v1-hbm --workload mnist-cnn --memory-fidelity fast");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--memory-fidelity 'fast': expected command or bulk"), std::string::npos)
      << r.err;
  const auto dir = fresh_dir("npusim-fidelity-bad");
  std::filesystem::create_directories(dir);
  const auto hw = dir / "hw.json";
  std::ofstream(hw) << R"({"schema_version": 1, "name": "chip", "memory": )"
                    << R"({"model": "simple", "fidelity": "bulk"}})";
  r = run_npusim("run --hw " + hw.string() + " --workload mnist-cnn");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(hw.string() + ": /memory/fidelity: only for memory.model \"dram\""),
            std::string::npos)
      << r.err;
  // The flag asks for the DRAM model's fidelity: a simple memory has none.
  std::ofstream(hw) << R"({"schema_version": 1, "name": "chip", "memory": {"model": "simple"}})";
  r = run_npusim("run --hw " + hw.string() + " --workload mnist-cnn --memory-fidelity bulk");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--memory-fidelity bulk: hardware 'chip' has memory.model \"simple\""),
            std::string::npos)
      << r.err;
  std::filesystem::remove_all(dir);
}

}  // namespace
