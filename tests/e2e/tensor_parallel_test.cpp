// Tensor parallelism end to end (docs/multicore.md, "Tensor parallelism"): a matrix layer's output
// channels split over 2 and 4 cores give every tensor of one core, bit for bit, with the hazard
// checker satisfied (every run checks it); a compute-bound dense layer split over two cores takes
// about half the matrix-unit busy cycles per core; `auto` at batch 1 on tpu-v4-like splits the
// big layers of bert-encoder and prints the choice per layer; a bad --parallel exits with 2.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "saved_run.hpp"

namespace {

using nlohmann::json;

// `cores` copies of an int8 core with a cols x cols array whose off-chip memory is fast (1 TB/s):
// small arrays give the small test networks layers of several array-column tiles to split.
std::filesystem::path chip_file(int cores, int cols) {
  const auto path =
      fresh_dir("tensorpar-hw-" + std::to_string(cores) + "x" + std::to_string(cols) + ".json");
  std::ofstream(path) << R"({"schema_version": 1, "name": "tp", "clock_mhz": 1000, "cores": )"
                      << cores << R"(, "matrix_unit": {"rows": )" << cols << R"(, "cols": )" << cols
                      << R"(},
    "memory": {"model": "simple", "bandwidth_gbps": 1000, "latency_ns": 20}})";
  return path;
}

using CoreRun = SavedRun;

CoreRun run_on(int cores, int cols, const std::string& network, int batch,
               const std::string& parallel, const std::string& extra = "") {
  const auto hw = chip_file(cores, cols);
  CoreRun out =
      run_saving_tensors("--hw " + hw.string() + " --workload " + network + " --batch " +
                             std::to_string(batch) + " --parallel " + parallel + " " + extra,
                         "tensorpar-" + std::filesystem::path(network).stem().string() +
                             std::to_string(cores) + parallel);
  std::filesystem::remove(hw);
  return out;
}

int split_layers(const json& stats) {
  int n = 0;
  for (const auto& l : stats["layers"]) n += l["cores"].get<int>() > 1;
  return n;
}

struct Case {
  const char* network;
  int cols;  // array columns: every matrix layer of the network has at least two tiles
  int batch;
  const char* dtype;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.network << " " << c.dtype; }

class TensorParallelValues : public testing::TestWithParam<Case> {};

