// Energy, power and area from real runs of the npusim binary: a tiny run recomputed by hand from
// its own event counts and the table, the CSV output, and the TPU v1 inside its published
// envelope (Jouppi et al., ISCA 2017: about 40 W busy, 75 W TDP, die under 331 mm2 with the
// unified buffer about 29 % and the matrix unit about 24 % of it; docs/power.md).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "arch/hw_config.hpp"
#include "npusim/power_stats.hpp"
#include "power/energy_table.hpp"
#include "power/power_model.hpp"
#include "run_npusim.hpp"
#include "traces/counters.hpp"

namespace npusim {
namespace {

const char* kSmallChip = R"({"schema_version": 1, "name": "small", "technology_nm": 45,
  "clock_mhz": 1000,
  "matrix_unit": {"rows": 8, "cols": 8},
  "vector_unit": {"lanes": 8},
  "buffers": {"unified_buffer": {"capacity_bytes": 8192, "banks": 1},
              "weight_buffer": {"capacity_bytes": 1024, "banks": 1},
              "accumulators": {"capacity_bytes": 8192, "banks": 2}},
  "memory": {"model": "simple", "bandwidth_gbps": 8, "latency_ns": 50}})";

const char* kTinyDense = R"({"schema_version": 1, "name": "tiny-dense", "batch": 1,
  "input": {"name": "x", "shape": [8], "dtype": "int8", "layout": "NHWC"},
  "layers": [{"name": "fc", "op": "dense", "units": 8, "activation": "relu"}],
  "outputs": ["fc"]})";

void write(const std::filesystem::path& p, const std::string& text) { std::ofstream(p) << text; }

nlohmann::json run_stats(const std::string& args, const std::filesystem::path& out) {
  const CommandResult r = run_npusim("run " + args + " --out " + out.string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(slurp(out / "stats.json"));
}

TEST(PowerRun, TinyRunEqualsTheFormula) {
  const auto dir = fresh_dir("power-tiny");
  std::filesystem::create_directories(dir);
  write(dir / "small.json", kSmallChip);
  write(dir / "tiny.json", kTinyDense);
  const nlohmann::json s =
      run_stats(fmt::format("--hw {} --workload {}", (dir / "small.json").string(),
                            (dir / "tiny.json").string()),
                dir / "out");
  const auto& ev = s["events"];
  // One 1x8 by 8x8 tile: 64 MACs, 64 active PE-cycles, 64 weights loaded; every off-chip byte
  // crosses the chip once; one 1x8 REQUANT: 2 add/mul and 2 compares per element.
  EXPECT_EQ(ev["mac_int8"], 64);
  EXPECT_EQ(ev["pe_register_moves"], 64);
  EXPECT_EQ(ev["weight_register_loads"], 64);
  EXPECT_EQ(ev["dma_bytes"].get<uint64_t>(),
            s["dram"]["read_bytes"].get<uint64_t>() + s["dram"]["write_bytes"].get<uint64_t>());
  EXPECT_EQ(ev["vector_add_mul"], 16);
  EXPECT_EQ(ev["vector_compare"], 16);

  // E = sum of count x price + clock x cycles + leakage x time + off-chip bytes x price.
  const HwConfig hw = load_hw_config((dir / "small.json").string());
  const EnergyTable t = load_energy_table(45);
  // Simple memory: 8 GB/s at 2.133 Gb/s per pin -> 31 data pins for the PHY's area.
  const PowerModel m(hw, DataType::kInt8, t, {31, false, 8}, 2);
  double dynamic_pj = 0;
  for (size_t e = 0; e < kEnergyEvents; ++e) {
    dynamic_pj += ev[event_name(EnergyEvent(e))].get<double>() * m.event_pj[e];
  }
  const double cycles = s["total_cycles"].get<double>();
  const double seconds = cycles / 1e9;
  const double offchip_pj = (ev["dma_bytes"].get<double>()) * t.at("events_pj.simple_memory_byte");
  const double expected_j =
      (dynamic_pj + m.clock_total_pj_per_cycle() * cycles + offchip_pj) * 1e-12 +
      m.leakage_total_w() * seconds;
  const double total_j = s["energy"]["total_j"].get<double>();
  EXPECT_NEAR(total_j, expected_j, 1e-9 * expected_j);
  EXPECT_NEAR(s["power"]["average_w"].get<double>(), expected_j / seconds,
              1e-9 * expected_j / seconds);
  EXPECT_NEAR(s["area"]["total_mm2"].get<double>(), m.die_mm2, 1e-9);
  // The run is shorter than the 1 us window: the window is the run, the peak its average.
  EXPECT_EQ(s["power"]["window_cycles"], s["total_cycles"]);
  EXPECT_NEAR(s["power"]["peak_w"].get<double>(), s["power"]["average_w"].get<double>(), 1e-9);
  EXPECT_NEAR(s["layers"][0]["energy_j"].get<double>(), total_j, 1e-9 * total_j);
  // One layer: its split by part is the run's.
  for (const auto& [part, j] : s["energy"]["by_component_j"].items()) {
    EXPECT_NEAR(s["layers"][0]["energy_by_component_j"][part].get<double>(), j.get<double>(),
                1e-12 * total_j)
        << part;
  }
  std::filesystem::remove_all(dir);
}

TEST(PowerRun, TracePowerCounterAveragesToTheRunsPower) {
  const auto dir = fresh_dir("power-trace");
  const nlohmann::json s =
      run_stats("--hw tpu-v1 --workload resnet50 --trace " + dir.string(), dir);
  const nlohmann::json trace = nlohmann::json::parse(slurp(dir / "trace.json"));
  const double total_cycles = s["total_cycles"].get<double>();
  const double window = double(traces::counter_window_cycles(uint64_t(total_cycles)));
  std::vector<double> values;
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("ph", "") == "C" && e.value("name", "") == "power (W)") {
      values.push_back(e["args"]["value"].get<double>());
    }
  }
  // One sample per window and the closing 0; windows of `window` cycles, the last one shorter.
  ASSERT_GE(values.size(), 2u);
  ASSERT_EQ(values.back(), 0.0);
  values.pop_back();
  double weighted = 0, peak = 0;
  for (size_t w = 0; w < values.size(); ++w) {
    const double len = w + 1 < values.size() ? window : total_cycles - window * double(w);
    weighted += values[w] * len;
    peak = std::max(peak, values[w]);
  }
  const double average = s["power"]["average_w"].get<double>();
  EXPECT_NEAR(weighted / total_cycles, average, 1e-4 * average);  // samples have 6 digits
  // Samples over windows at least as long as peak_w's cannot exceed it.
  ASSERT_GE(window, s["power"]["window_cycles"].get<double>());
  EXPECT_LE(peak, s["power"]["peak_w"].get<double>() * (1 + 1e-5));
  std::filesystem::remove_all(dir);
}

