// The energy model's parts, each against numbers derived by hand in the comments: the tables and
// their node scaling, the SRAM rule, the event counts of instructions, closure of the accounting,
// the effect of one table entry, and the sliding-window peak power.
#include <gtest/gtest.h>

#include <array>
#include <cmath>

#include "arch/hw_config.hpp"
#include "models/event_counting.hpp"
#include "power/energy_table.hpp"
#include "power/power_model.hpp"
#include "support/error.hpp"
#include "support/json_reader.hpp"

namespace npusim {
namespace {

TEST(EnergyTable, EveryNodeHasEveryKeyWithASource) {
  EXPECT_EQ(technology_nodes(), (std::vector<int>{7, 16, 28, 45}));
  for (int node : technology_nodes()) {
    const EnergyTable t = load_energy_table(node);
    EXPECT_EQ(t.node_nm, node);
    for (const EnergyKey& k : energy_keys()) {
      const std::string key = std::string(k.section) + "." + k.name;
      EXPECT_GT(t.at(key), 0.0) << node << " " << key;
      ASSERT_TRUE(t.sources.count(key)) << node << " " << key;
      EXPECT_FALSE(t.sources.at(key).empty()) << node << " " << key;
    }
  }
}

TEST(EnergyTable, NodesScaleTheBaseByTheirFactors) {
  const EnergyTable base = load_energy_table(45);
  const EnergyTable t28 = load_energy_table(28);
  // Horowitz ISSCC 2014 at 45 nm: int8 mult 0.2 + int32 add 0.1.
  EXPECT_DOUBLE_EQ(base.at("events_pj.mac_int8"), 0.3);
  // 28 nm: energy factor 0.5, area factor 0.4 (configs/energy/28nm.json).
  EXPECT_DOUBLE_EQ(t28.at("events_pj.mac_int8"), 0.15);
  EXPECT_DOUBLE_EQ(t28.at("sram.reference_pj"), 5.0);
  EXPECT_DOUBLE_EQ(t28.at("area_um2.mac_int8"), 419 * 0.4);
  // Given per node, not scaled: the bit cell, off-chip figures, layout ratios.
  EXPECT_DOUBLE_EQ(t28.at("area_um2.sram_bitcell"), 0.127);
  EXPECT_DOUBLE_EQ(t28.at("events_pj.simple_memory_byte"), base.at("events_pj.simple_memory_byte"));
  EXPECT_DOUBLE_EQ(t28.at("layout.sram_overhead"), base.at("layout.sram_overhead"));
}

// Leakage and clock power are calibrated at 28 nm and carried to the other nodes as power per mm2
// scaling with energy_factor / area_factor (docs/power.md), rounded to 2 %.
TEST(EnergyTable, StaticPowerFollowsTheNodeRule) {
  const EnergyTable base = load_energy_table(45), t28 = load_energy_table(28);
  const auto density = [&](const EnergyTable& t) {
    const double energy = t.at("events_pj.mac_int8") / base.at("events_pj.mac_int8");
    const double area = t.at("area_um2.mac_int8") / base.at("area_um2.mac_int8");
    return energy / area;
  };
  for (int node : {45, 16, 7}) {
    const EnergyTable t = load_energy_table(node);
    const double ratio = density(t) / density(t28);
    for (const char* key : {"static.logic_leakage_w_per_mm2", "static.sram_leakage_w_per_mm2",
                            "static.clock_pj_per_mm2_cycle"}) {
      EXPECT_NEAR(t.at(key), t28.at(key) * ratio, 0.02 * t28.at(key) * ratio) << node << key;
    }
  }
}

TEST(EnergyTable, SramRuleFollowsCapacityWidthAndBanks) {
  const EnergyTable t = load_energy_table(45);
  // The reference point: 8 KiB, 64-bit read, 10 pJ (Horowitz).
  EXPECT_DOUBLE_EQ(t.sram_read_pj(8192, 64), 10.0);
  // Capacity x4 -> energy x2 (exponent 0.5); width x2 -> energy x2.
  EXPECT_DOUBLE_EQ(t.sram_read_pj(32768, 64), 20.0);
  EXPECT_DOUBLE_EQ(t.sram_read_pj(8192, 128), 20.0);
  // 1 MiB: 10 * sqrt(128) = 113 pJ, Horowitz's 100 pJ within 15 %.
  EXPECT_NEAR(t.sram_read_pj(1 << 20, 64), 100.0, 15.0);
  // Area: 8 KiB in one 64-bit bank = 65536 bits * 0.346 um2 * 3.75 + 64 * 30 um2.
  EXPECT_NEAR(t.sram_area_mm2(8192, 1, 64), (65536 * 0.346 * 3.75 + 64 * 30) * 1e-6, 1e-12);
  EXPECT_GT(t.sram_area_mm2(8192, 4, 64), t.sram_area_mm2(8192, 1, 64));
}

TEST(EnergyTable, BadTableNamesFileAndPointer) {
  const EnergyTable base = load_energy_table(45);
  const json node = json::parse(R"({"schema_version": 1, "node_nm": 5, "scale_from": "45nm",
      "energy_factor": {"value": 0.1},
      "area_factor": {"value": -1, "source": "x"},
      "static": {"clock_pj_per_mm2_cycle": {"value": 1, "source": ""}, "typo": 1}})");
  try {
    parse_energy_table(node, "5nm.json", &base);
    FAIL() << "expected UserErrors";
  } catch (const UserErrors& e) {
    const std::vector<std::string> expected = {
        "5nm.json: /energy_factor/source: required key is missing",
        "5nm.json: /area_factor/value: expected a number in [1e-06, 1000000], got -1",
        "5nm.json: /static/clock_pj_per_mm2_cycle/source: expected where the figure comes from",
        "5nm.json: /static/typo: unknown key \"typo\" (known keys here: clock_pj_per_mm2_cycle, "
        "logic_leakage_w_per_mm2, sram_leakage_w_per_mm2)",
    };
    EXPECT_EQ(e.messages(), expected);
  }
}

HwConfig small_chip() {
  return parse_hw_config(json::parse(R"({"schema_version": 1, "technology_nm": 45,
      "clock_mhz": 1000,
      "matrix_unit": {"rows": 8, "cols": 8},
      "vector_unit": {"lanes": 8},
      "buffers": {"unified_buffer": {"capacity_bytes": 8192, "banks": 1},
                  "weight_buffer": {"capacity_bytes": 1024, "banks": 1},
                  "accumulators": {"capacity_bytes": 8192, "banks": 2}},
      "memory": {"model": "simple", "bandwidth_gbps": 8}})"),
                         "small.json");
}