// Every tensor (saved with --save-intermediates) is the one core's, and each run passes the
// functional check (int8: bit for bit; bf16: within its bound) and the hazard checker.
TEST_P(TensorParallelValues, EveryTensorIsTheSameOnOneTwoAndFourCores) {
  const Case c = GetParam();
  const std::string name = c.network;  // a file of tests/e2e/data or a zoo network
  const std::string net =
      name.ends_with(".json") ? std::string(NPUSIM_E2E_DATA) + "/" + name : name;
  const std::string dtype = std::string("--dtype ") + c.dtype;
  const CoreRun one = run_on(1, c.cols, net, c.batch, "tensor", dtype);
  ASSERT_FALSE(one.tensors.empty());
  EXPECT_EQ(split_layers(one.stats), 0);
  for (int cores : {2, 4}) {
    const CoreRun many = run_on(cores, c.cols, net, c.batch, "tensor", dtype);
    ASSERT_FALSE(many.stats.is_null());
    EXPECT_TRUE(many.stats["functional_check"]["within_tolerance"].get<bool>())
        << cores << " cores";
    EXPECT_EQ(many.stats["chip"]["cores_used"].get<int>(), cores);
    EXPECT_NE(many.stats["chip"]["parallel"].get<std::string>().find("tensor parallel (tensor)"),
              std::string::npos);
    int matrix = 0;
    for (const auto& l : many.stats["layers"]) {
      const std::string op = l["op"];
      if (op != "conv2d" && op != "dense" && op != "matmul") continue;
      ++matrix;
      EXPECT_GT(l["cores"].get<int>(), 1) << l["name"];
    }
    EXPECT_GT(matrix, 0);
    for (int c2 = 0; c2 < cores; ++c2) {
      EXPECT_GT(many.stats["cores"][c2]["macs"].get<uint64_t>(), 0u) << "core " << c2;
    }
    EXPECT_EQ(many.stats["macs"], one.stats["macs"]);
    EXPECT_TRUE(many.tensors == one.tensors) << cores << " cores: tensors differ";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Networks, TensorParallelValues,
    testing::Values(Case{"all_ops.json", 4, 2, "int8"}, Case{"all_ops.json", 4, 1, "bf16"},
                    Case{"conv_stack.json", 8, 1, "int8"}, Case{"dense_stack.json", 16, 1, "int8"},
                    Case{"bert-encoder", 32, 1, "int8"}, Case{"bert-encoder", 32, 1, "bf16"}),
    [](const testing::TestParamInfo<Case>& p) {
      std::string name = std::string(p.param.network) + "_" + p.param.dtype;
      for (auto& ch : name) {
        if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
      }
      return name;
    });

// mnist-cnn from the zoo (its convolutions and dense layer split over 16-column arrays).
TEST(TensorParallel, MnistCnnIsBitExactOnTwoAndFourCores) {
  const CoreRun one = run_on(1, 16, "mnist-cnn", 1, "tensor");
  ASSERT_FALSE(one.tensors.empty());
  for (int cores : {2, 4}) {
    const CoreRun many = run_on(cores, 16, "mnist-cnn", 1, "tensor");
    ASSERT_FALSE(many.stats.is_null());
    EXPECT_TRUE(many.stats["functional_check"]["bit_exact"].get<bool>()) << cores << " cores";
    EXPECT_GE(split_layers(many.stats), 2);
    EXPECT_TRUE(many.tensors == one.tensors) << cores << " cores: tensors differ";
  }
}

// dense_stack.json: two dense layers of 256 output channels over 64 tokens, 16 column tiles each
// on a 16x16 array. Split over two cores, each core runs 8 of the 16 tiles of every layer, so its
// matrix units are busy half as long as one core's (within 2 %: the tiles are the same, only the
// weight loads overlap differently), and the run takes at most 60 % of one core's cycles (half,
// plus the input each core loads, the gather through off-chip memory and the layer boundary).
TEST(TensorParallel, TwoCoresHalveTheMatrixBusyCyclesOfAComputeBoundDenseLayer) {
  const std::string net = std::string(NPUSIM_E2E_DATA) + "/dense_stack.json";
  const CoreRun one = run_on(1, 16, net, 1, "tensor");
  const CoreRun two = run_on(2, 16, net, 1, "tensor");
  ASSERT_FALSE(one.stats.is_null());
  ASSERT_FALSE(two.stats.is_null());
  const double single = double(one.stats["units"]["mxu_busy_cycles"].get<uint64_t>());
  ASSERT_EQ(two.stats["cores"].size(), 2u);
  for (int c = 0; c < 2; ++c) {
    const double busy = double(two.stats["cores"][c]["mxu_busy_cycles"].get<uint64_t>());
    EXPECT_NEAR(busy / single, 0.5, 0.01) << "core " << c;
    EXPECT_EQ(two.stats["cores"][c]["macs"].get<uint64_t>() * 2, one.stats["macs"].get<uint64_t>());
  }
  const double total = double(two.stats["total_cycles"].get<uint64_t>()) /
                       double(one.stats["total_cycles"].get<uint64_t>());
  EXPECT_LT(total, 0.6);
  EXPECT_GT(total, 0.5);
}

// At batch 1 on the two-core TPU v4, auto splits bert-encoder's feed-forward layers (3072 output
// channels; 768 back) over both TensorCores and keeps the 768-channel projections (whose split
// would cost more traffic than it saves, by the estimate) and the attention on core 0; the
// assembly says so per layer, and so does stats.json.
TEST(TensorParallel, AutoSplitsTheBigLayersAtBatchOneAndPrintsTheChoice) {
  CommandResult r = run_npusim("compile --hw tpu-v4-like --workload bert-encoder --batch 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("; parallel: tensor parallel (auto: batch 1 on a chip of 2 cores)"),
            std::string::npos)
      << r.out.substr(0, 600);
  const auto layer = [&](const std::string& name) {
    const size_t at = r.out.find("; ---- layer " + name + " (");
    if (at == std::string::npos) return std::string();
    const size_t cores = r.out.find("; cores: ", at);
    return r.out.substr(cores, r.out.find('\n', cores) - cores);
  };
  EXPECT_EQ(layer("intermediate").rfind("; cores: tensor over 2 cores (auto: saves", 0), 0u)
      << layer("intermediate");
  EXPECT_NE(layer("intermediate")
                .find("output channels [0, 1536) on core 0, [1536, 3072) on "
                      "core 1"),
            std::string::npos)
      << layer("intermediate");
  EXPECT_EQ(layer("query").rfind("; cores: core 0 (auto: a split over 2 cores saves", 0), 0u)
      << layer("query");
  EXPECT_EQ(layer("context_heads"), "; cores: core 0 (64 output channels: one array-column tile)");
  EXPECT_EQ(layer("probs"), "; cores: core 0 (vector layers run there)");
  // The memory plan: what a split layer reads or writes is off chip (both cores load
  // attention_norm; intermediate is gathered there), what only core 0 touches may stay on chip.
  const auto plan = [&](const std::string& tensor) {
    const size_t at = r.out.find(";   " + tensor + " ");
    return at == std::string::npos ? std::string() : r.out.substr(at, r.out.find('\n', at) - at);
  };
  EXPECT_NE(plan("attention_norm").find("dram["), std::string::npos) << plan("attention_norm");
  EXPECT_NE(plan("intermediate").find("dram["), std::string::npos) << plan("intermediate");
  EXPECT_NE(plan("probs").find("ub["), std::string::npos) << plan("probs");
  const size_t core1 = r.out.find("\ncore1 ");
  ASSERT_NE(core1, std::string::npos);
  // Core 1's first instruction loads the input core 0's layer norm wrote: a token across cores.
  const std::string first = r.out.substr(core1 + 1, r.out.find('\n', core1 + 1) - core1 - 1);
  EXPECT_NE(first.find("DMA_LOAD"), std::string::npos) << first;
  EXPECT_NE(first.find("wait("), std::string::npos) << first;

  const auto dir = fresh_dir("tensorpar-auto");
  r = run_npusim("run --hw tpu-v4-like --workload bert-encoder --batch 1 --values off --out " +
                 dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json stats = json::parse(slurp(dir / "stats.json"));
  std::map<std::string, json> by_name;
  for (const auto& l : stats["layers"]) by_name[l["name"]] = l;
  EXPECT_EQ(by_name["intermediate"]["cores"], 2);
  EXPECT_EQ(by_name["query"]["cores"], 1);
  EXPECT_EQ(by_name["context_heads"]["parallel"],
            "core 0 (64 output channels: one array-column tile)");
  EXPECT_EQ(stats["chip"]["cores_used"], 2);
  std::filesystem::remove_all(dir);
}

TEST(TensorParallel, BadParallelValueExitsWith2) {
  for (const char* command : {"run", "compile"}) {
    CommandResult r = run_npusim(std::string(command) +
                                 " --hw tpu-v4-like --workload mnist-cnn --parallel columns");
    EXPECT_EQ(r.exit_code, 2) << command;
    EXPECT_TRUE(r.out.empty()) << r.out;
    EXPECT_NE(r.err.find("--parallel 'columns': expected data, tensor, pipeline or auto"),
              std::string::npos)
        << r.err;
  }
}

}  // namespace
