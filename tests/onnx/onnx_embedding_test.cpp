// An embedding lookup from the CLI (make_embedding_models.py): int64 / int32 token ids from
// --input, or generated ones, select rows of an initializer table through the indexed DMA; int8
// and bf16 runs are bit-exact against the reference, their outputs agree with numpy, bad ids exit
// 2, and --values off gives the same timing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "onnx_test_models.hpp"
#include "run_npusim.hpp"
#include "support/npy.hpp"

namespace npusim {
namespace {

using nlohmann::json;
using onnx_test::load_array;
using onnx_test::model_path;

const std::string kData = std::string(NPUSIM_ONNX_MODELS) + "/embedding";

json run_stats(const std::string& args, const std::string& name, std::string* out = nullptr) {
  const auto dir = fresh_dir(name);
  CommandResult r = run_npusim("run --hw edge --workload " + model_path("embedding") + " " + args +
                               " --out " + dir.string());
  EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.err;
  if (out != nullptr) *out = r.out;
  json j = json::parse(slurp(dir / "stats.json"));
  std::filesystem::remove_all(dir);
  return j;
}

// Every output within `tolerance` times `range` of numpy's (default range: the largest magnitude
// of numpy's output).
void expect_near_numpy(const std::filesystem::path& dir, const char* name, double tolerance,
                       float range = 0.0f) {
  auto want = load_array("embedding", name);
  const std::string path = (dir / (std::string(name) + ".npy")).string();
  NpyArray got_npy = read_npy(path);
  EXPECT_EQ(got_npy.shape, want.shape) << name;
  std::vector<float> got = npy_to_float32(got_npy, path);
  ASSERT_EQ(got.size(), want.values.size()) << name;
  float worst = 0.0f;
  for (float v : want.values) range = std::max(range, std::fabs(v));
  for (size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::fabs(got[i] - want.values[i]));
  EXPECT_LE(worst, tolerance * range) << name << ": range " << range;
}

TEST(OnnxEmbedding, GivenIdsRunBitExactAndMatchNumpy) {
  for (const char* ids : {"ids", "ids32"}) {
    const auto out_dir = fresh_dir(std::string("embedding-outputs-") + ids);
    CommandResult r =
        run_npusim("run --hw edge --workload " + model_path("embedding") + " --input " + kData +
                   "/" + ids + ".npy --save-outputs " + out_dir.string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("outputs match the reference bit for bit"), std::string::npos) << r.out;
    // The rows are the table's int8 codes on its own scale: within half a step (1 / 254 of the
    // table's largest magnitude); the matmul and layer norm within the int8 tolerance of
    // docs/onnx.md.
    float table_range = 0.0f;
    for (float v : load_array("embedding", "init_table").values) {
      table_range = std::max(table_range, std::fabs(v));
    }
    expect_near_numpy(out_dir, "emb", 0.5 / 127 * (1 + 1e-5), table_range);
    expect_near_numpy(out_dir, "y", 0.08);
    expect_near_numpy(out_dir, "ln", 0.08);
    expect_near_numpy(out_dir, "ln_pos", 0.08);
    std::filesystem::remove_all(out_dir);
  }
}

TEST(OnnxEmbedding, GeneratedIdsRunBitExactWithIndexedLoads) {
  std::string out;
  const json s = run_stats("--batch 3 --seed 5", "embedding-generated", &out);
  EXPECT_TRUE(s["functional_check"]["bit_exact"].get<bool>()) << out;
  // The lookup reads each sample's 8 ids (4 bytes each) and the 8 rows of 16 int8 they select.
  const json& emb = s["layers"][0];
  EXPECT_EQ(emb["op"], "embedding");
  EXPECT_EQ(emb["dram_read_bytes"].get<uint64_t>(), 3u * 8 * (4 + 16));
  EXPECT_EQ(emb["dram_write_bytes"].get<uint64_t>(), 3u * 8 * 16);
}

TEST(OnnxEmbedding, OutOfRangeIdExitsTwoNamingFileAndPosition) {
  CommandResult r = run_npusim("run --hw edge --workload " + model_path("embedding") + " --input " +
                               kData + "/bad_ids.npy");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--input " + kData + "/bad_ids.npy: token id 50 at [1, 5] is outside"),
            std::string::npos)
      << r.err;
}

TEST(OnnxEmbedding, FloatFileExitsTwo) {
  CommandResult r = run_npusim("run --hw edge --workload " + model_path("embedding") + " --input " +
                               kData + "/emb.npy");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--input " + kData + "/emb.npy: expected token ids of shape [batch, 8]"),
            std::string::npos)
      << r.err;
}

