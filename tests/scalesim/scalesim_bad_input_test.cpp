// Malformed SCALE-Sim configs, topologies and command lines: each is a user error (exit code 2)
// whose message names the file, the line and the field, and a failed run leaves no report.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "compat/scalesim/scalesim_cli.hpp"
#include "compat/scalesim/scalesim_config.hpp"
#include "compat/scalesim/scalesim_topology.hpp"
#include "support/error.hpp"
#include "tests/scalesim/scalesim_test_util.hpp"

namespace npusim::scalesim {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;
using testing::write_text;

const char* const kGoodConfig =
    "[general]\n"
    "run_name = t\n"
    "\n"
    "[architecture_presets]\n"
    "ArrayHeight:    8\n"
    "ArrayWidth:     8\n"
    "IfmapSramSzkB:    1\n"
    "FilterSramSzkB:   1\n"
    "OfmapSramSzkB:    1\n"
    "IfmapOffset:    0\n"
    "FilterOffset:   10000000\n"
    "OfmapOffset:    20000000\n"
    "Bandwidth : 10\n"
    "Dataflow : os\n"
    "MemoryBanks:   1\n"
    "\n"
    "[run_presets]\n"
    "InterfaceBandwidth: CALC\n";

std::string replace(std::string text, const std::string& from, const std::string& to) {
  const size_t pos = text.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  if (pos != std::string::npos) text.replace(pos, from.size(), to);
  return text;
}

std::string config_error(const std::string& text) {
  try {
    parse_config(text, "a.cfg");
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no error)";
}

std::string topology_error(const std::string& text, TopologyKind kind = TopologyKind::kConv) {
  try {
    parse_topology(text, "topo.csv", kind);
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ScalesimBadInput, GoodConfigParses) {
  const Config c = parse_config(kGoodConfig, "a.cfg");
  EXPECT_EQ(c.run_name, "t");
  EXPECT_EQ(c.array_rows, 8);
  EXPECT_EQ(c.dataflow, Dataflow::kOutputStationary);
  EXPECT_EQ(c.bandwidth_mode, BandwidthMode::kCalc);
}

TEST(ScalesimBadInput, MissingField) {
  EXPECT_EQ(config_error(replace(kGoodConfig, "ArrayWidth:     8\n", "")),
            "a.cfg: section [architecture_presets] (line 4): missing field 'ArrayWidth'");
}

TEST(ScalesimBadInput, NonNumericField) {
  EXPECT_EQ(config_error(replace(kGoodConfig, "ArrayHeight:    8", "ArrayHeight: eight")),
            "a.cfg:5: field 'ArrayHeight': expected a positive integer, got 'eight'");
  EXPECT_EQ(config_error(replace(kGoodConfig, "IfmapSramSzkB:    1", "IfmapSramSzkB: 0")),
            "a.cfg:7: field 'IfmapSramSzkB': expected a positive integer, got '0'");
}

TEST(ScalesimBadInput, BadDataflow) {
  EXPECT_EQ(config_error(replace(kGoodConfig, "Dataflow : os", "Dataflow : rs")),
            "a.cfg:14: field 'Dataflow': expected os, ws or is, got 'rs'");
}

TEST(ScalesimBadInput, BadBandwidthMode) {
  EXPECT_EQ(config_error(replace(kGoodConfig, "InterfaceBandwidth: CALC", "InterfaceBandwidth: x")),
            "a.cfg:18: field 'InterfaceBandwidth': expected CALC or USER, got 'x'");
}

TEST(ScalesimBadInput, UserModeNeedsBandwidth) {
  std::string text = replace(kGoodConfig, "InterfaceBandwidth: CALC", "InterfaceBandwidth: USER");
  text = replace(text, "Bandwidth : 10\n", "");
  EXPECT_EQ(config_error(text),
            "a.cfg: section [architecture_presets] (line 4): missing field 'Bandwidth'");
}

TEST(ScalesimBadInput, MissingSection) {
  EXPECT_EQ(config_error(replace(kGoodConfig, "[run_presets]\nInterfaceBandwidth: CALC\n", "")),
            "a.cfg: missing section [run_presets]");
}

TEST(ScalesimBadInput, AllConfigErrorsAtOnce) {
  std::string text = replace(kGoodConfig, "Dataflow : os", "Dataflow : rs");
  text = replace(text, "ArrayHeight:    8", "ArrayHeight: -3");
  EXPECT_EQ(config_error(text),
            "a.cfg:5: field 'ArrayHeight': expected a positive integer, got '-3'\n"
            "a.cfg:14: field 'Dataflow': expected os, ws or is, got 'rs'");
}

TEST(ScalesimBadInput, TopologyNonNumericField) {
  EXPECT_EQ(topology_error("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, "
                           "Channels, Num Filter, Strides,\n"
                           "a, 8, 8, 3, 3, 1, 4, 1,\n"
                           "b, 8, 8, 3, 3, 1, 4, 1,\n"
                           "c, 8, 8, 3, 3, 1, 4, x,\n"),
            "topo.csv:4: field 'Strides': expected a positive integer, got 'x'");
}

// Found by fuzzing: one short row asked for half a million layers (and could ask for billions).
TEST(ScalesimBadInput, TopologyDepthwiseChannelsBounded) {
  EXPECT_EQ(topology_error("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, "
                           "Channels, Num Filter, Strides,\n"
                           "dw_DP, 8, 8, 3, 3, 9999999999, 1, 1,\n"),
            "topo.csv:2: field 'Channels': a depthwise layer (its name contains DP) becomes one "
            "layer per channel; expected at most 65536, got '9999999999'");
}

// And the whole file: rows each within the per-row bound may not add up to more than 16384
// layers (fuzzing spent most of its time building such topologies).
TEST(ScalesimBadInput, TopologyLayersBoundedInAll) {
  EXPECT_EQ(topology_error("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, "
                           "Channels, Num Filter, Strides,\n"
                           "a_DP, 8, 8, 3, 3, 10000, 1, 1,\n"
                           "b_DP, 8, 8, 3, 3, 6384, 1, 1,\n"
                           "c_DP, 8, 8, 3, 3, 1, 1, 1,\n"),
            "topo.csv:4: field 'Channels': this depthwise layer brings the topology to 16385 "
            "layers; expected at most 16384 in all");
}

TEST(ScalesimBadInput, TopologyMissingTrailingComma) {
  EXPECT_EQ(topology_error("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, "
                           "Channels, Num Filter, Strides,\n"
                           "a, 8, 8, 3, 3, 1, 4, 1\n"),
            "topo.csv:2: expected the row to end with ',' (SCALE-Sim ignores the text after the "
            "last comma, here '1')");
}

TEST(ScalesimBadInput, TopologyWrongFieldCount) {
  EXPECT_EQ(topology_error("Layer, M, N, K,\nfc, 4, 5,\n", TopologyKind::kGemm),
            "topo.csv:2: expected 4 fields (name, M, N, K) followed by ',', got 3");
}

TEST(ScalesimBadInput, TopologyFilterLargerThanIfmap) {
  EXPECT_EQ(topology_error("header,\na, 2, 8, 3, 3, 1, 4, 1,\n"),
            "topo.csv:2: field 'Filter Height': expected at most the IFMAP Height 2, got '3'");
}

TEST(ScalesimBadInput, EmptyTopology) {
  EXPECT_EQ(topology_error("Layer, M, N, K,\n\n", TopologyKind::kGemm),
            "topo.csv: no layers: expected a header line followed by at least one row like "
            "'layer1, 512, 512, 512,'");
}

TEST(ScalesimBadInput, GemmRowsWithoutTrailingCommaAreAccepted) {
  const auto layers =
      parse_topology("Layer,M,N,K\nQKT,1024,1024,64\n", "g.csv", TopologyKind::kGemm);
  ASSERT_EQ(layers.size(), 1u);
  EXPECT_EQ(layers[0].ifmap_h, 1024);  // M
  EXPECT_EQ(layers[0].ifmap_w, 64);    // K
  EXPECT_EQ(layers[0].filter_w, 64);
  EXPECT_EQ(layers[0].num_filters, 1024);  // N
}

TEST(ScalesimTopology, ColumnStrideAndDepthwiseLayers) {
  // A 9th field is the column stride; a name containing "DP" is a depthwise layer, run as one
  // single-channel layer per channel, named <name>Channel_<i>.
  const auto layers = parse_topology(
      "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, "
      "Strides,\n"
      "c1, 9, 11, 3, 3, 4, 8, 2, 3,\n"
      "dw_DP, 8, 8, 3, 3, 3, 1, 1,\n",
      "t.csv", TopologyKind::kConv);
  ASSERT_EQ(layers.size(), 4u);
  EXPECT_EQ(layers[0].stride_h, 2);
  EXPECT_EQ(layers[0].stride_w, 3);
  EXPECT_EQ(layers[1].name, "dw_DPChannel_0");
  EXPECT_EQ(layers[3].name, "dw_DPChannel_2");
  EXPECT_EQ(layers[3].channels, 1);
  EXPECT_EQ(layers[3].stride_w, 1);
}

class ScalesimCli : public ::testing::Test {
 protected:
  TempDir dir_{"cli"};
  fs::path cfg_ = dir_.path() / "a.cfg";
  fs::path topo_ = dir_.path() / "t.csv";
  fs::path out_ = dir_.path() / "out";
  void SetUp() override {
    write_text(cfg_, kGoodConfig);
    write_text(topo_, "Layer, M, N, K,\nfc, 20, 12, 28,\n");
  }
  int run(std::vector<std::string> args) { return run_cli(args); }
};

TEST_F(ScalesimCli, SuccessWritesThreeReportsUnderRunName) {
  EXPECT_EQ(
      run({"-q", "-c", cfg_.string(), "-t", topo_.string(), "-i", "gemm", "-p", out_.string()}), 0);
  EXPECT_TRUE(fs::exists(out_ / "t" / "COMPUTE_REPORT.csv"));
  EXPECT_TRUE(fs::exists(out_ / "t" / "BANDWIDTH_REPORT.csv"));
  EXPECT_TRUE(fs::exists(out_ / "t" / "DETAILED_ACCESS_REPORT.csv"));
  EXPECT_FALSE(fs::exists(out_ / "t" / "COMPUTE_REPORT.csv.tmp"));
}

TEST_F(ScalesimCli, BadTopologyExitsTwoAndLeavesNoReport) {
  // A previous successful run's reports must not survive a failed run into the same place.
  ASSERT_EQ(
      run({"-q", "-c", cfg_.string(), "-t", topo_.string(), "-i", "gemm", "-p", out_.string()}), 0);
  write_text(topo_, "Layer, M, N, K,\nfc, 20, x, 28,\n");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(
      run({"-q", "-c", cfg_.string(), "-t", topo_.string(), "-i", "gemm", "-p", out_.string()}), 2);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("t.csv:2: field 'N': expected a positive integer, got 'x'"), std::string::npos)
      << err;
  EXPECT_FALSE(fs::exists(out_ / "t" / "COMPUTE_REPORT.csv"));
  EXPECT_FALSE(fs::exists(out_ / "t" / "BANDWIDTH_REPORT.csv"));
  EXPECT_FALSE(fs::exists(out_ / "t" / "DETAILED_ACCESS_REPORT.csv"));
}

TEST_F(ScalesimCli, UsageErrorsExitTwo) {
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(run({"-c", cfg_.string()}), 2);
  EXPECT_EQ(run({"-c", cfg_.string(), "-t", topo_.string(), "-p", out_.string(), "-i", "lstm"}), 2);
  EXPECT_EQ(run({"--bogus"}), 2);
  EXPECT_EQ(run({"-c", (dir_.path() / "missing.cfg").string(), "-t", topo_.string(), "-p",
                 out_.string()}),
            2);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("missing -t TOPOLOGY.csv, -p OUTDIR"), std::string::npos) << err;
  EXPECT_NE(err.find("option -i: expected conv or gemm, got 'lstm'"), std::string::npos) << err;
  EXPECT_NE(err.find("missing.cfg: cannot open the SCALE-Sim config file"), std::string::npos)
      << err;
  EXPECT_FALSE(fs::exists(out_));
}

TEST_F(ScalesimCli, HelpExitsZero) {
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(run({"--help"}), 0);
  EXPECT_NE(::testing::internal::GetCapturedStdout().find("usage: npusim scalesim"),
            std::string::npos);
}

}  // namespace
}  // namespace npusim::scalesim
