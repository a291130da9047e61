#include "power/energy_stats.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>

namespace npusim {

namespace {

// A DDR data pin of the simple memory model is taken to run at DDR3-2133's 2.133 Gb/s.
constexpr double kSimplePinGbps = 2.133;

}  // namespace

MemoryInterface memory_interface(const HwConfig& hw, const dram::MemoryConfig* dram) {
  MemoryInterface m;
  if (dram != nullptr) {
    const auto& org = dram->org;
    m.data_pins = uint64_t(org.channels) * org.pseudo_channels * org.bus_width_bits;
    std::string name = dram->name;
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    m.hbm = name.find("hbm") != std::string::npos;
    m.peak_bandwidth_gbps = dram->peak_bandwidth_gbps();
  } else {
    m.data_pins = uint64_t(std::ceil(hw.memory.bandwidth_gbps * 8 / kSimplePinGbps));
    m.peak_bandwidth_gbps = hw.memory.bandwidth_gbps;
  }
  return m;
}

double die_area_mm2(const HwConfig& hw) {
  const PowerModel model(hw, hw.data_types.activation, load_energy_table(hw.technology_nm),
                         memory_interface(hw, hw.memory.dram ? &*hw.memory.dram : nullptr),
                         2 * hw.cores);
  return model.die_mm2;
}

void register_energy_stats(stats::Registry& reg, const HwConfig& hw, const EnergyTable& table,
                           const PowerModel& model, const EventCounts& counted, const RunEnergy& e,
                           int batch, uint64_t total_cycles) {
  for (size_t ev = 0; ev < kEnergyEvents; ++ev) {
    reg.value(fmt::format("events.{}", event_name(EnergyEvent(ev))), "count",
              event_meaning(EnergyEvent(ev)), counted.n[ev]);
  }
  reg.value("energy.technology_nm", "nm", "technology node of the energy table (technology_nm)",
            hw.technology_nm);
  reg.value("energy.table", "", "the energy table used (configs/energy, docs/power.md)",
            table.origin);
  reg.value("energy.total_j", "J", "energy of the whole run: the parts of by_component_j",
            e.total_j);
  reg.value("energy.per_inference_j", "J", "total_j / batch", e.total_j / batch);
  const double seconds = double(total_cycles) / (hw.clock_mhz * 1e6);
  for (size_t p = 0; p < kComponents + 2; ++p) {
    const std::string what = p == kDramPart      ? "off-chip memory (the DRAM model's energy)"
                             : p == kLeakagePart ? "leakage of every component, every cycle"
                                                 : std::string(component_meaning(Component(p))) +
                                                       ": its events and its clock power";
    reg.value(fmt::format("energy.by_component_j.{}", part_name(p)), "J", what, e.by_part_j[p]);
  }
  reg.value("power.average_w", "W", "energy.total_j / latency_s", e.average_w);
  reg.value("power.peak_w", "W",
            "highest average power over window_cycles consecutive cycles (docs/power.md)",
            e.peak_w);
  reg.value("power.idle_w", "W",
            "what the chip draws doing nothing: clock, leakage and the DRAM's background power",
            e.idle_w);
  reg.value("power.window_cycles", "cycles",
            "window of peak_w (1 us of core clock, at most the run)", e.window_cycles);
  for (size_t p = 0; p < kComponents + 2; ++p) {
    reg.value(fmt::format("power.by_component_w.{}", part_name(p)), "W",
              fmt::format("energy.by_component_j.{} / latency_s", part_name(p)),
              seconds > 0 ? e.by_part_j[p] / seconds : 0.0);
  }
  reg.value("area.total_mm2", "mm2", "die area: the parts of by_component_mm2", model.die_mm2);
  for (size_t c = 0; c < kComponents; ++c) {
    reg.value(fmt::format("area.by_component_mm2.{}", component_name(Component(c))), "mm2",
              component_meaning(Component(c)), model.area_mm2[c]);
  }
  reg.value("efficiency.tops_per_w", "TOPS/W", "ops_per_s / 1e12 / power.average_w", e.tops_per_w);
  reg.value("efficiency.inferences_per_j", "1/J", "batch / energy.total_j", e.inferences_per_j);
}

}  // namespace npusim
