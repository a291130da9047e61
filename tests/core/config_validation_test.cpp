// Pins the messages a user sees for a bad hardware description: every problem at once, each as
// "file: /json/pointer: what was expected".
#include <gtest/gtest.h>

#include "arch/hw_config.hpp"
#include "support/error.hpp"
#include "support/json_reader.hpp"

namespace npusim {
namespace {

std::vector<std::string> errors_of(const std::string& text) {
  try {
    parse_hw_config(parse_json_text(text, "hw.json"), "hw.json");
  } catch (const UserErrors& e) {
    return e.messages();
  }
  return {};
}

TEST(ConfigValidation, MinimalFileTakesDefaults) {
  HwConfig c = parse_hw_config(json::parse(R"({"schema_version": 1})"), "hw.json");
  EXPECT_EQ(c.matrix_unit.rows, 128);
  EXPECT_EQ(c.matrix_unit.dataflow, Dataflow::kWeightStationary);
  EXPECT_EQ(c.vector_unit.lanes, 128);  // defaults to the array's columns
}

TEST(ConfigValidation, ResolvedConfigRoundTrips) {
  HwConfig c = load_hw_config("tpu-v1");
  json resolved = to_json(c);
  HwConfig again = parse_hw_config(resolved, "resolved");
  EXPECT_EQ(to_json(again), resolved);
  EXPECT_EQ(resolved["matrix_unit"]["rows"], 256);
  EXPECT_EQ(resolved["buffers"]["unified_buffer"]["capacity_bytes"], 24u << 20);
}

TEST(ConfigValidation, EveryProblemReportedAtOnce) {
  auto errors = errors_of(R"({
    "schema_version": 1,
    "clock_mhz": "fast",
    "matrix_unit": {"rows": 0, "cols": 600, "dataflow": "rs", "colour": "red"},
    "buffers": {"unified_buffer": {"capacity_bytes": 100000, "banks": 3}},
    "data_types": {"activation": "int4"},
    "extra": 1
  })");
  std::vector<std::string> expected = {
      "hw.json: /clock_mhz: expected a number in [1, 10000], got a string",
      "hw.json: /matrix_unit/rows: expected an integer in [1, 512], got 0",
      "hw.json: /matrix_unit/cols: expected an integer in [1, 512], got 600",
      "hw.json: /matrix_unit/dataflow: expected one of \"ws\", \"os\", \"is\", got \"rs\"",
      "hw.json: /matrix_unit/colour: unknown key \"colour\" (known keys here: block_m, cols, "
      "count, dataflow, kind, rows, sparsity, weight_double_buffer, weight_load)",
      "hw.json: /buffers/unified_buffer/banks: capacity_bytes (100000) must be a multiple of banks "
      "(3)",
      "hw.json: /data_types/activation: expected one of \"int8\", \"bf16\", got \"int4\"",
      "hw.json: /extra: unknown key \"extra\" (known keys here: buffers, clock_mhz, cores, "
      "data_types, description, host, interconnect, matrix_unit, memory, name, schema_version, "
      "source, technology_nm, vector_unit)",
  };
  EXPECT_EQ(errors, expected);
}

TEST(ConfigValidation, TechnologyNodeMustHaveAnEnergyTable) {
  EXPECT_EQ(errors_of(R"({"schema_version": 1, "technology_nm": 22})"),
            std::vector<std::string>{"hw.json: /technology_nm: expected one of the nodes of "
                                     "configs/energy (7, 16, 28, 45), got 22"});
  EXPECT_EQ(errors_of(R"({"schema_version": 1, "technology_nm": "28nm"})"),
            std::vector<std::string>{
                "hw.json: /technology_nm: expected an integer in [1, 1000], got a string"});
  EXPECT_EQ(parse_hw_config(json::parse(R"({"schema_version": 1, "technology_nm": 7})"), "hw.json")
                .technology_nm,
            7);
  EXPECT_EQ(load_hw_config("tpu-v1").technology_nm, 28);
  EXPECT_EQ(load_hw_config("edge").technology_nm, 16);
}

TEST(ConfigValidation, Fp8FormatsOfABf16MatrixUnit) {
  HwConfig c = load_hw_config("tpu-v4-like-fp8");
  EXPECT_TRUE(c.data_types.has_fp8(Fp8Format::kE4M3) && c.data_types.has_fp8(Fp8Format::kE5M2));
  EXPECT_EQ(to_json(c)["data_types"]["fp8"], json::parse(R"(["e4m3", "e5m2"])"));
  EXPECT_TRUE(load_hw_config("tpu-v4-like").data_types.fp8.empty());
  EXPECT_FALSE(to_json(load_hw_config("tpu-v4-like"))["data_types"].contains("fp8"));
  EXPECT_EQ(errors_of(R"({"schema_version": 1, "data_types": {"activation": "bf16",
                          "weight": "bf16", "accumulator": "fp32", "fp8": ["e4m3", "e3m4"]}})"),
            std::vector<std::string>{
                "hw.json: /data_types/fp8: expected fp8 formats \"e4m3\" or \"e5m2\", got "
                "\"e3m4\""});
  EXPECT_EQ(errors_of(R"({"schema_version": 1, "data_types": {"fp8": ["e5m2"]}})"),
            std::vector<std::string>{
                "hw.json: /data_types/fp8: fp8 is for bf16 matrix units, this one is int8"});
}

