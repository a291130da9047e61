#include "power/power_model.hpp"

#include <algorithm>
#include <bit>
#include <map>

#include "support/error.hpp"

namespace npusim {

namespace {

struct ComponentInfo {
  const char* name;
  const char* meaning;
};
constexpr ComponentInfo kComponentInfo[kComponents] = {
    {"matrix_unit", "the systolic arrays (all of them)"},
    {"vector_unit", "the vector unit"},
    {"dma", "the DMA queues"},
    {"control", "instruction issue, scoreboard, host interface"},
    {"unified_buffer", "the unified buffer (SRAM)"},
    {"weight_buffer", "the weight buffer (SRAM)"},
    {"accumulators", "the accumulators (SRAM)"},
    {"memory_phy", "the off-chip memory interface (PHY)"},
    {"other", "pads, I/O and the rest of the die"},
};

double mac_area(const EnergyTable& t, DataType d) {
  return d == DataType::kBf16   ? t.at("area_um2.mac_bf16")
         : d == DataType::kFp16 ? t.at("area_um2.mac_fp16")
                                : t.at("area_um2.mac_int8");
}

}  // namespace

const char* component_name(Component c) { return kComponentInfo[size_t(c)].name; }
const char* component_meaning(Component c) { return kComponentInfo[size_t(c)].meaning; }

const char* part_name(size_t part) {
  if (part == kDramPart) return "dram";
  if (part == kLeakagePart) return "leakage";
  return component_name(Component(part));
}

PowerModel::PowerModel(const HwConfig& hw, DataType dtype, const EnergyTable& t,
                       const MemoryInterface& memory, int dma_queues) {
  const auto& m = hw.matrix_unit;
  // Area: the hardware's own data type, whatever type the program runs in.
  const DataType native = hw.data_types.activation;
  const double eb_native = double(size_bytes(native));
  const double logic = t.at("layout.logic_overhead");
  const double banks = m.weight_double_buffer ? 2 : 1;
  double pe_register_bits = 8 * eb_native * (banks + 1) + 32;  // operand, weight(s), partial sum
  double pe_um2 = mac_area(t, native);
  // An array that also multiplies fp8 (data_types.fp8): an fp8 multiplier beside the bf16 one.
  if (!hw.data_types.fp8.empty()) pe_um2 += t.at("area_um2.fp8_multiplier");
  if (m.sparse_n > 0) {
    // N:M sparse PEs (models/systolic/sparsity.hpp): the operand register holds the group of M
    // activations, an M:1 multiplexer of (M - 1) 2:1 cells per bit picks one, and each weight
    // register has its index of ceil(log2 M) bits beside it.
    const double extra_bits = 8 * eb_native * (m.sparse_m - 1);
    pe_register_bits += extra_bits + banks * std::bit_width(unsigned(m.sparse_m - 1));
    pe_um2 += extra_bits * t.at("area_um2.mux2_bit");
  }
  pe_um2 += pe_register_bits * t.at("area_um2.register_bit");
  auto& a = area_mm2;
  a[size_t(Component::kMatrixUnit)] = double(m.count) * m.rows * m.cols * pe_um2 * logic * 1e-6;
  a[size_t(Component::kVectorUnit)] =
      double(hw.vector_unit.lanes) * t.at("area_um2.vector_lane") * logic * 1e-6;
  a[size_t(Component::kDma)] = double(dma_queues) * t.at("area_um2.dma_queue") * logic * 1e-6;
  a[size_t(Component::kControl)] = t.at("area_um2.controller") * logic * 1e-6;
  const BufferPorts native_ports = buffer_ports(hw, native);
  const BufferPorts ports = buffer_ports(hw, dtype);
  struct Buffer {
    Component c;
    const BufferConfig& cfg;
    uint64_t native_port, port;
    EnergyEvent read;
  };
  const Buffer buffers[] = {
      {Component::kUnifiedBuffer, hw.unified_buffer, native_ports.unified, ports.unified,
       EnergyEvent::kUnifiedRead},
      {Component::kWeightBuffer, hw.weight_buffer, native_ports.weight, ports.weight,
       EnergyEvent::kWeightRead},
      {Component::kAccumulators, hw.accumulators, native_ports.accumulators, ports.accumulators,
       EnergyEvent::kAccumulatorRead},
  };
  for (const Buffer& b : buffers) {
    a[size_t(b.c)] = t.sram_area_mm2(b.cfg.capacity_bytes, b.cfg.banks, int(b.native_port * 8));
    event_pj[size_t(b.read)] = t.sram_read_pj(b.cfg.bank_bytes(), int(b.port * 8));
    event_pj[size_t(b.read) + 1] = t.sram_write_pj(b.cfg.bank_bytes(), int(b.port * 8));
    event_component[size_t(b.read)] = event_component[size_t(b.read) + 1] = b.c;
  }
  // Each core has its own units and buffers (the DMA queues are counted over all cores already);
  // the memory interface is the chip's.
  for (Component c :
       {Component::kMatrixUnit, Component::kVectorUnit, Component::kControl,
        Component::kUnifiedBuffer, Component::kWeightBuffer, Component::kAccumulators}) {
    a[size_t(c)] *= hw.cores;
  }
  a[size_t(Component::kMemoryPhy)] =
      double(memory.data_pins) *
      t.at(memory.hbm ? "area_um2.memory_phy_per_dq_hbm" : "area_um2.memory_phy_per_dq_ddr") * 1e-6;
  double modelled = 0;
  for (size_t c = 0; c < kComponents; ++c) modelled += a[c];
  const double f = t.at("layout.die_overhead_fraction");
  NPUSIM_CHECK(f >= 0 && f < 1, "{}: die_overhead_fraction {} outside [0, 1)", t.origin, f);
  a[size_t(Component::kOther)] = modelled * f / (1 - f);
  die_mm2 = modelled + a[size_t(Component::kOther)];

  for (size_t c = 0; c < kComponents; ++c) {
    const bool sram = Component(c) == Component::kUnifiedBuffer ||
                      Component(c) == Component::kWeightBuffer ||
                      Component(c) == Component::kAccumulators;
    leakage_w[c] =
        a[c] * t.at(sram ? "static.sram_leakage_w_per_mm2" : "static.logic_leakage_w_per_mm2");
    clock_pj_per_cycle[c] = a[c] * t.at("static.clock_pj_per_mm2_cycle");
  }

  const std::pair<EnergyEvent, const char*> priced[] = {
      {EnergyEvent::kMacInt8, "events_pj.mac_int8"},
      {EnergyEvent::kMacBf16, "events_pj.mac_bf16"},
      {EnergyEvent::kMacFp16, "events_pj.mac_fp16"},
      {EnergyEvent::kMacFp8, "events_pj.mac_fp8"},
      {EnergyEvent::kPeRegisterMove, "events_pj.pe_register_move"},
      {EnergyEvent::kWeightRegisterLoad, "events_pj.weight_register_load"},
      {EnergyEvent::kVectorAddMul, "events_pj.vector_add_mul"},
      {EnergyEvent::kVectorCompare, "events_pj.vector_compare"},
      {EnergyEvent::kVectorTable, "events_pj.vector_table"},
      {EnergyEvent::kVectorReduction, "events_pj.vector_reduction"},
      {EnergyEvent::kDmaByte, "events_pj.dma_byte"},
      {EnergyEvent::kLinkByte, "events_pj.link_byte"},
      {EnergyEvent::kSparseSelectBit, "events_pj.sparse_select_bit"},
      {EnergyEvent::kMetadataBitLoad, "events_pj.metadata_bit_load"},
      {EnergyEvent::kDecompressBit, "events_pj.decompress_bit"},
      {EnergyEvent::kVectorFp32AddMul, "events_pj.vector_fp32_add_mul"},
  };
  for (const auto& [e, key] : priced) {
    event_pj[size_t(e)] = t.at(key);
    const bool array = size_t(e) <= size_t(EnergyEvent::kWeightRegisterLoad) ||
                       e == EnergyEvent::kSparseSelectBit || e == EnergyEvent::kMetadataBitLoad;
    event_component[size_t(e)] = array ? Component::kMatrixUnit
                                 : e == EnergyEvent::kDmaByte || e == EnergyEvent::kLinkByte ||
                                         e == EnergyEvent::kDecompressBit
                                     ? Component::kDma
                                     : Component::kVectorUnit;
  }
}

double PowerModel::dynamic_pj(const EventCounts& counts,
                              std::array<double, kComponents>& by) const {
  double total = 0;
  for (size_t e = 0; e < kEnergyEvents; ++e) {
    const double pj = double(counts.n[e]) * event_pj[e];
    by[size_t(event_component[e])] += pj;
    total += pj;
  }
  return total;
}

double PowerModel::leakage_total_w() const {
  double w = 0;
  for (double x : leakage_w) w += x;
  return w;
}

double PowerModel::clock_total_pj_per_cycle() const {
  double pj = 0;
  for (double x : clock_pj_per_cycle) pj += x;
  return pj;
}

double peak_power_w(const std::vector<TimedEvents>& intervals, const std::vector<double>& energy_pj,
                    double constant_w, uint64_t total, uint64_t window, double clock_mhz) {
  NPUSIM_CHECK(intervals.size() == energy_pj.size(), "{} intervals, {} energies", intervals.size(),
               energy_pj.size());
  if (total == 0) return constant_w;
  window = std::min(std::max<uint64_t>(window, 1), total);
  // Rate changes (pJ per cycle) at each interval's ends; an empty interval takes one cycle. Sorted
  // stably by cycle and summed per cycle in the order added, as a map from cycle to change would.
  std::vector<std::pair<uint64_t, double>> changes;
  changes.reserve(2 * intervals.size());
  for (size_t i = 0; i < intervals.size(); ++i) {
    if (energy_pj[i] == 0) continue;
    const uint64_t s = intervals[i].start;
    const uint64_t e = std::max(intervals[i].end, s + 1);
    const double rate = energy_pj[i] / double(e - s);
    changes.emplace_back(s, rate);
    changes.emplace_back(e, -rate);
  }
  std::stable_sort(changes.begin(), changes.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  // Segments [pos[k], pos[k+1]) at rate[k]; cum[k] = energy before pos[k].
  std::vector<uint64_t> pos{0};
  std::vector<double> rate{0.0}, cum{0.0};
  for (size_t k = 0; k < changes.size();) {
    const uint64_t p = changes[k].first;
    double d = 0;
    for (; k < changes.size() && changes[k].first == p; ++k) d += changes[k].second;
    cum.push_back(cum.back() + rate.back() * double(p - pos.back()));
    pos.push_back(p);
    rate.push_back(rate.back() + d);
  }
  const auto energy_before = [&](uint64_t t) {
    const size_t k = size_t(std::upper_bound(pos.begin(), pos.end(), t) - pos.begin()) - 1;
    return cum[k] + rate[k] * double(t - pos[k]);
  };
  double best = 0;
  const auto consider = [&](uint64_t t) {
    t = std::min(t, total - window);
    best = std::max(best, energy_before(t + window) - energy_before(t));
  };
  consider(0);
  consider(total - window);
  for (uint64_t p : pos) {
    consider(p);
    if (p >= window) consider(p - window);
  }
  return constant_w + best / double(window) * clock_mhz * 1e-6;
}

RunEnergy run_energy(const PowerModel& model, const RunEnergyInput& in) {
  NPUSIM_CHECK(in.layer_events.size() == in.layer_cycles.size(), "{} layers of events, {} spans",
               in.layer_events.size(), in.layer_cycles.size());
  RunEnergy r;
  const double seconds = double(in.total_cycles) / (in.clock_mhz * 1e6);
  std::array<double, kComponents> by{};
  EventCounts all;
  for (const EventCounts& l : in.layer_events) all += l;
  model.dynamic_pj(all, by);
  for (size_t c = 0; c < kComponents; ++c) {
    r.by_part_j[c] = (by[c] + model.clock_pj_per_cycle[c] * double(in.total_cycles)) * 1e-12;
  }
  r.by_part_j[kDramPart] = (in.dram_dynamic_pj + in.dram_background_pj) * 1e-12;
  r.by_part_j[kLeakagePart] = model.leakage_total_w() * seconds;
  for (double j : r.by_part_j) r.total_j += j;

  // The constant part: clock, leakage and the DRAM's background.
  const double constant_j = model.clock_total_pj_per_cycle() * double(in.total_cycles) * 1e-12 +
                            r.by_part_j[kLeakagePart] + in.dram_background_pj * 1e-12;
  const double dma_bytes = double(all[EnergyEvent::kDmaByte]);
  const auto dram_share = [&](const EventCounts& e) {
    return dma_bytes == 0 ? 0.0 : in.dram_dynamic_pj * double(e[EnergyEvent::kDmaByte]) / dma_bytes;
  };
  uint64_t span_sum = 0;
  for (uint64_t c : in.layer_cycles) span_sum += c;
  for (size_t i = 0; i < in.layer_events.size(); ++i) {
    std::array<double, kComponents> by_component{};
    const double dynamic =
        model.dynamic_pj(in.layer_events[i], by_component) + dram_share(in.layer_events[i]);
    const double share = span_sum == 0 ? 1.0 / double(in.layer_cycles.size())
                                       : double(in.layer_cycles[i]) / double(span_sum);
    r.layer_j.push_back(dynamic * 1e-12 + constant_j * share);
    auto& parts = r.layer_by_part_j.emplace_back();
    for (size_t c = 0; c < kComponents; ++c) {
      parts[c] =
          (by_component[c] + model.clock_pj_per_cycle[c] * double(in.total_cycles) * share) * 1e-12;
    }
    parts[kDramPart] = (dram_share(in.layer_events[i]) + in.dram_background_pj * share) * 1e-12;
    parts[kLeakagePart] = r.by_part_j[kLeakagePart] * share;
  }

  r.window_cycles =
      std::min(std::max<uint64_t>(in.window_cycles, 1), std::max<uint64_t>(in.total_cycles, 1));
  if (seconds > 0) {
    r.average_w = r.total_j / seconds;
    r.idle_w = constant_j / seconds;
    std::vector<double>& energy = r.instruction_pj;
    energy.reserve(in.instructions.size());
    for (const TimedEvents& t : in.instructions) {
      std::array<double, kComponents> unused{};
      energy.push_back(model.dynamic_pj(t.events, unused) + dram_share(t.events));
    }
    r.peak_w = peak_power_w(in.instructions, energy, constant_j / seconds, in.total_cycles,
                            r.window_cycles, in.clock_mhz);
    r.tops_per_w = r.average_w > 0 ? 2.0 * double(in.macs) / seconds / 1e12 / r.average_w : 0.0;
  }
  r.inferences_per_j = r.total_j > 0 ? double(in.batch) / r.total_j : 0.0;
  return r;
}

}  // namespace npusim
