// npusim's SCALE-Sim mode against real SCALE-Sim v2.0.2 outputs (tests/scalesim/data, copied
// from runs of SCALE-Sim on GEMM M=20, N=12, K=28, 8x8 array, 1 kB SRAMs, CALC and USER(bw 4)).
// The reports must agree byte for byte, and every demand row must complete in the same cycle as
// in SCALE-Sim's SRAM traces (USER mode included, where the IFMAP buffer thrashes).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "compat/scalesim/scalesim_cli.hpp"
#include "compat/scalesim/scalesim_config.hpp"
#include "compat/scalesim/scalesim_sim.hpp"
#include "compat/scalesim/scalesim_topology.hpp"
#include "tests/scalesim/scalesim_test_util.hpp"

namespace npusim::scalesim {
namespace {

namespace fs = std::filesystem;
using testing::read_text;
using testing::TempDir;

const fs::path kData = NPUSIM_SCALESIM_TEST_DATA;

class ScalesimReference : public ::testing::TestWithParam<std::string> {};

TEST_P(ScalesimReference, ReportsAreByteIdentical) {
  const std::string run = GetParam();
  TempDir out("ref");
  const int rc =
      run_cli({"-q", "-c", (kData / (run + ".cfg")).string(), "-t",
               (kData / "gemm_20x12x28.csv").string(), "-i", "gemm", "-p", out.path().string()});
  ASSERT_EQ(rc, 0);
  for (const char* report :
       {"COMPUTE_REPORT.csv", "BANDWIDTH_REPORT.csv", "DETAILED_ACCESS_REPORT.csv"}) {
    EXPECT_EQ(read_text(out.path() / run / report), read_text(kData / run / report))
        << run << "/" << report;
  }
}

// First column of a SCALE-Sim SRAM trace: the cycle each demand row was serviced.
std::vector<int64_t> trace_cycles(const fs::path& path) {
  std::vector<int64_t> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) out.push_back(std::stoll(line.substr(0, line.find(','))));
  return out;
}

TEST_P(ScalesimReference, EveryDemandRowCompletesInTheSameCycleAsInSramTraces) {
  const std::string run = GetParam();
  const Config config = read_config((kData / (run + ".cfg")).string());
  const auto layers = read_topology((kData / "gemm_20x12x28.csv").string(), TopologyKind::kGemm);
  ASSERT_EQ(layers.size(), 1u);
  std::vector<int64_t> ifmap, filter, ofmap;
  const RowObserver observer = [&](const RowTiming& t) {
    ifmap.push_back(t.ifmap_out);
    filter.push_back(t.filter_out);
    ofmap.push_back(t.ofmap_out);
  };
  simulate_layer(config, layers[0], &observer);
  EXPECT_EQ(ifmap, trace_cycles(kData / run / "layer0" / "IFMAP_SRAM_TRACE.csv"));
  EXPECT_EQ(filter, trace_cycles(kData / run / "layer0" / "FILTER_SRAM_TRACE.csv"));
  EXPECT_EQ(ofmap, trace_cycles(kData / run / "layer0" / "OFMAP_SRAM_TRACE.csv"));
}

INSTANTIATE_TEST_SUITE_P(ScalesimRealRuns, ScalesimReference,
                         ::testing::Values("trace_a8x8_os_calc_s1-1-1", "trace_a8x8_ws_calc_s1-1-1",
                                           "trace_a8x8_is_calc_s1-1-1",
                                           "trace_a8x8_os_user4_s1-1-1",
                                           "trace_a8x8_ws_user4_s1-1-1",
                                           "trace_a8x8_is_user4_s1-1-1"),
                         [](const auto& param_info) {
                           std::string name = param_info.param;
                           for (char& c : name)
                             if (c == '-') c = '_';
                           return name;
                         });

}  // namespace
}  // namespace npusim::scalesim
