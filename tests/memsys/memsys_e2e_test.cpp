// End to end through the CLI: a zoo network on an HBM-backed preset, bit-exact, with the memory
// and DMA/compute overlap figures in stats.json.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "run_npusim.hpp"

namespace {

using nlohmann::json;

TEST(MemsysEndToEnd, MnistCnnOnHbmPresetIsBitExactWithMemoryFigures) {
  auto dir = fresh_dir("memsys-mnist-hbm");
  CommandResult r = run_npusim("run --hw tpu-v1-hbm --workload mnist-cnn --out " + dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("outputs match the reference bit for bit"), std::string::npos) << r.out;
  json stats = json::parse(slurp(dir / "stats.json"));
  const json& m = stats["memory"];
  EXPECT_EQ(m["model"], "dram");
  EXPECT_EQ(m["channels"], 8);
  const uint64_t burst = m["burst_bytes"].get<uint64_t>();
  // Every byte moved travels in bursts; partial bursts round up.
  EXPECT_GE(
      (m["read_bursts"].get<uint64_t>() + m["write_bursts"].get<uint64_t>()) * burst,
      stats["dram"]["read_bytes"].get<uint64_t>() + stats["dram"]["write_bytes"].get<uint64_t>());
  EXPECT_EQ(m["read_bursts"].get<uint64_t>() + m["write_bursts"].get<uint64_t>(),
            stats["dma"]["bursts"].get<uint64_t>());
  // The address mapping spreads the traffic over every channel.
  uint64_t channel_sum = 0;
  ASSERT_EQ(m["channel_bursts"].size(), 8u);
  for (const auto& n : m["channel_bursts"]) {
    EXPECT_GT(n.get<uint64_t>(), 0u);
    channel_sum += n.get<uint64_t>();
  }
  EXPECT_EQ(channel_sum, stats["dma"]["bursts"].get<uint64_t>());
  EXPECT_GT(m["act_commands"].get<uint64_t>(), 0u);
  EXPECT_GT(m["row_hit_rate"].get<double>(), 0.0);
  EXPECT_LE(m["row_hit_rate"].get<double>(), 1.0);
  EXPECT_GT(m["bandwidth_gbps"].get<double>(), 0.0);
  EXPECT_LE(m["bandwidth_gbps"].get<double>(), m["peak_bandwidth_gbps"].get<double>());
  EXPECT_GT(m["energy_pj_per_bit"].get<double>(), 0.0);
  uint64_t overlap = 0;
  for (const auto& l : stats["layers"]) {
    const uint64_t dma = l["dma_active_cycles"], both = l["dma_compute_overlap_cycles"];
    EXPECT_LE(both, dma);
    EXPECT_LE(both, l["compute_active_cycles"].get<uint64_t>());
    EXPECT_EQ(l["dma_exposed_cycles"].get<uint64_t>(), dma - both);
    overlap += both;
  }
  EXPECT_GT(overlap, 0u) << "double buffering hides some DMA behind compute";
  EXPECT_GT(stats["dma"]["compute_overlap_cycles"].get<uint64_t>(), 0u);
}

// A description whose memory preset cannot be used is a user error (exit 2) naming the key, found
// while the description is read: `validate` reports it with every other problem of the file.
TEST(MemsysEndToEnd, UnusableMemoryPresetIsAUserError) {
  auto dir = fresh_dir("memsys-bad-preset");
  std::filesystem::create_directories(dir);
  const std::string memory[] = {
      R"({"model": "dram", "preset": "hbm9"})",
      R"({"model": "dram", "preset": "hbm2", "channels": 2, "bandwidth_gbps": 256})",
  };
  for (int i = 0; i < 2; ++i) {
    const auto hw = dir / ("hw" + std::to_string(i) + ".json");
    // The message names the description's file and the key.
    const std::string expected[] = {
        "npusim: error: " + hw.string() +
            ": /memory/preset: 'hbm9': no such file and no such preset (presets: ",
        "npusim: error: " + hw.string() +
            ": /memory/bandwidth_gbps: expected the peak of hbm2 x2 (64.00 GB/s) or 0, got 256",
    };
    std::ofstream(hw) << R"({"schema_version": 1, "name": "chip", "memory": )" << memory[i] << "}";
    CommandResult r = run_npusim("run --hw " + hw.string() + " --workload mnist-cnn --out " +
                                 (dir / "out").string());
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(expected[i]), std::string::npos) << r.err;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