TEST(ConfigValidation, MissingAndWrongSchemaVersion) {
  EXPECT_EQ(errors_of("{}"),
            std::vector<std::string>{"hw.json: /schema_version: required key is missing"});
  EXPECT_EQ(errors_of(R"({"schema_version": 2})"),
            std::vector<std::string>{
                "hw.json: /schema_version: expected 1 (the version this npusim reads), got 2"});
  EXPECT_EQ(errors_of("[1, 2]"), std::vector<std::string>{"hw.json: /: expected an object, got an "
                                                          "array"});
}

TEST(ConfigValidation, CrossFieldBufferChecks) {
  auto errors = errors_of(R"({
    "schema_version": 1,
    "matrix_unit": {"rows": 64, "cols": 64},
    "buffers": {"weight_buffer": {"capacity_bytes": 4096}, "accumulators": {"capacity_bytes": 4096}}
  })");
  std::vector<std::string> expected = {
      "hw.json: /buffers/weight_buffer/capacity_bytes: expected at least 8192 bytes: two 64x64 "
      "weight tiles, so the next tile loads while the array computes; got 4096",
      "hw.json: /buffers/accumulators/capacity_bytes: expected at least 32768 bytes: two 64x64 "
      "int32 output tiles per matrix unit (1 units); got 4096",
  };
  EXPECT_EQ(errors, expected);
}

TEST(ConfigValidation, CubeKindAndItsKeys) {
  HwConfig c = parse_hw_config(
      json::parse(R"({"schema_version": 1, "matrix_unit": {"kind": "cube", "rows": 16,
                      "cols": 16, "block_m": 4}})"),
      "hw.json");
  EXPECT_EQ(c.matrix_unit.kind, MatrixUnitKind::kCube);
  EXPECT_EQ(c.matrix_unit.block_m, 4);
  // A cube is tiled like ws: K <= rows, N <= cols per tile.
  EXPECT_EQ(c.matrix_unit.dataflow, Dataflow::kWeightStationary);
  EXPECT_DOUBLE_EQ(c.peak_macs_per_cycle(), 4.0 * 16 * 16);
  json resolved = to_json(c);
  EXPECT_EQ(resolved["matrix_unit"],
            json::parse(R"({"kind": "cube", "rows": 16, "cols": 16, "block_m": 4, "count": 1})"));
  EXPECT_EQ(to_json(parse_hw_config(resolved, "resolved")), resolved);

  auto errors = errors_of(R"({
    "schema_version": 1,
    "matrix_unit": {"kind": "cube", "dataflow": "os", "weight_double_buffer": false, "block_m": 0}
  })");
  std::vector<std::string> expected = {
      "hw.json: /matrix_unit/dataflow: only for matrix_unit.kind \"systolic\" (this is \"cube\")",
      "hw.json: /matrix_unit/weight_double_buffer: only for matrix_unit.kind \"systolic\" (this "
      "is \"cube\")",
      "hw.json: /matrix_unit/block_m: expected an integer in [1, 512], got 0",
  };
  EXPECT_EQ(errors, expected);
  EXPECT_EQ(errors_of(R"({"schema_version": 1, "matrix_unit": {"block_m": 16, "kind": "tpu"}})"),
            (std::vector<std::string>{
                "hw.json: /matrix_unit/kind: expected one of \"systolic\", \"cube\", got \"tpu\"",
                "hw.json: /matrix_unit/block_m: only for matrix_unit.kind \"cube\" (this is "
                "\"systolic\")"}));
}

// matrix_unit.weight_load: "bank" (default, not written back) or "wavefront" (ws and is only).
TEST(ConfigValidation, WeightLoad) {
  HwConfig c = parse_hw_config(
      json::parse(R"({"schema_version": 1, "matrix_unit": {"weight_load": "wavefront"}})"),
      "hw.json");
  EXPECT_TRUE(c.matrix_unit.weight_load_wavefront);
  EXPECT_EQ(to_json(c)["matrix_unit"]["weight_load"], "wavefront");
  EXPECT_EQ(to_json(parse_hw_config(to_json(c), "resolved")), to_json(c));
  HwConfig d = parse_hw_config(json::parse(R"({"schema_version": 1})"), "hw.json");
  EXPECT_FALSE(d.matrix_unit.weight_load_wavefront);
  EXPECT_FALSE(to_json(d)["matrix_unit"].contains("weight_load"));
  EXPECT_EQ(errors_of(R"({"schema_version": 1,
                          "matrix_unit": {"dataflow": "os", "weight_load": "wavefront"}})"),
            (std::vector<std::string>{
                "hw.json: /matrix_unit/weight_load: \"wavefront\" is for the ws and is dataflows "
                "(an os array loads no stationary operand)"}));
  EXPECT_EQ(errors_of(R"({"schema_version": 1, "matrix_unit": {"weight_load": "row"}})"),
            (std::vector<std::string>{"hw.json: /matrix_unit/weight_load: expected one of "
                                      "\"bank\", \"wavefront\", got \"row\""}));
  EXPECT_EQ(errors_of(R"({"schema_version": 1,
                          "matrix_unit": {"kind": "cube", "weight_load": "bank"}})"),
            (std::vector<std::string>{"hw.json: /matrix_unit/weight_load: only for "
                                      "matrix_unit.kind \"systolic\" (this is \"cube\")"}));
}

