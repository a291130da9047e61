// ONNX models end to end from the CLI. OnnxCli: `npusim run --workload M.onnx` on a random
// input, outputs bit-exact against the functional reference, and bad models' exit codes.
// OnnxEndToEnd: `npusim run --workload M.onnx --input x.npy --save-outputs DIR` on the batch
// make_models.py wrote, compared with the outputs of its independent numpy float implementation.
//
// Layout at the file boundary: an ONNX model's input and outputs are in ONNX layout (NCHW /
// NCDHW), as a user feeds and reads them with any ONNX runtime.
//
// Tolerance: every output element within a fraction of the largest magnitude of the float
// result: 8% in int8 (calibrated scales), 2% in bf16. A layout or permutation bug moves values by
// the order of the whole range and fails this by far.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "onnx_test_models.hpp"
#include "run_npusim.hpp"
#include "support/npy.hpp"

namespace npusim {
namespace {

using onnx_test::load_array;
using onnx_test::model_path;

constexpr double kInt8RelativeTolerance = 0.08;
constexpr double kBf16RelativeTolerance = 0.02;

struct Case {
  const char* model;
  std::vector<const char*> outputs;
  // docs/onnx.md "Rank mapping": the model runs as one whole tensor; no --batch, and the files
  // hold the ONNX shapes exactly.
  bool whole_tensor = false;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.model; }

class OnnxEndToEnd : public testing::TestWithParam<Case> {};

// Runs `c` with `dtype` on make_models.py's input and compares every output with numpy: each
// element within `tolerance` times the largest magnitude of the float result.
void expect_outputs_match_numpy(const Case& c, const std::string& dtype, double tolerance) {
  const std::string data = std::string(NPUSIM_ONNX_MODELS) + "/" + c.model;
  auto out_dir = fresh_dir(std::string("onnx-") + dtype + "-" + c.model);
  const int64_t batch = load_array(c.model, "input").shape.at(0);
  const std::string batch_flag = c.whole_tensor ? "" : " --batch " + std::to_string(batch);
  CommandResult r =
      run_npusim("run --hw edge --workload " + model_path(c.model) + " --dtype " + dtype +
                 batch_flag + " --input " + data + "/input.npy --save-outputs " + out_dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* name : c.outputs) {
    auto want = load_array(c.model, name);
    const std::string got_path = (out_dir / (std::string(name) + ".npy")).string();
    ASSERT_TRUE(std::filesystem::exists(got_path)) << got_path;
    NpyArray got_npy = read_npy(got_path);
    EXPECT_EQ(got_npy.shape, want.shape) << name;
    std::vector<float> got = npy_to_float32(got_npy, got_path);
    ASSERT_EQ(got.size(), want.values.size()) << name;
    float range = 0.0f;
    for (float v : want.values) range = std::max(range, std::fabs(v));
    size_t worst = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      if (std::fabs(got[i] - want.values[i]) > std::fabs(got[worst] - want.values[worst])) {
        worst = i;
      }
    }
    EXPECT_LE(std::fabs(got[worst] - want.values[worst]), tolerance * range)
        << c.model << " (" << dtype << ") output " << name << ": element " << worst << " is "
        << got[worst] << ", numpy says " << want.values[worst] << " (range " << range << ")";
  }
  std::filesystem::remove_all(out_dir);
}

TEST_P(OnnxEndToEnd, Int8OutputsMatchNumpyWithinTolerance) {
  expect_outputs_match_numpy(GetParam(), "int8", kInt8RelativeTolerance);
}

TEST_P(OnnxEndToEnd, Bf16OutputsMatchNumpyWithinTolerance) {
  expect_outputs_match_numpy(GetParam(), "bf16", kBf16RelativeTolerance);
}

class OnnxCli : public testing::TestWithParam<Case> {};

// Random input (--seed), int8: the simulated outputs equal the functional reference bit for bit.
TEST_P(OnnxCli, RunsBitExactAgainstTheReference) {
  const Case c = GetParam();
  auto out_dir = fresh_dir(std::string("onnx-cli-") + c.model);
  CommandResult r =
      run_npusim("run --hw edge --workload " + model_path(c.model) + " --out " + out_dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("outputs match the reference bit for bit"), std::string::npos) << r.out;
  auto stats = nlohmann::json::parse(slurp(out_dir / "stats.json"));
  EXPECT_TRUE(stats["functional_check"]["bit_exact"].get<bool>());
  std::filesystem::remove_all(out_dir);
}

// Data parallel over the two cores of tpu-v4-like (2 + 1 images): the movement model's Pad
// constants are parameters the lowering places after the tensors, in each core's own off-chip
// region; each core must read its own copy, so the run stays bit-exact.
TEST(OnnxCli, MoveConstantsOnTwoCoresStayBitExact) {
  auto out_dir = fresh_dir("onnx-cli-movement-2cores");
  CommandResult r = run_npusim("run --hw tpu-v4-like --workload " + model_path("movement") +
                               " --batch 3 --parallel data --out " + out_dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto stats = nlohmann::json::parse(slurp(out_dir / "stats.json"));
  EXPECT_TRUE(stats["functional_check"]["bit_exact"].get<bool>());
  EXPECT_EQ(stats["chip"]["cores_used"].get<int>(), 2);
  std::filesystem::remove_all(out_dir);
}

TEST(OnnxCliErrors, BadModelExitsTwoNamingTheNodes) {
  CommandResult r = run_npusim("run --hw edge --workload " + model_path("bad_ops"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(model_path("bad_ops") +
                       ": node 'topk_1' (TopK): operator not supported (supported: Conv"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(model_path("bad_ops") + ": node 'cat_n' (Concat): concatenation along "
                                               "axis 0 (the batch axis"),
            std::string::npos)
      << r.err;
}

TEST(OnnxCliErrors, CorruptFileExitsTwo) {
  CommandResult r = run_npusim("run --hw edge --workload " + model_path("corrupt_truncated"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(model_path("corrupt_truncated") +
                       ": not a valid ONNX model (protobuf parse failed)"),
            std::string::npos)
      << r.err;
}

const auto kModels = testing::Values(
    Case{"cnn", {"probs"}}, Case{"mlp", {"logits"}}, Case{"flatten_dense", {"y"}},
    Case{"conv_grouped", {"y"}}, Case{"conv_depthwise", {"y"}}, Case{"conv3d", {"y"}},
    Case{"pools", {"cat", "max", "max_ceil", "avg_ceil"}},
    Case{"activations", {"relu6", "clip", "sum"}}, Case{"sequence", {"y"}},
    Case{"reduce_squeeze", {"y1", "y2"}}, Case{"aliases", {"y"}}, Case{"pad_conv", {"y"}},
    Case{"opset11", {"y"}}, Case{"flatten_layernorm", {"y"}}, Case{"attention", {"y"}},
    Case{"scale_fold", {"y", "gap"}}, Case{"arith_consts", {"y", "d"}},
    Case{"bn_alone", {"y", "e"}}, Case{"whole_tensor", {"y"}, true}, Case{"rank1", {"y"}, true},
    Case{"reduce_rows", {"feat_mean", "y"}}, Case{"gemm_row_bias", {"y"}, true},
    Case{"layernorm_axes", {"y"}}, Case{"matmul_ranks", {"y1", "y2"}}, Case{"bn_rows", {"y"}},
    Case{"rms_norm", {"y1", "y2"}});

// make_movement_models.py: data movement and exporter-style blocks.
const auto kMovementModels = testing::Values(
    Case{"movement",
         {"sliced", "reversed", "split_a", "split_b", "up", "up_sizes", "cat_c", "cat_h", "xt",
          "nhwc", "padded", "reflected", "edged", "gathered", "flat_hw", "unsq", "flat"}},
    Case{"resnet_block", {"logits", "logits2"}}, Case{"bert_attention", {"y", "cls", "probs"}},
    Case{"mobilenet_block", {"y", "reflect_relu"}},
    Case{"composed", {"up_linear", "down_cubic", "sm_h"}},
    Case{"composed_whole", {"mm", "g", "sm0"}, true});

// make_gap_models.py: the conformance gaps (LayerNormalization's Mean / InvStdDev, 1-D pools,
// MaxPool dilations).
const auto kGapModels = testing::Values(
    Case{"layernorm_stats", {"y", "mean", "inv_std", "y2", "mean2", "inv_std2", "mean_relu"}},
    Case{"layernorm_map", {"y", "mean", "inv_std", "y1", "mean1", "inv_std1"}},
    Case{"pools_1d", {"max", "avg", "avg_pad"}}, Case{"maxpool_dilated", {"d2", "d21", "d3_1d"}},
    Case{"whole_batch_maps", {"gap", "gmax", "tt", "conv1d"}, true});

std::string model_name(const testing::TestParamInfo<Case>& param_info) {
  return param_info.param.model;
}

INSTANTIATE_TEST_SUITE_P(Models, OnnxCli, kModels, model_name);

INSTANTIATE_TEST_SUITE_P(Models, OnnxEndToEnd, kModels, model_name);
INSTANTIATE_TEST_SUITE_P(Movement, OnnxCli, kMovementModels, model_name);
INSTANTIATE_TEST_SUITE_P(Movement, OnnxEndToEnd, kMovementModels, model_name);
INSTANTIATE_TEST_SUITE_P(Gaps, OnnxCli, kGapModels, model_name);
INSTANTIATE_TEST_SUITE_P(Gaps, OnnxEndToEnd, kGapModels, model_name);

}  // namespace
}  // namespace npusim