TEST(EnergyEvents, MatmulAndDmaCountsFollowTheRule) {
  const HwConfig hw = small_chip();
  const BufferPorts ports = buffer_ports(hw, DataType::kInt8);
  EXPECT_EQ(ports.unified, 8u);        // 8 rows x 1 byte
  EXPECT_EQ(ports.weight, 8u);         // 8 cols x 1 byte
  EXPECT_EQ(ports.accumulators, 32u);  // 8 cols x 4 bytes
  Instruction mm;
  mm.unit = UnitKind::kMatrix;
  MatmulOp op;
  op.m = 5, op.k = 6, op.n = 7, op.accumulate = true;
  mm.op = op;
  EventCounts c;
  count_instruction_events(mm, DataType::kInt8, ports, c);
  EXPECT_EQ(c[EnergyEvent::kMacInt8], 5u * 6 * 7);
  EXPECT_EQ(c[EnergyEvent::kPeRegisterMove], 5u * 6 * 7);
  EXPECT_EQ(c[EnergyEvent::kWeightRegisterLoad], 6u * 7);
  // Bytes moved in port words, rounded up: 5 rows of 6 bytes = 30 bytes -> 4 words of 8.
  EXPECT_EQ(c[EnergyEvent::kUnifiedRead], 4u);
  EXPECT_EQ(c[EnergyEvent::kWeightRead], 6u);        // 6 rows of 7 bytes = 42 -> 6 words of 8
  EXPECT_EQ(c[EnergyEvent::kAccumulatorWrite], 5u);  // 5 rows of 28 bytes = 140 -> 5 of 32
  EXPECT_EQ(c[EnergyEvent::kAccumulatorRead], 5u);   // it accumulates
  Instruction load;
  load.unit = UnitKind::kDmaLoad;
  DmaOp d;
  d.buffer = BufferId::kUnified;
  d.count[0] = 10, d.count[1] = 3;  // 30 packed bytes -> 4 words of 8
  load.op = d;
  EventCounts l;
  count_instruction_events(load, DataType::kInt8, ports, l);
  EXPECT_EQ(l[EnergyEvent::kDmaByte], 30u);
  EXPECT_EQ(l[EnergyEvent::kUnifiedWrite], 4u);
  EXPECT_EQ(l[EnergyEvent::kUnifiedRead], 0u);
}

