// Energy, power and area of a run (docs/power.md): the event counts the units kept during the
// simulation (arch/energy_events.hpp, counted by models/event_counting.hpp), priced with the
// technology node's table (power/energy_table.hpp), plus the off-chip memory's own energy and the
// leakage and clock power every component draws on every cycle, busy or idle.
//
//   E_total = sum over events e of count_e * E_e          (dynamic, charged to the unit or buffer)
//           + sum over components c of A_c * clock_pj_per_mm2_cycle * cycles    (clock, to c)
//           + sum over components c of A_c * leakage_w_per_mm2(c) * T           ("leakage")
//           + DRAM energy (the DRAM model's, or bytes * simple_memory_byte)      ("dram")
// A layer's energy is its events' energy, its share of the DRAM's dynamic energy (by its DMA
// bytes) and of the constant part (clock, leakage, DRAM background) by its share of the summed
// layer spans, so the layers add up to the total.
// Peak power: each instruction's dynamic energy (with its DRAM share) is spread evenly over its
// [start, end) cycles on top of the constant part; peak_w is the highest mean over any window of
// window_cycles consecutive cycles.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "arch/energy_events.hpp"
#include "arch/hw_config.hpp"
#include "arch/program.hpp"
#include "power/energy_table.hpp"

namespace npusim {

enum class Component {
  kMatrixUnit,
  kVectorUnit,
  kDma,
  kControl,
  kUnifiedBuffer,
  kWeightBuffer,
  kAccumulators,
  kMemoryPhy,
  kOther,
  kCount
};
constexpr size_t kComponents = size_t(Component::kCount);
const char* component_name(Component c);  // "matrix_unit", ... the stats.json keys
const char* component_meaning(Component c);

// What the chip's off-chip interface looks like, for the PHY's area.
struct MemoryInterface {
  uint64_t data_pins = 64;
  bool hbm = false;
  double peak_bandwidth_gbps = 0;
};

// Prices of one hardware description at its node.
struct PowerModel {
  PowerModel(const HwConfig& hw, DataType dtype, const EnergyTable& table,
             const MemoryInterface& memory, int dma_queues);

  std::array<double, kEnergyEvents> event_pj{};
  std::array<Component, kEnergyEvents> event_component{};
  std::array<double, kComponents> area_mm2{};
  std::array<double, kComponents> leakage_w{};
  std::array<double, kComponents> clock_pj_per_cycle{};
  double die_mm2 = 0;

  // Dynamic energy of `counts`, pJ, added to `by` per component.
  double dynamic_pj(const EventCounts& counts, std::array<double, kComponents>& by) const;
  double leakage_total_w() const;
  double clock_total_pj_per_cycle() const;
};

// One instruction as it ran: its events and its [start, end).
struct TimedEvents {
  uint64_t start = 0, end = 0;
  EventCounts events;
};

struct RunEnergyInput {
  double clock_mhz = 0;
  uint64_t total_cycles = 0;
  int batch = 1;
  uint64_t macs = 0;
  std::vector<EventCounts> layer_events;  // counted by the units, per layer
  std::vector<uint64_t> layer_cycles;     // each layer's span
  double dram_dynamic_pj = 0;             // off-chip memory: energy that follows traffic
  double dram_background_pj = 0;          // and the rest (background, refresh)
  std::vector<TimedEvents> instructions;  // for the power profile
  uint64_t window_cycles = 1;
};

struct RunEnergy {
  // Components, then "dram", then "leakage".
  std::array<double, kComponents + 2> by_part_j{};
  double total_j = 0;
  std::vector<double> layer_j;
  // Each layer's energy by part (as by_part_j): its events' energy by component, its DRAM share and
  // its span's share of each component's clock energy, of the DRAM background and of leakage. The
  // parts add up to layer_j (to rounding).
  std::vector<std::array<double, kComponents + 2>> layer_by_part_j;
  double average_w = 0, peak_w = 0;
  double idle_w = 0;                   // the constant part: clock, leakage, DRAM background
  std::vector<double> instruction_pj;  // each instruction's dynamic energy with its DRAM share
  uint64_t window_cycles = 1;
  double tops_per_w = 0, inferences_per_j = 0;
};
constexpr size_t kDramPart = kComponents, kLeakagePart = kComponents + 1;
const char* part_name(size_t part);  // component names, "dram", "leakage"

RunEnergy run_energy(const PowerModel& model, const RunEnergyInput& in);

// Highest mean power over any `window` consecutive cycles of [0, total): `constant_w` plus each
// interval's energy spread evenly over it. Exact (piecewise-linear energy, maximum at a
// breakpoint).
double peak_power_w(const std::vector<TimedEvents>& intervals, const std::vector<double>& energy_pj,
                    double constant_w, uint64_t total, uint64_t window, double clock_mhz);

}  // namespace npusim
