#include "compat/scalesim/scalesim_report.hpp"

#include <fmt/core.h>

#include <charconv>
#include <cmath>
#include <cstdlib>

#include "support/error.hpp"

namespace npusim::scalesim {

std::string python_float(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (value == 0) return std::signbit(value) ? "-0.0" : "0.0";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::scientific);
  NPUSIM_CHECK(ec == std::errc(), "to_chars failed for {}", value);
  std::string sci(buf, end);  // "-d.ddde+XX"
  std::string sign;
  if (sci[0] == '-') {
    sign = "-";
    sci.erase(0, 1);
  }
  const size_t e_pos = sci.find('e');
  std::string mantissa = sci.substr(0, e_pos);
  const int exponent = std::atoi(sci.c_str() + e_pos + 1);
  std::string digits;
  for (char ch : mantissa)
    if (ch != '.') digits += ch;
  const int nd = static_cast<int>(digits.size());
  std::string out;
  if (exponent >= -4 && exponent < 16) {
    if (exponent >= nd - 1) {
      out = digits + std::string(static_cast<size_t>(exponent - (nd - 1)), '0') + ".0";
    } else if (exponent >= 0) {
      out = digits.substr(0, static_cast<size_t>(exponent + 1)) + "." +
            digits.substr(static_cast<size_t>(exponent + 1));
    } else {
      out = "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
    }
  } else {
    out = digits.substr(0, 1);
    if (nd > 1) out += "." + digits.substr(1);
    out += fmt::format("e{}{:02d}", exponent < 0 ? '-' : '+', std::abs(exponent));
  }
  return sign + out;
}

namespace {
std::string cycle(int64_t c) { return python_float(static_cast<double>(c)); }

std::string line(size_t id, const std::vector<std::string>& items) {
  std::string out = std::to_string(id) + ", ";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ", ";
    out += items[i];
  }
  out += ",\n";
  return out;
}
}  // namespace

std::string compute_report(const std::vector<LayerResult>& layers) {
  std::string out =
      "LayerID, Total Cycles, Stall Cycles, Overall Util %, Mapping Efficiency %, Compute Util "
      "%,\n";
  for (size_t id = 0; id < layers.size(); ++id) {
    const auto& l = layers[id];
    out += line(id, {std::to_string(l.total_cycles), std::to_string(l.stall_cycles),
                     python_float(l.overall_util_pct), python_float(l.mapping_efficiency_pct),
                     python_float(l.compute_util_pct)});
  }
  return out;
}

std::string bandwidth_report(const std::vector<LayerResult>& layers) {
  std::string out =
      "LayerID, Avg IFMAP SRAM BW, Avg FILTER SRAM BW, Avg OFMAP SRAM BW, Avg IFMAP DRAM BW, "
      "Avg FILTER DRAM BW, Avg OFMAP DRAM BW,\n";
  for (size_t id = 0; id < layers.size(); ++id) {
    const auto& l = layers[id];
    out += line(id, {python_float(l.avg_sram_bw(l.ifmap)), python_float(l.avg_sram_bw(l.filter)),
                     python_float(l.avg_sram_bw(l.ofmap)), python_float(l.avg_dram_bw(l.ifmap)),
                     python_float(l.avg_dram_bw(l.filter)), python_float(l.avg_dram_bw(l.ofmap))});
  }
  return out;
}

std::string detailed_access_report(const std::vector<LayerResult>& layers) {
  std::string out =
      "LayerID, SRAM IFMAP Start Cycle, SRAM IFMAP Stop Cycle, SRAM IFMAP Reads, SRAM Filter "
      "Start Cycle, SRAM Filter Stop Cycle, SRAM Filter Reads, SRAM OFMAP Start Cycle, SRAM "
      "OFMAP Stop Cycle, SRAM OFMAP Writes, DRAM IFMAP Start Cycle, DRAM IFMAP Stop Cycle, DRAM "
      "IFMAP Reads, DRAM Filter Start Cycle, DRAM Filter Stop Cycle, DRAM Filter Reads, DRAM "
      "OFMAP Start Cycle, DRAM OFMAP Stop Cycle, DRAM OFMAP Writes,\n";
  for (size_t id = 0; id < layers.size(); ++id) {
    const auto& l = layers[id];
    std::vector<std::string> items;
    for (const OperandAccess* a : {&l.ifmap, &l.filter, &l.ofmap}) {
      items.push_back(cycle(a->sram_start_cycle));
      items.push_back(cycle(a->sram_stop_cycle));
      items.push_back(std::to_string(a->sram_accesses));
    }
    for (const OperandAccess* a : {&l.ifmap, &l.filter, &l.ofmap}) {
      items.push_back(cycle(a->dram_start_cycle));
      items.push_back(cycle(a->dram_stop_cycle));
      items.push_back(std::to_string(a->dram_accesses));
    }
    out += line(id, items);
  }
  return out;
}

}  // namespace npusim::scalesim
