// Energy per event, SRAM and logic area, leakage and clock power of one CMOS technology node: the
// data of configs/energy/<n>nm.json (embedded in the binary), every figure with its source.
//
// 45nm.json holds the base figures (Horowitz, ISSCC 2014, and the sources named beside each
// value). Every other node file names its base and two factors relative to it: `energy_factor`
// multiplies every dynamic energy (events and the SRAM reference access), `area_factor` every
// area; figures that do not follow the rule (leakage, clock power, SRAM bit cell, off-chip
// figures) are given in the node file itself and replace the scaled value. docs/power.md states
// the rule and its sources.
//
// SRAM (CACTI-style, fitted to Horowitz's 8 KiB / 32 KiB / 1 MiB points): one access of a bank of
// B bytes through a port of w bits costs
//     E(B, w) = sram_reference_pj * (w / sram_reference_width_bits)
//               * (B / sram_reference_bytes) ^ sram_capacity_exponent
// (a write costs sram_write_factor times a read), and a buffer of C bytes in b banks with a w-bit
// port takes
//     A = 8 C * sram_bitcell_um2 / sram_array_efficiency + b * w * sram_column_periphery_um2.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "arch/technology_nodes.hpp"

namespace npusim {

// The keys of an energy table: "<section>.<name>" ("events_pj.mac_int8").
struct EnergyKey {
  const char* section;
  const char* name;
  const char* unit;
  // How the key scales from the base node: "energy", "area" or "" (given per node or unscaled).
  const char* scaling;
  const char* meaning;
};
const std::vector<EnergyKey>& energy_keys();

struct EnergyTable {
  std::string origin;  // configs/energy/<n>nm.json, or the file it was read from
  int node_nm = 0;
  std::map<std::string, double> values;        // "<section>.<name>" -> value, in the key's unit
  std::map<std::string, std::string> sources;  // "<section>.<name>" -> where the value comes from

  // The value of a key (an internal error if the table lacks it).
  double at(const std::string& key) const;
  // SRAM energy of one read / write of a bank of `bank_bytes` through a `width_bits` port, pJ.
  double sram_read_pj(uint64_t bank_bytes, int width_bits) const;
  double sram_write_pj(uint64_t bank_bytes, int width_bits) const;
  // SRAM area, mm^2.
  double sram_area_mm2(uint64_t capacity_bytes, int banks, int width_bits) const;
};

// The table of a node, scaled from its base as the node file says.
EnergyTable load_energy_table(int node_nm);
// Parses one node file; `base` (null for a base file) is the resolved table of its `scale_from`.
// Every problem is a UserError naming `origin` and the JSON pointer.
EnergyTable parse_energy_table(const nlohmann::json& root, const std::string& origin,
                               const EnergyTable* base);

}  // namespace npusim