TEST(PowerRun, CsvHasOneRowPerLayer) {
  const auto dir = fresh_dir("power-csv");
  const CommandResult r =
      run_npusim("run --hw edge --workload lenet5 --format csv --out " + dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json s = nlohmann::json::parse(slurp(dir / "stats.json"));
  EXPECT_EQ(slurp(dir / "layers.csv"), r.out);
  std::vector<std::string> lines;
  std::stringstream in(r.out);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), s["layers"].size() + 1);
  EXPECT_EQ(lines[0].rfind("name,", 0), 0u) << lines[0];
  for (const char* column : {"energy_j", "arithmetic_intensity", "roofline_bound",
                             "stall_dma_cycles", "cycles", "macs"}) {
    EXPECT_NE(lines[0].find(column), std::string::npos) << column;
  }
  EXPECT_EQ(lines[1].rfind(s["layers"][0]["name"].get<std::string>() + ",", 0), 0u) << lines[1];
  std::filesystem::remove_all(dir);
}

TEST(PowerRun, PresetsListNodeAndArea) {
  const CommandResult r = run_npusim("presets");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* name : {"tpu-v1", "edge", "tpu-v4-like", "ascend-like"}) {
    const HwConfig hw = load_hw_config(name);
    const std::string expected =
        fmt::format("technology: {} nm, {:.0f} mm2", hw.technology_nm, die_area_mm2(hw));
    EXPECT_NE(r.out.find(expected), std::string::npos) << expected << "\n" << r.out;
  }
  // The listing's area is the area a run reports.
  const auto dir = fresh_dir("power-presets");
  const nlohmann::json s = run_stats("--hw edge --workload lenet5", dir);
  EXPECT_NEAR(s["area"]["total_mm2"].get<double>(), die_area_mm2(load_hw_config("edge")), 1e-9);
  std::filesystem::remove_all(dir);
}

TEST(PowerRun, BadFormatIsAUsageError) {
  const CommandResult r = run_npusim("run --hw edge --workload lenet5 --format xml");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--format 'xml': expected text or csv"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());
}

double sum_of(const nlohmann::json& object) {
  double s = 0;
  for (const auto& [k, v] : object.items()) s += v.get<double>();
  return s;
}

// Closed accounting in stats.json: components and layers add up to the total.
void expect_closed(const nlohmann::json& s) {
  const double total = s["energy"]["total_j"].get<double>();
  EXPECT_NEAR(sum_of(s["energy"]["by_component_j"]), total, 1e-9 * total);
  double layers = 0;
  for (const auto& l : s["layers"]) layers += l["energy_j"].get<double>();
  EXPECT_NEAR(layers, total, 1e-6 * total);
  EXPECT_NEAR(sum_of(s["area"]["by_component_mm2"]), s["area"]["total_mm2"].get<double>(), 1e-9);
}

TEST(PowerEnvelope, TpuV1BusyRunDrawsThePublishedPower) {
  const auto dir = fresh_dir("power-tpu-dense");
  const nlohmann::json s = run_stats(
      fmt::format("--hw tpu-v1 --workload {}/workloads/power/dense-4096-b4096.json --batch 1024",
                  NPUSIM_SOURCE_DIR),
      dir);
  const double w = s["power"]["average_w"].get<double>();
  EXPECT_GE(w, 30.0);
  EXPECT_LE(w, 75.0);
  EXPECT_LE(s["power"]["peak_w"].get<double>(), 75.0);  // the TDP
  EXPECT_GE(s["power"]["peak_w"].get<double>(), w);
  expect_closed(s);

  // The die: within 30 % of 331 mm2, the unified buffer larger than the matrix unit.
  const auto& a = s["area"];
  const double mm2 = a["total_mm2"].get<double>();
  EXPECT_NEAR(mm2, 331.0, 0.3 * 331.0);
  EXPECT_GT(a["by_component_mm2"]["unified_buffer"].get<double>(),
            a["by_component_mm2"]["matrix_unit"].get<double>());
  std::filesystem::remove_all(dir);
}

TEST(PowerEnvelope, TpuV1Resnet50) {
  const auto dir = fresh_dir("power-tpu-resnet50");
  const nlohmann::json s = run_stats("--hw tpu-v1 --workload resnet50", dir);
  const double w = s["power"]["average_w"].get<double>();
  EXPECT_GE(w, 20.0);
  EXPECT_LE(w, 75.0);
  expect_closed(s);
  EXPECT_GT(s["efficiency"]["tops_per_w"].get<double>(), 0.0);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace npusim