// A run's inputs with some of every event, on the small chip.
RunEnergyInput sample_run() {
  RunEnergyInput in;
  in.clock_mhz = 1000;
  in.total_cycles = 1000;
  in.batch = 2;
  in.macs = 4000;
  in.window_cycles = 100;
  for (int l = 0; l < 2; ++l) {
    EventCounts e;
    for (size_t i = 0; i < kEnergyEvents; ++i) e.n[i] = 100 * (l + 1) + i;
    in.layer_events.push_back(e);
    in.layer_cycles.push_back(400 + 200 * l);
    in.instructions.push_back({uint64_t(l) * 500, uint64_t(l) * 500 + 300, e});
  }
  in.dram_dynamic_pj = 5000;
  in.dram_background_pj = 700;
  return in;
}

TEST(EnergyModel, PartsAndLayersAddUpToTheTotal) {
  const HwConfig hw = small_chip();
  const PowerModel model(hw, DataType::kInt8, load_energy_table(45), {64, false, 8}, 2);
  const RunEnergyInput in = sample_run();
  const RunEnergy e = run_energy(model, in);
  double parts = 0, layers = 0;
  for (double j : e.by_part_j) parts += j;
  for (double j : e.layer_j) layers += j;
  EXPECT_NEAR(parts, e.total_j, 1e-15 * std::max(1.0, e.total_j));
  EXPECT_NEAR(layers, e.total_j, 1e-9 * e.total_j);
  double area = 0;
  for (double a : model.area_mm2) area += a;
  EXPECT_NEAR(area, model.die_mm2, 1e-12);
  // Average power is total energy over 1000 cycles at 1 GHz = 1 us.
  EXPECT_NEAR(e.average_w, e.total_j / 1e-6, 1e-9);
  EXPECT_NEAR(e.inferences_per_j, 2 / e.total_j, 1e-9);
  EXPECT_GE(e.peak_w, e.average_w);
}

// Each layer's split by part adds up to its energy, and the layers' parts to the run's parts: the
// dynamic energy is split by the layers' own events (which partition the run's), the constant part
// by span shares that add up to one.
TEST(EnergyModel, LayerPartsAddUpToTheLayerAndToTheRunsParts) {
  const HwConfig hw = small_chip();
  const PowerModel model(hw, DataType::kInt8, load_energy_table(45), {64, false, 8}, 2);
  const RunEnergy e = run_energy(model, sample_run());
  ASSERT_EQ(e.layer_by_part_j.size(), e.layer_j.size());
  std::array<double, kComponents + 2> sum{};
  for (size_t l = 0; l < e.layer_j.size(); ++l) {
    double layer = 0;
    for (size_t p = 0; p < sum.size(); ++p) {
      layer += e.layer_by_part_j[l][p];
      sum[p] += e.layer_by_part_j[l][p];
      EXPECT_GE(e.layer_by_part_j[l][p], 0.0) << part_name(p);
    }
    EXPECT_NEAR(layer, e.layer_j[l], 1e-12 * e.layer_j[l]) << "layer " << l;
  }
  for (size_t p = 0; p < sum.size(); ++p) {
    EXPECT_NEAR(sum[p], e.by_part_j[p], 1e-12 * e.total_j) << part_name(p);
  }
  // The second layer has more of every event and a longer span: more of every part.
  for (size_t p = 0; p < sum.size(); ++p) {
    EXPECT_GT(e.layer_by_part_j[1][p], e.layer_by_part_j[0][p]) << part_name(p);
  }
}

