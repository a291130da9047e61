#include "npusim/multicore_stats.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace npusim {

namespace {

using Interval = std::pair<uint64_t, uint64_t>;  // [start, end) in cycles

// Sorted, merged copy of `v`.
std::vector<Interval> merged(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  std::vector<Interval> out;
  for (const Interval& x : v) {
    if (x.first >= x.second) continue;
    if (!out.empty() && x.first <= out.back().second) {
      out.back().second = std::max(out.back().second, x.second);
    } else {
      out.push_back(x);
    }
  }
  return out;
}

uint64_t length(const std::vector<Interval>& v) {
  uint64_t n = 0;
  for (const Interval& x : v) n += x.second - x.first;
  return n;
}

// Cycles covered by at least two of the (each merged) interval lists.
uint64_t covered_twice(const std::vector<std::vector<Interval>>& lists) {
  std::vector<std::pair<uint64_t, int>> edges;
  for (const auto& l : lists) {
    for (const Interval& x : l) {
      edges.push_back({x.first, +1});
      edges.push_back({x.second, -1});
    }
  }
  std::sort(edges.begin(), edges.end());
  uint64_t n = 0, last = 0;
  int open = 0;
  for (const auto& [cycle, step] : edges) {
    if (open >= 2) n += cycle - last;
    open += step;
    last = cycle;
  }
  return n;
}

struct CoreFigures {
  uint64_t instructions = 0, active_cycles = 0, end_cycle = 0, mxu_busy = 0, vpu_busy = 0,
           dma_busy = 0, stall = 0, macs = 0, read_bytes = 0, write_bytes = 0, link_bytes = 0;
  double dynamic_j = 0;
  std::vector<Interval> dma;  // merged windows of its DMA instructions
};

}  // namespace

void register_core_stats(stats::Registry& reg, const HwConfig& hw, const Program& program,
                         const Soc& soc, uint64_t total_cycles, const PowerModel& model) {
  const auto& timings = soc.scoreboard.timings();
  std::vector<CoreFigures> f(soc.cores.size());
  std::vector<std::vector<Interval>> all(f.size()), dma(f.size());
  for (const Instruction& instr : program.instructions) {
    // The host CPU and its link are no core's (docs/heterogeneous.md).
    if (instr.unit == UnitKind::kHost || instr.unit == UnitKind::kHostLink) continue;
    const InstructionTiming& t = timings[instr.id];
    CoreFigures& c = f[size_t(instr.core)];
    c.instructions += 1;
    c.end_cycle = std::max(c.end_cycle, t.end_cycle);
    all[size_t(instr.core)].push_back({t.start_cycle, t.end_cycle});
    if (instr.unit == UnitKind::kDmaLoad || instr.unit == UnitKind::kDmaStore) {
      dma[size_t(instr.core)].push_back({t.start_cycle, t.end_cycle});
    }
  }
  for (const auto& core : soc.cores) {
    CoreFigures& c = f[size_t(core->index)];
    c.active_cycles = length(merged(all[size_t(core->index)]));
    c.dma = merged(dma[size_t(core->index)]);
    EventCounts events;
    for (const ExecutionUnit* u : core->units()) {
      c.stall += u->stats().stall_cycles;
      for (const EventCounts& l : u->layer_events()) events += l;
    }
    for (const auto& q : core->load_queues) {
      c.dma_busy += q->stats().busy_cycles;
      c.read_bytes += q->bytes_moved();
    }
    for (const auto& q : core->store_queues) {
      c.dma_busy += q->stats().busy_cycles;
      c.write_bytes += q->bytes_moved();
    }
    for (const auto& m : core->matrix_units) {
      c.mxu_busy += m->stats().busy_cycles;
      c.macs += m->macs();
    }
    c.vpu_busy = core->vector_unit->stats().busy_cycles;
    if (core->link_queue) c.link_bytes = core->link_queue->bytes_sent();
    std::array<double, kComponents> by{};
    c.dynamic_j = model.dynamic_pj(events, by) * 1e-12;
  }

  const size_t n = f.size();
  const auto col = [&](const char* key, const char* unit, const char* what, auto get) {
    reg.column("cores", n, key, unit, what, [f, get](size_t i) { return get(f[i]); });
  };
  reg.column("cores", n, "core", "", "core index", [](size_t i) { return i; });
  col("instructions", "count", "instructions the core executed",
      [](const CoreFigures& c) { return c.instructions; });
  col("busy_cycles", "cycles", "cycles with at least one of the core's instructions in flight",
      [](const CoreFigures& c) { return c.active_cycles; });
  col("end_cycle", "cycles", "completion of the core's last instruction",
      [](const CoreFigures& c) { return c.end_cycle; });
  col("mxu_busy_cycles", "cycles", "busy cycles of the core's matrix units, summed",
      [](const CoreFigures& c) { return c.mxu_busy; });
  col("vpu_busy_cycles", "cycles", "busy cycles of the core's vector unit",
      [](const CoreFigures& c) { return c.vpu_busy; });
  col("dma_busy_cycles", "cycles", "busy cycles of the core's DMA queues, summed",
      [](const CoreFigures& c) { return c.dma_busy; });
  col("stall_cycles", "cycles", "cycles the core's units waited on dependencies, summed",
      [](const CoreFigures& c) { return c.stall; });
  col("macs", "count", "multiply-accumulates of the core's matrix units",
      [](const CoreFigures& c) { return c.macs; });
  const double core_peak = hw.peak_macs_per_cycle();
  col("mxu_utilization", "ratio", "macs / (total_cycles x one core's peak MACs per cycle)",
      [core_peak, total_cycles](const CoreFigures& c) {
        return total_cycles == 0 ? 0.0 : double(c.macs) / (core_peak * double(total_cycles));
      });
  col("dram_read_bytes", "bytes", "off-chip bytes the core's DMA load queues moved",
      [](const CoreFigures& c) { return c.read_bytes; });
  col("dram_write_bytes", "bytes", "off-chip bytes the core's DMA store queues moved",
      [](const CoreFigures& c) { return c.write_bytes; });
  col("link_bytes", "bytes", "bytes the core's copies sent to other cores over the interconnect",
      [](const CoreFigures& c) { return c.link_bytes; });
  col("dynamic_energy_j", "J",
      "energy of the core's events (MACs, buffer accesses, vector ops, DMA bytes); clock, "
      "leakage and off-chip memory are the chip's (energy.by_component_j)",
      [](const CoreFigures& c) { return c.dynamic_j; });

  // Load imbalance over the cores the program uses: max / mean busy cycles.
  uint64_t max_busy = 0, sum_busy = 0;
  std::vector<std::vector<Interval>> dma_windows;
  for (int c = 0; c < program.cores; ++c) {
    max_busy = std::max(max_busy, f[size_t(c)].active_cycles);
    sum_busy += f[size_t(c)].active_cycles;
    dma_windows.push_back(f[size_t(c)].dma);
  }
  const double mean = double(sum_busy) / program.cores;
  const double bytes = double(soc.memory_bytes_read() + soc.memory_bytes_written());
  // The memory's peak: a DRAM preset's own (bandwidth_gbps may be 0 there), else bandwidth_gbps.
  const double peak_gbps =
      hw.memory.dram ? hw.memory.dram->peak_bandwidth_gbps() : hw.memory.bandwidth_gbps;
  const double peak_bytes_per_cycle = peak_gbps / (hw.clock_mhz * 1e-3);
  reg.value("chip.cores", "count", "cores of the chip (hardware `cores`)", hw.cores);
  reg.value("chip.cores_used", "count", "cores the program runs on", program.cores);
  reg.value("chip.parallel", "", "how the compiler spread the work (--parallel)", program.parallel);
  reg.value("chip.peak_macs_per_cycle", "count", "MACs per cycle of all cores at full occupancy",
            hw.chip_peak_macs_per_cycle());
  reg.value("chip.load_imbalance", "ratio",
            "max / mean of cores[].busy_cycles over the cores used (1: balanced)",
            mean > 0 ? double(max_busy) / mean : 1.0);
  reg.value("chip.offchip_utilization", "ratio",
            "off-chip bytes moved / (total_cycles x peak off-chip bytes per cycle)",
            total_cycles == 0 || peak_bytes_per_cycle <= 0
                ? 0.0
                : bytes / (double(total_cycles) * peak_bytes_per_cycle));
  reg.value("chip.offchip_contention_cycles", "cycles",
            "cycles with DMA instructions of two or more cores in flight: the cores compete for "
            "the shared off-chip memory",
            covered_twice(dma_windows));
}

