// Activations stay in the unified buffer (docs/memory_plan.md): resnet50 on tpu-v1 reads little
// more than its parameters off chip and writes only its output; a small unified buffer spills
// tensors off chip and the run stays bit-exact; `npusim compile` prints the plan.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/e2e/run_npusim.hpp"

namespace {

using nlohmann::json;

json run_stats(const std::string& args, const std::string& name) {
  const auto dir = fresh_dir(name);
  CommandResult r = run_npusim("run " + args + " --out " + dir.string());
  EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.err;
  if (r.exit_code != 0) return json::object();
  json j = json::parse(slurp(dir / "stats.json"));
  std::filesystem::remove_all(dir);
  return j;
}

// tpu-v1 with another unified-buffer size, as a file.
std::string tpu_v1_with_ub(uint64_t bytes, const std::string& name) {
  json hw = json::parse(slurp(std::string(NPUSIM_SOURCE_DIR) + "/configs/hw/tpu-v1.json"));
  hw["name"] = name;
  hw["buffers"]["unified_buffer"]["capacity_bytes"] = bytes;
  const auto path = std::filesystem::temp_directory_path() /
                    ("npusim-e2e-" + std::to_string(::getpid()) + "-" + name + ".json");
  std::ofstream(path) << hw.dump();
  return path.string();
}

TEST(MemoryPlan, Resnet50ReadsLittleMoreThanItsParametersAndWritesOnlyItsOutput) {
  // Off-chip traffic does not depend on values: timing only is enough.
  json s = run_stats("--hw tpu-v1 --workload resnet50 --values off", "plan-resnet50");
  ASSERT_TRUE(s.contains("dram"));
  const uint64_t params = s["dram"]["parameter_bytes"].get<uint64_t>();
  const uint64_t read = s["dram"]["read_bytes"].get<uint64_t>();
  const uint64_t written = s["dram"]["write_bytes"].get<uint64_t>();
  EXPECT_GT(params, 25'000'000u);
  EXPECT_LE(double(read), 1.07 * double(params)) << read << " bytes read, parameters " << params;
  EXPECT_EQ(written, 1000u) << "the 1000 int8 class scores only";
  uint64_t layers_read = 0, layers_written = 0;
  for (const auto& l : s["layers"]) {
    layers_read += l["dram_read_bytes"].get<uint64_t>();
    layers_written += l["dram_write_bytes"].get<uint64_t>();
    EXPECT_GE(l["dram_read_bytes"].get<uint64_t>() + l["dram_write_bytes"].get<uint64_t>(),
              l["dram_bytes_lower_bound"].get<uint64_t>())
        << l["name"];
  }
  EXPECT_EQ(layers_read, read);
  EXPECT_EQ(layers_written, written);
}

TEST(MemoryPlan, WeightsAreReadOncePerBatch) {
  // Batch 4: the images of a layer share each streamed weight chunk, so the reads are the
  // parameters once plus each 224x224x3 input image (and a little slab overlap in conv1).
  json s = run_stats("--hw tpu-v1 --workload resnet50 --batch 4 --values off", "plan-batch4");
  ASSERT_TRUE(s.contains("dram"));
  const uint64_t params = s["dram"]["parameter_bytes"].get<uint64_t>();
  const uint64_t inputs = 4u * 224 * 224 * 3;
  EXPECT_LE(double(s["dram"]["read_bytes"].get<uint64_t>()), double(params) + 1.05 * inputs);
  EXPECT_EQ(s["dram"]["write_bytes"].get<uint64_t>(), 4000u);
}

TEST(MemoryPlan, Resnet50WithAOneMebibyteUnifiedBufferSpillsAndStaysBitExact) {
  const std::string hw = tpu_v1_with_ub(1 << 20, "tpu-v1-ub1m");
  json s = run_stats("--hw " + hw + " --workload resnet50", "plan-resnet50-1m");
  ASSERT_TRUE(s.contains("functional_check"));
  EXPECT_TRUE(s["functional_check"]["bit_exact"].get<bool>()) << s["functional_check"].dump();
  EXPECT_EQ(s["functional_check"]["tensors"].get<uint64_t>(), s["layers"].size());
  // Tensors that did not fit went off chip and came back.
  EXPECT_GT(s["dram"]["write_bytes"].get<uint64_t>(), 1000u);
  std::filesystem::remove(hw);
}

TEST(MemoryPlan, SmallUnifiedBufferSpillsInBf16Too) {
  // 256 KiB: resnet18's early 56x56x64 bf16 tensors (392 KiB) cannot stay, later ones can.
  const std::string hw = tpu_v1_with_ub(256 << 10, "tpu-v1-ub256k");
  json s = run_stats("--hw " + hw + " --workload resnet18 --dtype bf16", "plan-resnet18-bf16");
  ASSERT_TRUE(s.contains("functional_check"));
  EXPECT_TRUE(s["functional_check"]["within_tolerance"].get<bool>());
  EXPECT_GT(s["dram"]["write_bytes"].get<uint64_t>(), 1000u * 2);
  json roomy = run_stats("--hw tpu-v1 --workload resnet18 --dtype bf16 --values off",
                         "plan-resnet18-bf16-roomy");
  EXPECT_LT(roomy["dram"]["write_bytes"].get<uint64_t>(), s["dram"]["write_bytes"].get<uint64_t>());
  std::filesystem::remove(hw);
}

TEST(MemoryPlan, CompilePrintsWhereEachTensorLives) {
  CommandResult r = run_npusim("compile --hw tpu-v1 --workload mnist-cnn");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("; memory plan:"), std::string::npos);
  EXPECT_NE(r.out.find(" ub[0x"), std::string::npos) << "an activation on chip";
  EXPECT_NE(r.out.find(" dram[0x"), std::string::npos) << "the output off chip";
}

}  // namespace
