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
      "hw.json: /matrix_unit/colour: unknown key \"colour\" (known keys here: cols, count, "
      "dataflow, rows, weight_double_buffer)",
      "hw.json: /buffers/unified_buffer/banks: capacity_bytes (100000) must be a multiple of banks "
      "(3)",
      "hw.json: /data_types/activation: expected one of \"int8\", \"bf16\", got \"int4\"",
      "hw.json: /extra: unknown key \"extra\" (known keys here: buffers, clock_mhz, data_types, "
      "description, matrix_unit, memory, name, schema_version, source, vector_unit)",
  };
  EXPECT_EQ(errors, expected);
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
        "--hw 'tpu-v9': no such file and no such preset (presets: edge, tpu-v1-hbm, tpu-v1)");
  }
}

TEST(ConfigValidation, ShippedPresetsAreValid) {
  for (const char* name : {"tpu-v1", "edge", "tpu-v1-hbm"}) {
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