TEST(EnergyModel, DoublingOneEventChangesOnlyItsShare) {
  const HwConfig hw = small_chip();
  const EnergyTable table = load_energy_table(45);
  EnergyTable doubled = table;
  doubled.values["events_pj.vector_compare"] *= 2;
  const MemoryInterface mem{64, false, 8};
  const RunEnergyInput in = sample_run();
  const RunEnergy a = run_energy(PowerModel(hw, DataType::kInt8, table, mem, 2), in);
  const RunEnergy b = run_energy(PowerModel(hw, DataType::kInt8, doubled, mem, 2), in);
  uint64_t compares = 0;
  for (const EventCounts& l : in.layer_events) compares += l[EnergyEvent::kVectorCompare];
  const double extra_j = double(compares) * table.at("events_pj.vector_compare") * 1e-12;
  for (size_t p = 0; p < kComponents + 2; ++p) {
    if (p == size_t(Component::kVectorUnit)) {
      EXPECT_NEAR(b.by_part_j[p] - a.by_part_j[p], extra_j, 1e-20) << part_name(p);
    } else {
      EXPECT_EQ(b.by_part_j[p], a.by_part_j[p]) << part_name(p);
    }
  }
  EXPECT_NEAR(b.total_j - a.total_j, extra_j, 1e-20);
}

TEST(EnergyModel, PeakIsTheBusiestWindow) {
  // 100 pJ over [0, 10) and 300 pJ over [20, 30) of a 40-cycle run at 1 GHz, window 10 cycles:
  // the busiest window is [20, 30), 300 pJ in 10 ns = 0.03 W, on top of 0.5 W constant.
  const std::vector<TimedEvents> intervals = {{0, 10, {}}, {20, 30, {}}};
  EXPECT_NEAR(peak_power_w(intervals, {100, 300}, 0.5, 40, 10, 1000), 0.53, 1e-12);
  // A 20-cycle window holds 300 pJ at best ([15, 35) or [20, 40)): 300 / 20 ns = 0.015 W.
  EXPECT_NEAR(peak_power_w(intervals, {100, 300}, 0.5, 40, 20, 1000), 0.515, 1e-12);
  // A window as long as the run: the average, 400 pJ / 40 ns = 0.01 W.
  EXPECT_NEAR(peak_power_w(intervals, {100, 300}, 0.5, 40, 100, 1000), 0.51, 1e-12);
  // Overlapping intervals add: [0, 10) 100 pJ and [5, 15) 100 pJ, window 5: [5, 10) holds
  // 50 + 50 pJ -> 100 pJ / 5 ns = 0.02 W.
  EXPECT_NEAR(peak_power_w({{0, 10, {}}, {5, 15, {}}}, {100, 100}, 0.0, 15, 5, 1000), 0.02, 1e-12);
}

TEST(EnergyModel, SramEnergyFollowsBufferSize) {
  // A sweep over the unified buffer's size changes its access energy and area.
  HwConfig small = small_chip(), large = small_chip();
  large.unified_buffer.capacity_bytes = 4 * small.unified_buffer.capacity_bytes;
  const EnergyTable t = load_energy_table(45);
  const PowerModel a(small, DataType::kInt8, t, {64, false, 8}, 2);
  const PowerModel b(large, DataType::kInt8, t, {64, false, 8}, 2);
  const size_t read = size_t(EnergyEvent::kUnifiedRead), ub = size_t(Component::kUnifiedBuffer);
  EXPECT_DOUBLE_EQ(b.event_pj[read], 2 * a.event_pj[read]);  // capacity x4 -> sqrt -> x2
  EXPECT_GT(b.area_mm2[ub], 3.9 * a.area_mm2[ub]);
}

}  // namespace
}  // namespace npusim
