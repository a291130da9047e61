#include "npusim/power_stats.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "models/event_counting.hpp"
#include "npusim/multicore_stats.hpp"
#include "power/energy_stats.hpp"
#include "power/power_model.hpp"
#include "support/error.hpp"
#include "support/text_escape.hpp"

namespace npusim {

namespace {

// Per layer: the units' dependency waits by cause, summed over the units.
std::vector<StallCauses> layer_stalls(const Soc& soc, size_t layers) {
  std::vector<StallCauses> out(layers);
  for (const ExecutionUnit* u : soc.units()) {
    for (size_t l = 0; l < layers; ++l) {
      const StallCauses& s = u->layer_stall_causes()[l];
      out[l].dma += s.dma;
      out[l].vector += s.vector;
      out[l].matrix += s.matrix;
    }
  }
  return out;
}

// What the energy model needs from the run: the units' per-layer event counts, the layers' spans,
// each instruction's events and span (for peak power) and the off-chip memory's energy.
RunEnergyInput energy_input(const HwConfig& hw, const Program& program, const Soc& soc,
                            const EnergyTable& table, uint64_t total_cycles) {
  const size_t n = program.layers.size();
  const auto& timings = soc.scoreboard.timings();
  RunEnergyInput in;
  in.clock_mhz = hw.clock_mhz;
  in.total_cycles = total_cycles;
  in.batch = program.batch;
  in.macs = program.total_macs;
  in.window_cycles = uint64_t(std::llround(kPowerWindowUs * hw.clock_mhz));
  in.layer_events.resize(n);
  for (const ExecutionUnit* u : soc.units()) {
    for (size_t l = 0; l < n; ++l) in.layer_events[l] += u->layer_events()[l];
  }
  // The profile for peak power: each instruction's events over its [start, end), by the rule the
  // units counted with, so the two must agree (checked).
  const BufferPorts ports = buffer_ports(hw, program.dtype);
  EventCounts counted, profiled;
  for (const EventCounts& l : in.layer_events) counted += l;
  in.instructions.resize(program.instructions.size());
  for (size_t i = 0; i < program.instructions.size(); ++i) {
    TimedEvents& t = in.instructions[i];
    t.start = timings[i].start_cycle;
    t.end = timings[i].end_cycle;
    count_instruction_events(program.instructions[i], program.dtype, ports, t.events);
    profiled += t.events;
  }
  NPUSIM_CHECK(counted.n == profiled.n,
               "energy events counted by the units differ from the program's");
  for (const LayerRecord& rec : program.layers) {
    uint64_t start = UINT64_MAX, end = 0;
    for (uint32_t i = rec.first_instruction; i < rec.end_instruction; ++i) {
      start = std::min(start, timings[i].start_cycle);
      end = std::max(end, timings[i].end_cycle);
    }
    in.layer_cycles.push_back(end > start ? end - start : 0);
  }
  if (const auto dram = soc.memory->energy()) {
    in.dram_dynamic_pj = dram->dynamic_pj;
    in.dram_background_pj = dram->background_pj;
  } else {
    in.dram_dynamic_pj = double(soc.memory_bytes_read() + soc.memory_bytes_written()) *
                         table.at("events_pj.simple_memory_byte");
  }
  return in;
}

}  // namespace

void register_power_stats(stats::Registry& reg, const HwConfig& hw, const Program& program,
                          const Soc& soc, uint64_t total_cycles, timeline::Timeline* timeline) {
  const EnergyTable table = load_energy_table(hw.technology_nm);
  const MemoryInterface memory = memory_interface(hw, hw.memory.dram ? &*hw.memory.dram : nullptr);
  const PowerModel model(hw, program.dtype, table, memory,
                         int(soc.load_queues.size() + soc.store_queues.size()));
  const RunEnergyInput in = energy_input(hw, program, soc, table, total_cycles);
  const RunEnergy e = run_energy(model, in);
  if (timeline != nullptr) timeline->set_energy(e.instruction_pj, e.idle_w);
  register_core_stats(reg, hw, program, soc, total_cycles, model);
  EventCounts counted;
  for (const EventCounts& l : in.layer_events) counted += l;

  const size_t n = program.layers.size();
  std::vector<double> intensity;  // ops per off-chip byte; < 0: no off-chip traffic
  std::vector<std::string> bound;
  const double ridge =
      2.0 * hw.chip_peak_macs_per_cycle() * hw.clock_mhz * 1e6 / (memory.peak_bandwidth_gbps * 1e9);
  for (size_t l = 0; l < n; ++l) {
    const LayerRecord& rec = program.layers[l];
    const uint64_t bytes = rec.dram_read_bytes + rec.dram_write_bytes;
    intensity.push_back(bytes == 0 ? -1.0 : 2.0 * double(rec.macs) / double(bytes));
    bound.push_back(bytes == 0 || intensity.back() >= ridge ? "compute" : "memory");
  }

  register_energy_stats(reg, hw, table, model, counted, e, program.batch, total_cycles);
  reg.value("roofline.ridge_ops_per_byte", "ops/byte",
            "peak ops per second / peak off-chip bytes per second: layers above it are compute "
            "bound",
            ridge);

  reg.column("layers", n, "energy_j", "J",
             "its events, its share of DRAM traffic energy and of the constant power by its span",
             [v = e.layer_j](size_t i) { return v[i]; });
  reg.column("layers", n, "energy_by_component_j", "J",
             "energy_j by part, as energy.by_component_j (its events by component, its DRAM "
             "share, its span's share of clock, DRAM background and leakage)",
             [v = e.layer_by_part_j](size_t i) {
               nlohmann::json parts = nlohmann::json::object();
               for (size_t p = 0; p < v[i].size(); ++p) parts[part_name(p)] = v[i][p];
               return parts;
             });
  reg.column(
      "layers", n, "arithmetic_intensity", "ops/byte",
      "2 x macs / its off-chip bytes (null without off-chip traffic)",
      [v = intensity](size_t i) { return v[i] < 0 ? nlohmann::json() : nlohmann::json(v[i]); });
  reg.column("layers", n, "roofline_bound", "",
             "compute if arithmetic_intensity >= roofline.ridge_ops_per_byte, else memory",
             [v = bound](size_t i) { return v[i]; });
  const std::vector<StallCauses> stalls = layer_stalls(soc, n);
  reg.column("layers", n, "stall_dma_cycles", "cycles",
             "its units' dependency waits whose last dependency was a DMA or core-to-core copy "
             "instruction",
             [v = stalls](size_t i) { return v[i].dma; });
  reg.column("layers", n, "stall_vector_cycles", "cycles",
             "its units' dependency waits whose last dependency was a vector instruction",
             [v = stalls](size_t i) { return v[i].vector; });
  reg.column("layers", n, "stall_dependency_cycles", "cycles",
             "its units' dependency waits whose last dependency was a matrix instruction",
             [v = stalls](size_t i) { return v[i].matrix; });
}

std::string power_report(const nlohmann::json& s, bool per_layer) {
  if (!s.contains("energy")) return "";
  const auto& en = s["energy"];
  const auto& pw = s["power"];
  const auto& ar = s["area"];
  const double total_j = en["total_j"].get<double>();
  const double total_mm2 = ar["total_mm2"].get<double>();
  std::string out = fmt::format(
      "  energy             {:.4g} J, {:.4g} J per inference ({} nm)\n"
      "  power              {:.2f} W average, {:.2f} W peak over {} cycles, {:.2f} W idle\n"
      "  area               {:.1f} mm2\n"
      "  efficiency         {:.3f} TOPS/W, {:.4g} inferences/J\n",
      total_j, en["per_inference_j"].get<double>(), en["technology_nm"].get<int>(),
      pw["average_w"].get<double>(), pw["peak_w"].get<double>(),
      pw["window_cycles"].get<uint64_t>(), pw["idle_w"].get<double>(), total_mm2,
      s["efficiency"]["tops_per_w"].get<double>(),
      s["efficiency"]["inferences_per_j"].get<double>());
  out += fmt::format("\n  {:<16} {:>12} {:>8} {:>10} {:>10} {:>8}\n", "component", "energy J",
                     "share %", "power W", "area mm2", "area %");
  for (const auto& [name, j] : en["by_component_j"].items()) {
    const auto& a = ar["by_component_mm2"];
    const bool has_area = a.contains(name);
    out += fmt::format(
        "  {:<16} {:>12.4g} {:>8.2f} {:>10.3f} {:>10} {:>8}\n", name, j.get<double>(),
        total_j > 0 ? 100.0 * j.get<double>() / total_j : 0.0,
        pw["by_component_w"][name].get<double>(),
        has_area ? fmt::format("{:.2f}", a[name].get<double>()) : "-",
        has_area ? fmt::format("{:.1f}", 100.0 * a[name].get<double>() / total_mm2) : "-");
  }
  if (per_layer) {
    out += fmt::format("\n  {:<16} {:>11} {:>10} {:>8} {:>11} {:>11} {:>11} {:>11}\n", "layer",
                       "energy J", "ops/byte", "bound", "stall dma", "stall vpu", "stall deps",
                       "bank confl");
    for (const auto& l : s["layers"]) {
      const auto& ai = l["arithmetic_intensity"];
      out += fmt::format(
          "  {:<16} {:>11.4g} {:>10} {:>8} {:>11} {:>11} {:>11} {:>11}\n",
          printable_text(l["name"].get<std::string>()), l["energy_j"].get<double>(),
          ai.is_null() ? "-" : fmt::format("{:.1f}", ai.get<double>()),
          l["roofline_bound"].get<std::string>(), l["stall_dma_cycles"].get<uint64_t>(),
          l["stall_vector_cycles"].get<uint64_t>(), l["stall_dependency_cycles"].get<uint64_t>(),
          l["bank_conflict_cycles"].get<uint64_t>());
    }
  }
  return out;
}

namespace {
std::string csv_field(const nlohmann::json& v) {
  // A name's control characters (and bytes outside UTF-8) as \xNN, as in report.txt.
  std::string text = v.is_string() ? printable_text(v.get<std::string>())
                     : v.is_null() ? ""
                                   : v.dump();
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}
}  // namespace

std::string layers_csv(const nlohmann::json& s) {
  std::vector<std::string> keys;
  if (!s.contains("layers") || s["layers"].empty()) return "";
  for (const auto& [k, v] : s["layers"].front().items()) {
    if (!v.is_object() && !v.is_array()) keys.push_back(k);
  }
  // The layer's name first, then the figures (alphabetical, as stats.json lists them).
  auto name = std::find(keys.begin(), keys.end(), "name");
  if (name != keys.end()) std::rotate(keys.begin(), name, name + 1);
  std::string out;
  const auto line = [&](auto field) {
    for (size_t i = 0; i < keys.size(); ++i) {
      if (i > 0) out += ',';
      out += field(keys[i]);
    }
    out += '\n';
  };
  line([](const std::string& k) { return k; });
  for (const auto& row : s["layers"]) line([&](const std::string& k) { return csv_field(row[k]); });
  return out;
}

}  // namespace npusim
