// ConvTranspose end to end (make_deconv_models.py; docs/onnx.md "ConvTranspose"): `npusim run` on
// the models' inputs, int8 bit for bit against the functional reference and bf16 within each
// layer's bound (the run's own check, read from stats.json), and every output against the numpy
// scatter implementation: within 8 % (int8) and 2 % (bf16) of the output's largest magnitude, as
// OnnxEndToEnd. Then what the lowering costs, and the refused attributes.
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

struct Deconv {
  const char* model;
  const char* output;
};
void PrintTo(const Deconv& c, std::ostream* os) { *os << c.model; }

class OnnxConvTranspose : public testing::TestWithParam<Deconv> {};

// Runs the model on make_deconv_models.py's input in `dtype`; returns stats.json after checking
// the output against numpy within `tolerance` of its range.
nlohmann::json run_and_compare(const Deconv& c, const std::string& dtype, double tolerance) {
  const std::string data = std::string(NPUSIM_ONNX_MODELS) + "/" + c.model;
  const auto dir = fresh_dir(std::string("deconv-") + dtype + "-" + c.model);
  const int64_t batch = load_array(c.model, "input").shape.at(0);
  CommandResult r =
      run_npusim("run --hw edge --workload " + model_path(c.model) + " --dtype " + dtype +
                 " --batch " + std::to_string(batch) + " --input " + data + "/input.npy --out " +
                 dir.string() + " --save-outputs " + (dir / "outputs").string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  if (r.exit_code != 0) return {};
  const auto want = load_array(c.model, c.output);
  const std::string got_path = (dir / "outputs" / (std::string(c.output) + ".npy")).string();
  NpyArray got_npy = read_npy(got_path);
  EXPECT_EQ(got_npy.shape, want.shape);
  const std::vector<float> got = npy_to_float32(got_npy, got_path);
  EXPECT_EQ(got.size(), want.values.size());
  float range = 0.0f;
  for (float v : want.values) range = std::max(range, std::fabs(v));
  double worst = 0.0;
  for (size_t i = 0; i < std::min(got.size(), want.values.size()); ++i) {
    worst = std::max(worst, double(std::fabs(got[i] - want.values[i])));
  }
  EXPECT_LE(worst, tolerance * range) << c.model << " " << dtype << ": range " << range;
  nlohmann::json stats = nlohmann::json::parse(slurp(dir / "stats.json"));
  std::filesystem::remove_all(dir);
  return stats;
}

TEST_P(OnnxConvTranspose, Int8BitExactAndWithinToleranceOfNumpy) {
  const nlohmann::json s = run_and_compare(GetParam(), "int8", 0.08);
  ASSERT_FALSE(s.is_null());
  EXPECT_TRUE(s["functional_check"]["bit_exact"].get<bool>());
}

TEST_P(OnnxConvTranspose, Bf16WithinBoundAndWithinToleranceOfNumpy) {
  const nlohmann::json s = run_and_compare(GetParam(), "bf16", 0.02);
  ASSERT_FALSE(s.is_null());
  EXPECT_TRUE(s["functional_check"]["within_tolerance"].get<bool>());
}

INSTANTIATE_TEST_SUITE_P(Models, OnnxConvTranspose,
                         testing::Values(Deconv{"deconv2d", "y"}, Deconv{"deconv2d_grouped", "y"},
                                         Deconv{"deconv1d", "y"}, Deconv{"deconv3d", "y"},
                                         Deconv{"deconv2d_crop", "y"},
                                         Deconv{"deconv2d_output_shape", "y"},
                                         Deconv{"deconv2d_same_lower", "y"},
                                         Deconv{"unet_small", "logits"}));

// deconv2d: 4 -> 3 channels, 3x3 kernel, 5x5 -> 10x10 (stride 2, pads 1, output_padding 1). The
// model's own MACs (each input element times the kernel) are 5*5 * 4 * 3 * 9 = 2700 per image;
// the convolution over the spread input computes every output from a full window,
// 10*10 * 3 * 4 * 9 = 10800: the 8100 more are products with the inserted zeros. The move that
// spreads the input computes nothing.
TEST(OnnxConvTransposeCost, MatrixUnitMultipliesTheInsertedZeros) {
  const auto dir = fresh_dir("deconv-cost");
  CommandResult r = run_npusim("run --hw edge --workload " + model_path("deconv2d") +
                               " --batch 1 --out " + dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto s = nlohmann::json::parse(slurp(dir / "stats.json"));
  ASSERT_EQ(s["layers"].size(), 2u);
  EXPECT_EQ(s["layers"][0]["op"], "ConvTranspose");  // the move, named for its ONNX operator
  EXPECT_EQ(s["layers"][0]["macs"].get<uint64_t>(), 0u);
  EXPECT_EQ(s["layers"][1]["op"], "conv2d");
  EXPECT_EQ(s["layers"][1]["macs"].get<uint64_t>(), 10u * 10 * 3 * 4 * 9);
  std::filesystem::remove_all(dir);
}

TEST(OnnxConvTransposeErrors, RefusedAttributesExitTwoNamingTheNode) {
  for (const auto& [model, message] :
       {std::pair<std::string, std::string>{"bad_deconv_auto_pad",
                                            "node 'y' (ConvTranspose): auto_pad 'SAME_MIDDLE': "
                                            "expected NOTSET, SAME_UPPER, SAME_LOWER or VALID"},
        {"bad_deconv_output_padding",
         "node 'y' (ConvTranspose): output_padding [2, 0] must be less than the stride or the "
         "dilation along each axis"}}) {
    CommandResult r = run_npusim("run --hw edge --workload " + model_path(model));
    EXPECT_EQ(r.exit_code, 2) << model;
    EXPECT_NE(r.err.find(model_path(model) + ": " + message), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace npusim