// Token ids read by anything but a Gather of an initializer are refused at import, naming the node.
TEST(OnnxEmbedding, IdsFeedingOtherNodesExitTwo) {
  CommandResult r = run_npusim("run --hw edge --workload " + model_path("embedding_bad"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(model_path("embedding_bad") +
                       ": graph input 'input_ids': element type INT64: an integer graph input "
                       "must be the indices of Gathers on an initializer (an embedding lookup), "
                       "but node 'ids_cast' (Cast) reads it as input 0"),
            std::string::npos)
      << r.err;
}

// A Reshape of the token ids is followed when it keeps their shape, refused when it changes it.
TEST(OnnxEmbedding, IdsReshapedToAnotherShapeExitTwo) {
  CommandResult r = run_npusim("run --hw edge --workload " + model_path("embedding_reshape_bad"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(model_path("embedding_reshape_bad") +
                       ": node 'ids_flatten' (Reshape): reshapes the token ids [2, 8] to [16]"),
            std::string::npos)
      << r.err;
}

// Data parallel over the two cores of tpu-v4-like (2 + 1 samples): each core's indexed loads read
// its own ids (relocated with its part of the input) and the shared table.
TEST(OnnxEmbedding, DataParallelOnTwoCoresStaysBitExact) {
  const auto dir = fresh_dir("embedding-2cores");
  CommandResult r =
      run_npusim("run --hw tpu-v4-like --dtype int8 --workload " + model_path("embedding") +
                 " --batch 3 --parallel data --out " + dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json s = json::parse(slurp(dir / "stats.json"));
  EXPECT_TRUE(s["functional_check"]["bit_exact"].get<bool>());
  EXPECT_EQ(s["chip"]["cores_used"].get<int>(), 2);
  std::filesystem::remove_all(dir);
}

// bf16 (tpu-v4-like's default): the rows are the table rounded to bf16 (within 2^-8 of each
// value), the rest within the bf16 tolerance of docs/onnx.md.
TEST(OnnxEmbedding, Bf16RunsTheTableRoundedToBf16) {
  const auto out_dir = fresh_dir("embedding-bf16");
  CommandResult r = run_npusim("run --hw tpu-v4-like --workload " + model_path("embedding") +
                               " --input " + kData + "/ids.npy --save-outputs " + out_dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("outputs match the reference bit for bit"), std::string::npos) << r.out;
  float table_range = 0.0f;
  for (float v : load_array("embedding", "init_table").values) {
    table_range = std::max(table_range, std::fabs(v));
  }
  expect_near_numpy(out_dir, "emb", 1.0 / 256, table_range);
  expect_near_numpy(out_dir, "y", 0.02);
  expect_near_numpy(out_dir, "ln", 0.02);
  expect_near_numpy(out_dir, "ln_pos", 0.02);
  std::filesystem::remove_all(out_dir);
}

// The ids reach the indexed DMA through the memory's debug transport even without values, so
// the lookup reads the same rows at the same cycles.
TEST(OnnxEmbedding, ValuesOffGivesTheSameTiming) {
  const std::string args = "--input " + kData + "/ids.npy";
  const json on = run_stats(args, "embedding-values-on");
  const json off = run_stats(args + " --values off", "embedding-values-off");
  EXPECT_EQ(off["values"], "off");
  EXPECT_GT(on["total_cycles"].get<uint64_t>(), 0u);
  EXPECT_EQ(on["total_cycles"], off["total_cycles"]);
  EXPECT_EQ(on["layers"], off["layers"]);
  EXPECT_EQ(on["memory"], off["memory"]);
}

}  // namespace
}  // namespace npusim
