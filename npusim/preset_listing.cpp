// The `npusim presets` listing (preset_listing.hpp).
#include "npusim/preset_listing.hpp"

#include <fmt/format.h>

#include "npusim/power_stats.hpp"

namespace npusim {

namespace {

std::string bytes_text(uint64_t bytes) {
  if (bytes >= (1ull << 30) && bytes % (1ull << 30) == 0) return fmt::format("{} GiB", bytes >> 30);
  if (bytes >= (1ull << 20) && bytes % (1ull << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  if (bytes >= (1ull << 20)) return fmt::format("{:.2f} MiB", bytes / double(1ull << 20));
  if (bytes % 1024 == 0) return fmt::format("{} KiB", bytes >> 10);
  return fmt::format("{} B", bytes);
}

constexpr int kNameWidth = 12;

}  // namespace

std::string preset_headline(const HwConfig& hw) {
  const MatrixUnitConfig& m = hw.matrix_unit;
  const std::string unit =
      m.kind == MatrixUnitKind::kCube
          ? fmt::format("{}x{}x{} cube", m.block_m, m.rows, m.cols)
          : fmt::format("{}x{} {} systolic array", m.rows, m.cols, to_string(m.dataflow));
  const std::string cores = hw.cores > 1 ? fmt::format(", {} cores", hw.cores) : "";
  return fmt::format("{} x{} at {} MHz{}", unit, m.count, hw.clock_mhz, cores);
}

std::vector<PresetFact> preset_facts(const HwConfig& hw) {
  std::vector<PresetFact> facts;
  // Every matrix unit of npusim completes one MAC per multiplier per cycle in either type, so the
  // peak is the same for int8 and bf16 (2 ops per MAC).
  // The chip's peak: every core's matrix units.
  const double tera_ops = 2.0 * hw.chip_peak_macs_per_cycle() * hw.clock_mhz * 1e6 / 1e12;
  const std::string per_core = hw.cores > 1 ? fmt::format(", {} cores of {} MACs per cycle",
                                                          hw.cores, hw.peak_macs_per_cycle())
                                            : "";
  facts.push_back(
      {"peak", fmt::format("{:.2f} TOPS int8, {:.2f} TFLOPS bf16 ({} MACs per cycle{})", tera_ops,
                           tera_ops, hw.chip_peak_macs_per_cycle(), per_core)});
  if (hw.cores > 1) {
    facts.push_back({"interconnect", fmt::format("{}, {} B/cycle per link, {} cycles per hop",
                                                 to_string(hw.interconnect.topology),
                                                 hw.interconnect.link_bytes_per_cycle,
                                                 hw.interconnect.hop_latency_cycles)});
  }
  facts.push_back({"buffers", fmt::format("unified {}, weight {}, accumulators {}",
                                          bytes_text(hw.unified_buffer.capacity_bytes),
                                          bytes_text(hw.weight_buffer.capacity_bytes),
                                          bytes_text(hw.accumulators.capacity_bytes))});
  const OffChipMemoryConfig& mem = hw.memory;
  const std::string model =
      mem.model == MemoryModel::kDram
          ? fmt::format("{}{}", mem.preset,
                        mem.channels == 0   ? ""
                        : mem.channels == 1 ? ", 1 channel"
                                            : fmt::format(", {} channels", mem.channels))
          : fmt::format("simple, {} ns", mem.latency_ns);
  facts.push_back({"off-chip", fmt::format("{} GB/s ({}), {}", mem.bandwidth_gbps, model,
                                           bytes_text(mem.capacity_bytes))});
  facts.push_back({"technology", fmt::format("{} nm, {:.0f} mm2 modelled die area (docs/power.md)",
                                             hw.technology_nm, die_area_mm2(hw))});
  facts.push_back({"data type", fmt::format("{} by default", to_string(hw.data_types.activation))});
  if (hw.host) {
    const HostLinkConfig& l = hw.host->link;
    const std::string link = l.kind == HostLinkKind::kPcie
                                 ? fmt::format("PCIe {}.0 x{}", l.pcie_generation, l.pcie_lanes)
                                 : std::string("a link");
    facts.push_back({"host", fmt::format("{:g} GFLOP/s, {:g} GB/s, over {} ({:.2f} GB/s, {:g} ns) "
                                         "(docs/heterogeneous.md)",
                                         hw.host->gflops, hw.host->memory_gbps, link,
                                         l.bandwidth_gbps, l.latency_ns)});
  }
  return facts;
}

std::string format_preset_entry(const std::string& name, const HwConfig& hw) {
  std::string out = fmt::format("{:<{}} {}\n", name, kNameWidth, preset_headline(hw));
  for (const PresetFact& fact : preset_facts(hw)) {
    out += fmt::format("{:<{}} {}: {}\n", "", kNameWidth, fact.label, fact.value);
  }
  out += fmt::format("{:<{}} {}\n", "", kNameWidth, hw.description);
  return out;
}

}  // namespace npusim