TEST(ConfigValidation, PublishedChipPresetsPeak) {
  // TPU v4 (Jouppi et al., ISCA 2023): 275 TFLOPS bf16 and 1.2 TB/s per chip of two TensorCores.
  HwConfig v4 = load_hw_config("tpu-v4-like");
  EXPECT_EQ(v4.cores, 2);
  const double v4_tflops = 2.0 * v4.chip_peak_macs_per_cycle() * v4.clock_mhz * 1e6 / 1e12;
  EXPECT_NEAR(v4_tflops, 275.0, 275.0 * 0.01);
  EXPECT_NEAR(v4.memory.bandwidth_gbps, 1200.0, 1200.0 * 0.03);
  HwConfig core = load_hw_config("tpu-v4-like-core");
  EXPECT_EQ(core.cores, 1);
  const double core_tflops_v4 = 2.0 * core.chip_peak_macs_per_cycle() * core.clock_mhz * 1e6 / 1e12;
  EXPECT_NEAR(core_tflops_v4, 275.0 / 2, 275.0 / 2 * 0.01);
  EXPECT_NEAR(core.memory.bandwidth_gbps, 1200.0 / 2, 1200.0 / 2 * 0.03);
  // Ascend 910 (Hot Chips 31): 256 TFLOPS fp16 over 32 Da Vinci cores.
  HwConfig ascend = load_hw_config("ascend-like");
  EXPECT_EQ(ascend.matrix_unit.kind, MatrixUnitKind::kCube);
  const double core_tflops = 2.0 * ascend.peak_macs_per_cycle() * ascend.clock_mhz * 1e6 / 1e12;
  EXPECT_NEAR(core_tflops, 256.0 / 32, 1e-9);
  // The whole chip: 32 of those cores, 256 TFLOPS, sharing four HBM2 stacks (32 channels).
  HwConfig chip = load_hw_config("ascend-910-like");
  EXPECT_EQ(chip.cores, 32);
  EXPECT_NEAR(2.0 * chip.chip_peak_macs_per_cycle() * chip.clock_mhz * 1e6 / 1e12, 256.0, 1e-9);
  EXPECT_EQ(chip.memory.channels, 32);
}

TEST(ConfigValidation, MalformedJsonNamesLineAndColumn) {
  try {
    parse_json_text("{\n  \"schema_version\": 1,\n  \"clock_mhz\": ,\n}", "bad.json");
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("bad.json:3:16: malformed JSON: syntax error", 0), 0u)
        << e.what();
  }
}

TEST(ConfigValidation, UnknownPresetListsPresets) {
  try {
    load_hw_config("tpu-v9");
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_STREQ(
        e.what(),
        "--hw 'tpu-v9': no such file and no such preset (presets: ascend-910-like, "
        "ascend-like, edge, tpu-v1-hbm, tpu-v1, tpu-v4-like-core, tpu-v4-like-fp8, tpu-v4-like)");
  }
}

TEST(ConfigValidation, ShippedPresetsAreValid) {
  for (const char* name : {"tpu-v1", "edge", "tpu-v1-hbm", "tpu-v4-like", "tpu-v4-like-core",
                           "ascend-like", "ascend-910-like"}) {
    HwConfig c = load_hw_config(name);
    EXPECT_EQ(c.name, name);
    EXPECT_FALSE(c.source.empty()) << name << " must name its source";
  }
  HwConfig tpu = load_hw_config("tpu-v1");
  EXPECT_EQ(tpu.matrix_unit.rows, 256);
  EXPECT_EQ(tpu.matrix_unit.cols, 256);
  EXPECT_DOUBLE_EQ(tpu.clock_mhz, 700.0);
  EXPECT_EQ(tpu.accumulators.capacity_bytes, 4u << 20);
  // DDR3 through the command-level model: two DDR3-2133 channels, 34.1 GB/s.
  EXPECT_EQ(tpu.memory.model, MemoryModel::kDram);
  EXPECT_EQ(tpu.memory.preset, "ddr3-2133");
  EXPECT_DOUBLE_EQ(tpu.memory.bandwidth_gbps, 34.1);
}

}  // namespace
}  // namespace npusim
