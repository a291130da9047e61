// Compute cycles, SRAM access counts and utilisation of every layer of every shipped SCALE-Sim
// topology (workloads/scalesim), for every dataflow and several array shapes, against the
// published SCALE-Sim formulas (docs/scalesim.md, DESIGN.md) evaluated here independently:
//   os: ceil(M/R)*ceil(N/C)*(K+R+C-2) - 1
//   ws: ceil(K/R)*ceil(N/C)*(2R+C+M-2) - 1
//   is: ceil(K/R)*ceil(M/C)*(2R+C+N-2) - 1
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "compat/scalesim/scalesim_sim.hpp"
#include "compat/scalesim/scalesim_topology.hpp"
#include "tests/scalesim/scalesim_test_util.hpp"

namespace npusim::scalesim {
namespace {

namespace fs = std::filesystem;
const fs::path kWorkloads = NPUSIM_SCALESIM_WORKLOADS;

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

struct Expected {
  int64_t compute_cycles, ifmap_reads, filter_reads, ofmap_writes, folds;
  double mapping_efficiency_pct;
};

Expected expected(const Layer& l, Dataflow df, int64_t r, int64_t c) {
  // Output size as SCALE-Sim computes it: ceil((in - filter + stride) / stride).
  const auto out = [](int64_t in, int64_t f, int64_t s) {
    return static_cast<int64_t>(std::ceil(static_cast<double>(in - f + s) / s));
  };
  const int64_t m = out(l.ifmap_h, l.filter_h, l.stride_h) * out(l.ifmap_w, l.filter_w, l.stride_w);
  const int64_t k = l.filter_h * l.filter_w * l.channels;
  const int64_t n = l.num_filters;
  Expected e{};
  int64_t sr = 0, sc = 0;
  switch (df) {
    case Dataflow::kOutputStationary:
      sr = m, sc = n;
      e.folds = cdiv(m, r) * cdiv(n, c);
      e.compute_cycles = e.folds * (k + r + c - 2) - 1;
      e.ifmap_reads = m * k * cdiv(n, c);
      e.filter_reads = k * n * cdiv(m, r);
      e.ofmap_writes = m * n + e.folds * (r + c);
      break;
    case Dataflow::kWeightStationary:
      sr = k, sc = n;
      e.folds = cdiv(k, r) * cdiv(n, c);
      e.compute_cycles = e.folds * (2 * r + c + m - 2) - 1;
      e.ifmap_reads = m * k * cdiv(n, c);
      e.filter_reads = k * n;
      e.ofmap_writes = m * n * cdiv(k, r);
      break;
    case Dataflow::kInputStationary:
      sr = k, sc = m;
      e.folds = cdiv(k, r) * cdiv(m, c);
      e.compute_cycles = e.folds * (2 * r + c + n - 2) - 1;
      e.ifmap_reads = m * k;
      e.filter_reads = k * n * cdiv(m, c);
      e.ofmap_writes = m * n * cdiv(k, r);
      break;
  }
  // Every row (column) of the operand is used exactly once over the folds.
  e.mapping_efficiency_pct = 100.0 * static_cast<double>(sr) * static_cast<double>(sc) /
                             (static_cast<double>(r * c) * static_cast<double>(e.folds));
  return e;
}

struct Topo {
  const char* file;
  TopologyKind kind;
};
const Topo kTopologies[] = {
    {"alexnet.csv", TopologyKind::kConv},
    {"resnet18.csv", TopologyKind::kConv},
    {"resnet50.csv", TopologyKind::kConv},
    {"yolo_tiny.csv", TopologyKind::kConv},
    {"transformer_short.csv", TopologyKind::kConv},
    {"transformer_partial.csv", TopologyKind::kGemm},
    {"gpt2.csv", TopologyKind::kGemm},
    {"gnmt.csv", TopologyKind::kGemm},
    {"ncf.csv", TopologyKind::kGemm},
};

TEST(ScalesimFormula, EveryShippedLayerEveryDataflowSeveralArrays) {
  const std::pair<int64_t, int64_t> arrays[] = {{8, 8}, {32, 32}, {16, 64}, {128, 128}, {256, 256}};
  const Dataflow dataflows[] = {Dataflow::kOutputStationary, Dataflow::kWeightStationary,
                                Dataflow::kInputStationary};
  int checked = 0;
  for (const auto& topo : kTopologies) {
    const auto layers = read_topology((kWorkloads / topo.file).string(), topo.kind);
    ASSERT_FALSE(layers.empty()) << topo.file;
    for (const auto& df : dataflows) {
      for (const auto& [r, c] : arrays) {
        // Large SRAMs: nothing stalls, so Total Cycles = compute cycles.
        const Config config = testing::make_config(df, r, c, 1 << 16);
        for (const Layer& layer : layers) {
          const Expected e = expected(layer, df, r, c);
          const LayerResult res = simulate_layer(config, layer);
          SCOPED_TRACE(::testing::Message() << topo.file << " " << layer.name << " "
                                            << dataflow_name(df) << " " << r << "x" << c);
          EXPECT_EQ(res.total_cycles, e.compute_cycles);
          EXPECT_EQ(res.stall_cycles, 0);
          EXPECT_EQ(res.ifmap.sram_accesses, e.ifmap_reads);
          EXPECT_EQ(res.filter.sram_accesses, e.filter_reads);
          EXPECT_EQ(res.ofmap.sram_accesses, e.ofmap_writes);
          EXPECT_NEAR(res.mapping_efficiency_pct, e.mapping_efficiency_pct,
                      1e-9 * e.mapping_efficiency_pct);
          EXPECT_DOUBLE_EQ(res.overall_util_pct, 100.0 * static_cast<double>(res.macs) /
                                                     (static_cast<double>(res.total_cycles) *
                                                      static_cast<double>(r * c)));
          ++checked;
        }
      }
    }
  }
  EXPECT_EQ(checked, 2085);  // 139 layers x 3 dataflows x 5 arrays
}

TEST(ScalesimFormula, AlexNetConv1WeightStationary32x32) {
  // M = 55*55 = 3025, K = 11*11*3 = 363, N = 96; row folds ceil(363/32) = 12, col folds
  // ceil(96/32) = 3; each fold 2*32 + 32 + 3025 - 2 = 3119 cycles; 36 * 3119 - 1 = 112283.
  const auto layers = read_topology((kWorkloads / "alexnet.csv").string(), TopologyKind::kConv);
  const Config config = testing::make_config(Dataflow::kWeightStationary, 32, 32, 1 << 16);
  const LayerResult res = simulate_layer(config, layers.at(0));
  EXPECT_EQ(res.total_cycles, 112283);
  EXPECT_EQ(res.stall_cycles, 0);
}

TEST(ScalesimFormula, ResNet18Conv3ReReadsItsIfmapOncePerColumnFold) {
  // Reported by real SCALE-Sim runs (../shared/SCALESIM_CONVENTIONS.md): conv3_x of ResNet-18,
  // ws on 32x32 with 64 kB SRAMs, CALC: the IFMAP does not fit half the SRAM, and every SRAM
  // read is a DRAM read: M*K*col_folds = 26*26 * 3*3*128 * 4 = 3115008.
  const auto layers = read_topology((kWorkloads / "resnet18.csv").string(), TopologyKind::kConv);
  const Config config = testing::make_config(Dataflow::kWeightStationary, 32, 32, 64);
  for (const char* name : {"Conv3_1b", "Conv3_2a", "Conv3_2b"}) {
    const auto it =
        std::find_if(layers.begin(), layers.end(), [&](const Layer& l) { return l.name == name; });
    ASSERT_NE(it, layers.end()) << name;
    const LayerResult res = simulate_layer(config, *it);
    EXPECT_EQ(res.ifmap.sram_accesses, 3115008) << name;
    EXPECT_EQ(res.ifmap.dram_accesses, res.ifmap.sram_accesses) << name;
    EXPECT_EQ(res.filter.dram_accesses, 3 * 3 * 128 * 128) << name;  // fits: read once
  }
}

TEST(ScalesimFormula, CeilOutputSizeOfResNet18Conv1) {
  // SCALE-Sim's ofmap size is ceil((224 - 7 + 2) / 2) = 110 (floor would give 109), so
  // M = 110 * 110 = 12100 and OS on 32x32: ceil(12100/32) * ceil(64/32) * (147 + 62) - 1.
  const auto layers = read_topology((kWorkloads / "resnet18.csv").string(), TopologyKind::kConv);
  const Config config = testing::make_config(Dataflow::kOutputStationary, 32, 32, 1 << 16);
  const LayerResult res = simulate_layer(config, layers.at(0));
  EXPECT_EQ(res.total_cycles, 379 * 2 * (147 + 32 + 32 - 2) - 1);
}

}  // namespace
}  // namespace npusim::scalesim
