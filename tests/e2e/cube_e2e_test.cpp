// Whole networks on the cube unit (the ascend-like preset) from the CLI: the register-level `pe`
// cube and the closed-form `fast` cube give the same cycles, layer by layer, and the same bytes in
// every output and intermediate tensor, in int8 and bf16 (docs/systolic_array.md, "The cube
// unit"). The whole zoo runs in the slow label (zoo_run_test.cpp).
#include "fidelity_compare.hpp"

namespace {

TEST(CubeEndToEnd, MnistCnnInt8FidelitiesAgree) {
  expect_fidelities_agree("ascend-like", "mnist-cnn", "int8");
}
TEST(CubeEndToEnd, MnistCnnBf16FidelitiesAgree) {
  expect_fidelities_agree("ascend-like", "mnist-cnn", "bf16");
}
TEST(CubeEndToEnd, Resnet18Int8FidelitiesAgree) {
  expect_fidelities_agree("ascend-like", "resnet18", "int8");
}
TEST(CubeEndToEnd, Resnet18Bf16FidelitiesAgree) {
  expect_fidelities_agree("ascend-like", "resnet18", "bf16");
}

// The cube's own counts on a GEMM: mlp-1000 is 64x1000x1000. Tiles are K <= 16 by N <= 16:
// ceil(1000/16)^2 = 63 x 63 = 3969 tiles of M = 64 rows, 4 blocks each, 15876 blocks. The cube
// is busy one cycle per block plus a fill of D - 1 = 6 cycles whenever it waited for operands
// (at most one per tile), and loads no stationary rows.
TEST(CubeEndToEnd, CountsBlocksAndTiles) {
  const auto dir = fresh_dir("cube-mlp");
  const CommandResult r =
      run_npusim("run --hw ascend-like --workload mlp-1000 --dtype int8 --out " + dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json stats = nlohmann::json::parse(slurp(dir / "stats.json"));
  const nlohmann::json& cube = stats["units"]["matrix_unit0"];
  EXPECT_EQ(cube["tiles"], 3969u);
  EXPECT_EQ(cube["int8_macs"], 64000000u);
  EXPECT_EQ(cube["stationary_rows_loaded"], 0u);
  const uint64_t busy = cube["busy_cycles"].get<uint64_t>();
  EXPECT_GE(busy, 15876u + 6u);  // the first tile's fill at least
  EXPECT_LE(busy, 15876u + 6u * 3969u);
  EXPECT_TRUE(stats["functional_check"]["bit_exact"].get<bool>());
  std::filesystem::remove_all(dir);
}

}  // namespace
