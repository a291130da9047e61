// `npusim run --calibration FILE.npy --calibration-method max|percentile` and
// `--save-float-outputs`: a separate calibration batch is checked like --input, changes the
// scales, keeps the run bit-exact, and the report says what was calibrated on.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "run_npusim.hpp"
#include "support/npy.hpp"

namespace {

using nlohmann::json;

// mnist-cnn's input: [batch, 28, 28, 1], channels last. Values a smooth pattern times `gain`.
std::vector<float> images(int batch, float gain, int phase) {
  std::vector<float> x(size_t(batch) * 784);
  for (size_t i = 0; i < x.size(); ++i) x[i] = gain * std::sin(0.05f * float(i) + float(phase));
  return x;
}

class CalibrationCli : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fresh_dir("calibration-" +
                     std::string(testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string file(const std::string& name) const { return (dir_ / name).string(); }
  std::string write_images(const std::string& name, int batch, float gain, int phase) const {
    npusim::write_npy_float32(file(name), {batch, 28, 28, 1}, images(batch, gain, phase));
    return file(name);
  }
  // Runs mnist-cnn on tpu-v1 with `args`; returns stats.json, expecting exit 0 and a bit-exact
  // check.
  json run_ok(const std::string& args, const std::string& out, std::string* stdout_text = nullptr) {
    CommandResult r = run_npusim("run --hw tpu-v1 --workload mnist-cnn " + args + " --out " +
                                 file(out) + " --save-outputs " + file(out + "/outputs"));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    if (stdout_text) *stdout_text = r.out;
    json stats = json::parse(slurp(file(out + "/stats.json")));
    EXPECT_TRUE(stats["functional_check"]["bit_exact"].get<bool>()) << args;
    return stats;
  }
  std::filesystem::path dir_;
};

TEST_F(CalibrationCli, WithoutAFileTheRunsInputIsCalibratedOnAndTheReportSaysSo) {
  std::string text;
  const json s = run_ok("--batch 2", "a", &text);
  EXPECT_EQ(s["quantization"]["calibration"], "input");
  EXPECT_EQ(s["quantization"]["calibration_samples"], 2);
  EXPECT_EQ(s["quantization"]["calibration_method"], "max");
  EXPECT_EQ(s["quantization"]["calibration_percentile"], 0.0);
  EXPECT_NE(text.find("calibration        int8 scales from the run's input (2 samples), max |x|"),
            std::string::npos)
      << text;
  EXPECT_NE(slurp(file("a/report.txt")).find("int8 scales from the run's input"),
            std::string::npos);
}

TEST_F(CalibrationCli, AFileOfAnyBatchSizeChangesTheScalesAndTheRunStaysBitExact) {
  const std::string input = write_images("input.npy", 2, 1.0f, 0);
  const std::string wide = write_images("wide.npy", 5, 2.0f, 1);
  const std::string narrow = write_images("narrow.npy", 3, 0.5f, 2);
  std::string text;
  const json a = run_ok("--input " + input + " --calibration " + wide, "wide", &text);
  EXPECT_EQ(a["quantization"]["calibration"], "file:" + wide);
  EXPECT_EQ(a["quantization"]["calibration_samples"], 5);
  EXPECT_EQ(a["batch"], 2);
  EXPECT_NE(text.find("int8 scales from file:" + wide + " (5 samples), max |x|"), std::string::npos)
      << text;
  run_ok("--input " + input + " --calibration " + narrow, "narrow");
  run_ok("--input " + input, "own");
  // The input scale npusim compile prints is the calibration file's magnitude / 127: the wide
  // batch's is 4x the narrow one's (gains 2 and 0.5).
  const auto input_scale = [&](const std::string& calibration) {
    CommandResult c =
        run_npusim("compile --hw tpu-v1 --workload mnist-cnn --calibration " + calibration);
    EXPECT_EQ(c.exit_code, 0) << c.err;
    const size_t at = c.out.find(" int8 scale ", c.out.find("; input  image"));
    return at == std::string::npos ? 0.0 : std::stod(c.out.substr(at + 12));
  };
  EXPECT_NEAR(input_scale(wide) / input_scale(narrow), 4.0, 1e-3);
  EXPECT_NEAR(input_scale(wide), 2.0 / 127, 1e-4);
  // Same network, same input, other scales: the outputs (real values) differ.
  const std::string y = "/outputs/probs.npy";
  const auto wide_y = slurp(file("wide" + y)), narrow_y = slurp(file("narrow" + y)),
             own_y = slurp(file("own" + y));
  ASSERT_FALSE(wide_y.empty());
  EXPECT_NE(wide_y, narrow_y);
  EXPECT_NE(wide_y, own_y);
}

TEST_F(CalibrationCli, PercentileRunsBitExactAndIsReported) {
  const std::string input = write_images("input.npy", 2, 1.0f, 0);
  std::vector<float> tail = images(8, 1.0f, 3);
  tail[17] = 40.0f;  // one outlier pixel
  npusim::write_npy_float32(file("tail.npy"), {8, 28, 28, 1}, tail);
  std::string text;
  const json s = run_ok("--input " + input + " --calibration " + file("tail.npy") +
                            " --calibration-method percentile --calibration-percentile 99.9",
                        "p", &text);
  EXPECT_EQ(s["quantization"]["calibration_method"], "percentile");
  EXPECT_EQ(s["quantization"]["calibration_percentile"], 99.9);
  EXPECT_NE(text.find("99.9th percentile of |x|"), std::string::npos) << text;
  run_ok("--input " + input + " --calibration " + file("tail.npy"), "m");
  EXPECT_NE(slurp(file("p/outputs/probs.npy")), slurp(file("m/outputs/probs.npy")));
}

TEST_F(CalibrationCli, BadFilesExitTwoNamingThem) {
  const std::string missing = file("missing.npy");
  CommandResult r = run_npusim("run --hw tpu-v1 --workload mnist-cnn --calibration " + missing);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--calibration " + missing + ": cannot open file"), std::string::npos)
      << r.err;
  r = run_npusim("compile --hw tpu-v1 --workload mnist-cnn --calibration " + missing);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--calibration " + missing + ": cannot open file"), std::string::npos)
      << r.err;

  npusim::write_npy_float32(file("shape.npy"), {2, 28, 28}, std::vector<float>(2 * 784, 0.5f));
  r = run_npusim("run --hw tpu-v1 --workload mnist-cnn --calibration " + file("shape.npy"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--calibration " + file("shape.npy") +
                       ": expected an array of shape [batch, 28, 28, 1] (channels last layout), "
                       "got [2, 28, 28]"),
            std::string::npos)
      << r.err;

  // complex64: a dtype npusim does not read.
  npusim::NpyArray c{"float32", {1, 28, 28, 1}, std::vector<uint8_t>(784 * 4, 0)};
  npusim::write_npy(file("complex.npy"), c);
  std::string bytes = slurp(file("complex.npy"));
  bytes.replace(bytes.find("<f4"), 3, "<c8");
  bytes.append(784 * 4, '\0');
  std::ofstream(file("complex.npy"), std::ios::binary) << bytes;
  r = run_npusim("run --hw tpu-v1 --workload mnist-cnn --calibration " + file("complex.npy"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--calibration " + file("complex.npy") + ": unsupported dtype '<c8'"),
            std::string::npos)
      << r.err;

  std::vector<float> nan = images(1, 1.0f, 0);
  nan[5] = NAN;
  npusim::write_npy_float32(file("nan.npy"), {1, 28, 28, 1}, nan);
  r = run_npusim("run --hw tpu-v1 --workload mnist-cnn --calibration " + file("nan.npy"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--calibration " + file("nan.npy") + ": holds NaN or infinity"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(file("out")));
}

TEST_F(CalibrationCli, BadMethodsAndValuesExitTwo) {
  const std::string run = "run --hw tpu-v1 --workload mnist-cnn ";
  const std::vector<std::pair<std::string, std::string>> cases{
      {"--calibration-method entropy",
       "--calibration-method 'entropy': expected max or percentile"},
      {"--calibration-method percentile --calibration-percentile 100.5",
       "--calibration-percentile 100.5: expected 50 to 100"},
      {"--calibration-method percentile --calibration-percentile 20",
       "--calibration-percentile 20: expected 50 to 100"},
      {"--calibration-percentile 99",
       "--calibration-percentile needs --calibration-method "
       "percentile"},
      {"--calibration-method percentile --calibration-percentile nine",
       "the argument ('nine') for option '--calibration-percentile' is invalid"},
      {"--dtype bf16 --calibration " + file("x.npy"),
       "--calibration " + file("x.npy") + ": only int8 runs calibrate scales"},
  };
  for (const auto& [args, message] : cases) {
    CommandResult r = run_npusim(run + args);
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_NE(r.err.find(message), std::string::npos) << args << "\n" << r.err;
  }
}

// The float32 reference's outputs: the graph's layout, close to the int8 run's (mnist-cnn's
// probabilities), not equal to them.
TEST_F(CalibrationCli, SavesTheFloatReferenceOutputs) {
  const std::string input = write_images("input.npy", 3, 1.0f, 0);
  run_ok("--input " + input + " --save-float-outputs " + file("float"), "q");
  const npusim::NpyArray f = npusim::read_npy(file("float/probs.npy"));
  const npusim::NpyArray q = npusim::read_npy(file("q/outputs/probs.npy"));
  EXPECT_EQ(f.shape, (std::vector<int64_t>{3, 10}));
  ASSERT_EQ(f.shape, q.shape);
  const auto fv = npusim::npy_to_float32(f, "f"), qv = npusim::npy_to_float32(q, "q");
  double diff = 0.0, sum = 0.0;
  for (size_t i = 0; i < fv.size(); ++i) {
    diff = std::max(diff, double(std::fabs(fv[i] - qv[i])));
    sum += fv[i];
  }
  EXPECT_NEAR(sum, 3.0, 1e-4) << "three softmax rows";
  EXPECT_GT(diff, 0.0);
  EXPECT_LT(diff, 0.1);
}

}  // namespace