std::string multicore_report(const nlohmann::json& s) {
  if (!s.contains("chip") || s["chip"]["cores"].get<int>() < 2) return "";
  const auto& chip = s["chip"];
  std::string out = fmt::format(
      "  cores              {} of {} used: {}\n"
      "  load imbalance     {:.3f} (max / mean core busy cycles); off-chip {:.1f} % of peak, {} "
      "cycles with several cores' DMA in flight\n",
      chip["cores_used"].get<int>(), chip["cores"].get<int>(), chip["parallel"].get<std::string>(),
      chip["load_imbalance"].get<double>(), 100.0 * chip["offchip_utilization"].get<double>(),
      chip["offchip_contention_cycles"].get<uint64_t>());
  if (s.contains("interconnect") && s["interconnect"]["copies"].get<uint64_t>() > 0) {
    const auto& ic = s["interconnect"];
    out += fmt::format(
        "  interconnect       {} B in {} core-to-core copies ({}), links {:.2f} % busy, {} cycles "
        "of copies waiting for a link\n",
        ic["bytes"].get<uint64_t>(), ic["copies"].get<uint64_t>(),
        ic["topology"].get<std::string>(), 100.0 * ic["link_utilization"].get<double>(),
        ic["wait_cycles"].get<uint64_t>());
  }
  for (const auto& c : s["cores"]) {
    out += fmt::format(
        "  core {:<13} busy {} cycles, MXU utilization {:.2f} %, stalls {} cycles, {} B read, "
        "{:.3g} J dynamic\n",
        c["core"].get<int>(), c["busy_cycles"].get<uint64_t>(),
        100.0 * c["mxu_utilization"].get<double>(), c["stall_cycles"].get<uint64_t>(),
        c["dram_read_bytes"].get<uint64_t>(), c["dynamic_energy_j"].get<double>());
  }
  return out;
}

}  // namespace npusim
