#include "power/energy_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "support/embedded_files.hpp"
#include "support/error.hpp"
#include "support/json_reader.hpp"

namespace npusim {

const std::vector<EnergyKey>& energy_keys() {
  static const std::vector<EnergyKey> keys = {
      {"events_pj", "mac_int8", "pJ", "energy",
       "one int8 x int8 multiply with its int32 accumulate"},
      {"events_pj", "mac_bf16", "pJ", "energy",
       "one bf16 x bf16 multiply with its fp32 accumulate"},
      {"events_pj", "mac_fp16", "pJ", "energy",
       "one fp16 x fp16 multiply with its fp32 accumulate"},
      {"events_pj", "mac_fp8", "pJ", "energy",
       "one fp8 x fp8 multiply (E4M3 or E5M2) with its fp32 accumulate"},
      {"events_pj", "pe_register_move", "pJ", "energy",
       "operand and partial-sum registers of one PE shifting in one active PE-cycle"},
      {"events_pj", "weight_register_load", "pJ", "energy",
       "one stationary value written into a PE register"},
      {"events_pj", "vector_add_mul", "pJ", "energy", "one vector-unit add or multiply (32-bit)"},
      {"events_pj", "vector_compare", "pJ", "energy", "one vector-unit compare, max or clamp"},
      {"events_pj", "vector_fp32_add_mul", "pJ", "energy",
       "one vector-unit fp32 add or multiply (the optimizer's update)"},
      {"events_pj", "vector_table", "pJ", "energy",
       "one transcendental through a table (exp, reciprocal, activation)"},
      {"events_pj", "vector_reduction", "pJ", "energy", "one element added into a reduction"},
      {"events_pj", "dma_byte", "pJ", "energy",
       "one byte moved by a DMA queue across the chip (address generation and wires)"},
      {"events_pj", "link_byte", "pJ", "energy",
       "one byte a core-to-core copy moves over the interconnect (wires and router buffers)"},
      {"events_pj", "sparse_select_bit", "pJ", "energy",
       "N:M sparse arrays: one activation bit of a PE's group register shifting one PE and "
       "entering its M:1 multiplexer"},
      {"events_pj", "metadata_bit_load", "pJ", "energy",
       "N:M sparse arrays: one bit of a weight's index written into a PE's metadata register"},
      {"events_pj", "decompress_bit", "pJ", "energy",
       "compressed weight loads: one bit of the dense box the DMA's decompressor writes"},
      {"events_pj", "simple_memory_byte", "pJ", "",
       "one byte read or written in off-chip memory, for memory.model simple"},
      {"sram", "reference_pj", "pJ", "energy", "read of the reference SRAM"},
      {"sram", "reference_bytes", "bytes", "", "capacity of the reference SRAM"},
      {"sram", "reference_width_bits", "bits", "", "port width of the reference SRAM"},
      {"sram", "capacity_exponent", "-", "", "energy grows as capacity to this power"},
      {"sram", "write_factor", "-", "", "a write costs this many reads"},
      {"area_um2", "mac_int8", "um2", "area", "int8 multiplier and int32 adder of one PE"},
      {"area_um2", "mac_bf16", "um2", "area", "bf16 multiplier and fp32 adder of one PE"},
      {"area_um2", "mac_fp16", "um2", "area", "fp16 multiplier and fp32 adder of one PE"},
      {"area_um2", "fp8_multiplier", "um2", "area",
       "an fp8 multiplier beside a bf16 PE's own (data_types.fp8), sharing its fp32 adder"},
      {"area_um2", "register_bit", "um2", "area", "one flip-flop bit"},
      {"area_um2", "mux2_bit", "um2", "area", "one bit of a 2:1 multiplexer"},
      {"area_um2", "vector_lane", "um2", "area",
       "one vector-unit lane (fp32 mult and add, compare)"},
      {"area_um2", "dma_queue", "um2", "area", "one DMA queue (address generator, burst tracking)"},
      {"area_um2", "controller", "um2", "area", "instruction issue, scoreboard and host interface"},
      {"area_um2", "sram_bitcell", "um2", "area", "one SRAM bit cell"},
      {"area_um2", "sram_column_periphery", "um2", "area",
       "sense amplifier, write driver and column mux of one port bit of one bank"},
      {"area_um2", "memory_phy_per_dq_ddr", "um2", "",
       "off-chip memory PHY per data pin, DDR/LPDDR (analog: not scaled)"},
      {"area_um2", "memory_phy_per_dq_hbm", "um2", "",
       "off-chip memory PHY per data pin, HBM (analog: not scaled)"},
      {"layout", "logic_overhead", "-", "",
       "placed-and-routed logic area / sum of its cells' areas"},
      {"layout", "sram_overhead", "-", "", "SRAM macro area / its bit cells' area"},
      {"layout", "die_overhead_fraction", "-", "",
       "share of the die outside the modelled units (pads, I/O, clocking, white space)"},
      {"static", "logic_leakage_w_per_mm2", "W/mm2", "", "leakage of logic"},
      {"static", "sram_leakage_w_per_mm2", "W/mm2", "", "leakage of SRAM"},
      {"static", "clock_pj_per_mm2_cycle", "pJ/mm2", "",
       "clock tree and idle register toggling, every cycle, per mm2 of the die"},
  };
  return keys;
}

double EnergyTable::at(const std::string& key) const {
  auto it = values.find(key);
  NPUSIM_CHECK(it != values.end(), "energy table {} has no '{}'", origin, key);
  return it->second;
}

double EnergyTable::sram_read_pj(uint64_t bank_bytes, int width_bits) const {
  return at("sram.reference_pj") * (double(width_bits) / at("sram.reference_width_bits")) *
         std::pow(double(bank_bytes) / at("sram.reference_bytes"), at("sram.capacity_exponent"));
}

double EnergyTable::sram_write_pj(uint64_t bank_bytes, int width_bits) const {
  return sram_read_pj(bank_bytes, width_bits) * at("sram.write_factor");
}

double EnergyTable::sram_area_mm2(uint64_t capacity_bytes, int banks, int width_bits) const {
  const double cells =
      8.0 * double(capacity_bytes) * at("area_um2.sram_bitcell") * at("layout.sram_overhead");
  const double periphery = double(banks) * width_bits * at("area_um2.sram_column_periphery");
  return (cells + periphery) * 1e-6;
}

namespace {

constexpr int kEnergySchemaVersion = 1;

std::string node_name(int nm) { return fmt::format("{}nm", nm); }

// A value object: {"value": number, "source": "..."}.
void read_value(ObjectReader& section, const EnergyKey& k, bool required, EnergyTable& t) {
  const std::string key = std::string(k.section) + "." + k.name;
  if (!required && section.raw(k.name) == nullptr) return;  // raw() marks the key known
  ObjectReader v = section.object(k.name, true);
  auto value = v.number_required("value", 0.0, 1e9);
  auto source = v.string_required("source");
  if (source && source->empty()) {
    v.diagnostics().error(v.pointer_of("source"), "expected where the figure comes from");
  }
  v.finish();
  if (value) t.values[key] = *value;
  if (source) t.sources[key] = *source;
}

}  // namespace

EnergyTable parse_energy_table(const nlohmann::json& root, const std::string& origin,
                               const EnergyTable* base) {
  JsonDiagnostics diag(origin);
  ObjectReader top(diag, &root, "", true);
  EnergyTable t;
  t.origin = origin;
  auto version = top.integer_required("schema_version", 1, 1000);
  if (version && *version != kEnergySchemaVersion) {
    diag.error("/schema_version",
               fmt::format("expected {}, got {}", kEnergySchemaVersion, *version));
  }
  t.node_nm = static_cast<int>(top.integer_required("node_nm", 1, 1000).value_or(0));
  top.string("description", "");
  double energy_factor = 1.0, area_factor = 1.0;
  if (base != nullptr) {
    top.string_required("scale_from");
    for (auto [name, factor] :
         {std::pair{"energy_factor", &energy_factor}, std::pair{"area_factor", &area_factor}}) {
      ObjectReader f = top.object(name, true);
      *factor = f.number_required("value", 1e-6, 1e6).value_or(1.0);
      const std::string source = f.string_required("source").value_or("");
      t.sources[name] = source;
      f.finish();
    }
    for (const EnergyKey& k : energy_keys()) {
      const std::string key = std::string(k.section) + "." + k.name;
      const std::string scaling = k.scaling;
      const double f = scaling == "energy" ? energy_factor : scaling == "area" ? area_factor : 1.0;
      t.values[key] = base->at(key) * f;
      t.sources[key] = scaling.empty()
                           ? base->sources.at(key)
                           : fmt::format("{} x {} factor {} ({})", base->sources.at(key), scaling,
                                         f, t.sources.at(scaling + "_factor"));
    }
  }
  std::vector<std::string> sections;
  for (const EnergyKey& k : energy_keys()) {
    if (std::find(sections.begin(), sections.end(), k.section) == sections.end()) {
      sections.push_back(k.section);
    }
  }
  for (const std::string& s : sections) {
    ObjectReader section = top.object(s, base == nullptr);
    for (const EnergyKey& k : energy_keys()) {
      if (k.section == s) read_value(section, k, base == nullptr, t);
    }
    section.finish();
  }
  top.finish();
  diag.throw_if_errors();
  return t;
}

EnergyTable load_energy_table(int node_nm) {
  const EmbeddedFile* file = find_embedded_file("energy", node_name(node_nm));
  NPUSIM_CHECK(file != nullptr, "no configs/energy/{}.json", node_name(node_nm));
  const std::string origin = fmt::format("configs/energy/{}.json", file->name);
  const nlohmann::json root = parse_json_text(file->text, origin);
  if (!root.contains("scale_from")) return parse_energy_table(root, origin, nullptr);
  const std::string from =
      root["scale_from"].is_string() ? root["scale_from"].get<std::string>() : "";
  const EmbeddedFile* base_file = find_embedded_file("energy", from);
  if (base_file == nullptr || from == file->name ||
      base_file->text.find("scale_from") != std::string::npos) {
    throw UserError(
        fmt::format("{}: /scale_from: expected a base node file of configs/energy "
                    "(one without scale_from), got '{}'",
                    origin, from));
  }
  const std::string base_origin = fmt::format("configs/energy/{}.json", from);
  const EnergyTable base =
      parse_energy_table(parse_json_text(base_file->text, base_origin), base_origin, nullptr);
  return parse_energy_table(root, origin, &base);
}

}  // namespace npusim
