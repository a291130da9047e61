#include "models/soc.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "models/dram/memory_stats.hpp"
#include "support/error.hpp"

namespace npusim {

dram::MemoryConfig resolve_dram_config(const HwConfig& hw) {
  const auto& m = hw.memory;
  const std::string& where = hw.origin.empty() ? hw.name : hw.origin;
  dram::MemoryConfig cfg;
  try {
    cfg = dram::resolve_memory_config(m.preset);
  } catch (const UserError& e) {
    // The loader speaks to membench's --memory option; here the value came from /memory/preset.
    std::string what = e.what();
    const std::string option = "--memory " + m.preset + ": ";
    if (what.rfind(option, 0) == 0) what = what.substr(option.size());
    throw UserError(fmt::format("{}: /memory/preset: {}", where, what));
  }
  if (m.channels != 0 && m.channels != cfg.org.channels) {
    cfg.org.channels = m.channels;
    cfg.name += fmt::format(" x{}", m.channels);
    // The preset file format round trip re-validates the organization with the address mapping.
    cfg =
        dram::parse_memory_config(dram::memory_config_to_json_text(cfg),
                                  fmt::format("{} with /memory/channels {}", m.preset, m.channels));
  }
  const double peak = cfg.peak_bandwidth_gbps();
  if (m.bandwidth_gbps > 0 && std::abs(m.bandwidth_gbps - peak) > 0.01 * peak) {
    throw UserError(fmt::format(
        "{}: /memory/bandwidth_gbps: expected the peak of {} ({:.2f} GB/s) or 0, got {}", where,
        cfg.name, peak, m.bandwidth_gbps));
  }
  if (m.capacity_bytes > cfg.org.capacity_bytes()) {
    throw UserError(
        fmt::format("{}: /memory/capacity_bytes: expected at most the {} bytes of {}, got {}",
                    where, cfg.org.capacity_bytes(), cfg.name, m.capacity_bytes));
  }
  return cfg;
}

std::vector<uint32_t> Soc::stream_of(const Program& program, UnitKind kind, int index) {
  std::vector<uint32_t> ids;
  for (const auto& instr : program.instructions) {
    if (instr.unit == kind && instr.unit_index == index) ids.push_back(instr.id);
  }
  return ids;
}

std::unique_ptr<DramMemory> Soc::make_dram_memory(const Program& program) {
  if (!dram_config) return nullptr;
  return std::make_unique<DramMemory>("memory", program.dram_bytes, *dram_config, clock);
}

DmaParams Soc::dma_params(const HwConfig& hw) const {
  DmaParams p;
  if (dram_config) {
    p.burst_bytes = uint64_t(dram_config->org.access_bytes());
    p.max_outstanding = hw.memory.max_outstanding_bursts;
  }
  return p;
}

Soc::Soc(sc_core::sc_module_name name, const HwConfig& hw, const Program& program,
         systolic::Fidelity fidelity, bool compute_values)
    : sc_module(name),
      clock(hw.clock_mhz),
      buffers(hw),
      scoreboard("scoreboard", program.instructions.size(), clock),
      dram_config(hw.memory.model == "dram" ? std::optional(resolve_dram_config(hw))
                                            : std::nullopt),
      simple_memory(dram_config ? nullptr
                                : std::make_unique<OffChipMemory>(
                                      "memory", program.dram_bytes, hw.memory_bytes_per_cycle(),
                                      hw.memory_latency_cycles(), clock)),
      dram_memory(make_dram_memory(program)),
      dma_load("dma_load", program, stream_of(program, UnitKind::kDmaLoad, 0), scoreboard, clock,
               buffers, dma_params(hw)),
      dma_store("dma_store", program, stream_of(program, UnitKind::kDmaStore, 0), scoreboard, clock,
                buffers, dma_params(hw)),
      vector_unit("vector_unit", program, stream_of(program, UnitKind::kVector, 0), scoreboard,
                  clock, buffers, hw.vector_unit, compute_values) {
  add_queues(hw, program, UnitKind::kDmaLoad, dma_load, load_queues);
  add_queues(hw, program, UnitKind::kDmaStore, dma_store, store_queues);
  buffers.track_conflicts(&program, &scoreboard, &clock);
  systolic::ArrayParams array;
  array.rows = hw.matrix_unit.rows;
  array.cols = hw.matrix_unit.cols;
  array.dataflow = hw.matrix_unit.dataflow;
  array.weight_double_buffer = hw.matrix_unit.weight_double_buffer;
  array.kind = hw.matrix_unit.kind;
  array.block_m = hw.matrix_unit.block_m;
  for (int i = 0; i < hw.matrix_unit.count; ++i) {
    matrix_units.push_back(std::make_unique<MatrixUnit>(
        fmt::format("matrix_unit{}", i).c_str(), program, stream_of(program, UnitKind::kMatrix, i),
        scoreboard, clock, buffers, array, fidelity, compute_values));
  }
  for (ExecutionUnit* u : mutable_units()) u->set_buffer_ports(buffer_ports(hw, program.dtype));
  for (const auto& segment : program.dram_init) {
    std::memcpy(memory_contents().data() + segment.addr, segment.bytes.data(),
                segment.bytes.size());
  }
}

void Soc::add_queues(const HwConfig& hw, const Program& program, UnitKind kind, DmaEngine& first,
                     std::vector<DmaEngine*>& queues) {
  int count = 1;
  for (const auto& instr : program.instructions) {
    if (instr.unit == kind) count = std::max(count, instr.unit_index + 1);
  }
  queues.push_back(&first);
  for (int i = 1; i < count; ++i) {
    extra_queues_.push_back(std::make_unique<DmaEngine>(
        fmt::format("{}{}", kind == UnitKind::kDmaLoad ? "dma_load" : "dma_store", i).c_str(),
        program, stream_of(program, kind, i), scoreboard, clock, buffers, dma_params(hw)));
    queues.push_back(extra_queues_.back().get());
  }
  // Binding order is the initiator order of the memory's socket (simultaneous requests: loads
  // before stores, lower queues first, as bound here).
  for (DmaEngine* q : queues) {
    if (dram_memory) {
      q->socket.bind(dram_memory->socket);
    } else {
      q->socket.bind(simple_memory->socket);
    }
  }
}

std::vector<uint8_t>& Soc::memory_contents() {
  return dram_memory ? dram_memory->contents() : simple_memory->contents();
}
uint64_t Soc::memory_bytes_read() const {
  return dram_memory ? dram_memory->bytes_read() : simple_memory->bytes_read();
}
uint64_t Soc::memory_bytes_written() const {
  return dram_memory ? dram_memory->bytes_written() : simple_memory->bytes_written();
}

std::vector<const ExecutionUnit*> Soc::units() const {
  std::vector<const ExecutionUnit*> out(load_queues.begin(), load_queues.end());
  out.insert(out.end(), store_queues.begin(), store_queues.end());
  for (const auto& m : matrix_units) out.push_back(m.get());
  out.push_back(&vector_unit);
  return out;
}

void Soc::register_stats(stats::Registry& reg, const HwConfig& hw, uint64_t end_cycle) {
  for (const ExecutionUnit* u : units())
    u->register_stats(reg, std::string("units.") + u->basename());
  reg.value("memory.model", "", "off-chip memory model: simple or dram", hw.memory.model);
  if (!dram_memory) {
    reg.value("memory.bandwidth_gbps", "GB/s", "simple memory: bandwidth shared by the DMA queues",
              hw.memory.bandwidth_gbps);
    reg.value("memory.latency_ns", "ns", "simple memory: latency of every request",
              hw.memory.latency_ns);
    reg.value("memory.busy_cycles", "cycles", "simple memory: cycles its data bus was busy",
              simple_memory->busy_cycles());
    return;
  }
  const dram::MemoryStats s = dram_memory->finish(end_cycle);
  stats::Registry figures;
  dram::register_memory_stats(figures, hw.memory.preset, *dram_config, s,
                              dram::channel_bursts(dram_memory->memory()));
  reg.include("memory", figures);
}

void Soc::record_to(timeline::Timeline& timeline) {
  using timeline::TrackKind;
  const auto kind_of = [](UnitKind k) {
    switch (k) {
      case UnitKind::kDmaLoad:
        return TrackKind::kDmaLoad;
      case UnitKind::kDmaStore:
        return TrackKind::kDmaStore;
      case UnitKind::kMatrix:
        return TrackKind::kMatrix;
      case UnitKind::kVector:
        return TrackKind::kVector;
    }
    return TrackKind::kVector;
  };
  const auto add_unit = [&](ExecutionUnit& u, UnitKind kind, int index) {
    u.record_to(&timeline, timeline.add_track(u.basename(), kind_of(kind), index));
  };
  for (size_t i = 0; i < load_queues.size(); ++i)
    add_unit(*load_queues[i], UnitKind::kDmaLoad, int(i));
  for (size_t i = 0; i < store_queues.size(); ++i) {
    add_unit(*store_queues[i], UnitKind::kDmaStore, int(i));
  }
  for (size_t i = 0; i < matrix_units.size(); ++i)
    add_unit(*matrix_units[i], UnitKind::kMatrix, int(i));
  add_unit(vector_unit, UnitKind::kVector, 0);
  if (timeline.filter().detail == timeline::Detail::kBursts) {
    for (auto* queues : {&load_queues, &store_queues}) {
      for (size_t i = 0; i < queues->size(); ++i) {
        DmaEngine& q = *(*queues)[i];
        q.record_bursts(
            timeline.add_track(std::string(q.basename()) + " bursts", TrackKind::kBursts, int(i)));
      }
    }
  }
  if (dram_memory) {
    std::vector<uint32_t> tracks;
    for (int c = 0; c < dram_memory->memory().channels(); ++c) {
      tracks.push_back(
          timeline.add_track(fmt::format("dram ch{}", c), TrackKind::kMemoryChannel, c));
    }
    std::vector<std::string> names;
    for (int k = 0; k < dram::kCommandKinds; ++k)
      names.push_back(dram::command_name(dram::Command(k)));
    timeline.set_command_names(std::move(names));
    dram_memory->record_to(&timeline, std::move(tracks));
  } else {
    simple_memory->record_to(&timeline, timeline.add_track("memory", TrackKind::kMemoryChannel, 0));
  }
}

std::vector<ExecutionUnit*> Soc::mutable_units() {
  std::vector<ExecutionUnit*> all(load_queues.begin(), load_queues.end());
  all.insert(all.end(), store_queues.begin(), store_queues.end());
  for (auto& m : matrix_units) all.push_back(m.get());
  all.push_back(&vector_unit);
  return all;
}

void Soc::trace_waveforms(sc_core::sc_trace_file* file) {
  for (ExecutionUnit* u : mutable_units()) u->trace_waveforms(file, u->basename());
  if (dram_memory) dram_memory->trace_waveforms(file, "dram");
}

}  // namespace npusim
