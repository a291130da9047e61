#include "models/soc.hpp"

#include <fmt/format.h>

#include <cstring>

#include "support/error.hpp"

namespace npusim {

std::vector<std::unique_ptr<Core>> Soc::make_cores(const HwConfig& hw, const Program& program,
                                                   Scoreboard& scoreboard, const CoreClock& clock,
                                                   OffChipMemoryInterface& memory,
                                                   systolic::Fidelity fidelity,
                                                   bool compute_values) {
  NPUSIM_CHECK(program.cores >= 1 && program.cores <= hw.cores,
               "the program runs on {} cores, the hardware has {}", program.cores, hw.cores);
  for (const auto& instr : program.instructions) {
    NPUSIM_CHECK(instr.core >= 0 && instr.core < program.cores,
                 "instruction {} runs on core {}, the program has {}", instr.id, instr.core,
                 program.cores);
  }
  // Every core of the chip is built, those the program leaves idle too (they are on the die).
  const Core::Streams streams(program);
  std::vector<std::unique_ptr<Core>> cores;
  for (int c = 0; c < hw.cores; ++c) {
    cores.push_back(std::make_unique<Core>(fmt::format("core{}", c).c_str(), c, hw, program,
                                           streams, scoreboard, clock, memory, fidelity,
                                           compute_values));
  }
  return cores;
}

Soc::Soc(sc_core::sc_module_name name, const HwConfig& hw, const Program& program,
         systolic::Fidelity fidelity, bool compute_values)
    : sc_module(name),
      clock(hw.clock_mhz),
      scoreboard("scoreboard", program.instructions.size(), clock),
      memory(make_offchip_memory(hw, program.dram_bytes, clock)),
      cores(make_cores(hw, program, scoreboard, clock, *memory, fidelity, compute_values)),
      buffers(cores[0]->buffers),
      dma_load(*cores[0]->load_queues[0]),
      dma_store(*cores[0]->store_queues[0]) {
  for (auto& core : cores) {
    for (auto& q : core->load_queues) load_queues.push_back(q.get());
    for (auto& q : core->store_queues) store_queues.push_back(q.get());
    for (auto& m : core->matrix_units) matrix_units.push_back(m.get());
    vector_units.push_back(core->vector_unit.get());
  }
  bool host_work = false;
  for (const auto& instr : program.instructions) {
    host_work = host_work || instr.unit == UnitKind::kHost || instr.unit == UnitKind::kHostLink;
  }
  if (host_work) {
    NPUSIM_CHECK(hw.host.has_value(), "the program has host instructions, the hardware no host");
    const Core::Streams streams(program);
    auto unit = [&](const char* unit_name, UnitKind kind, int index) {
      return std::make_unique<HostUnit>(unit_name, program, streams.of(0, kind, index), scoreboard,
                                        clock, *hw.host, hw.clock_mhz, host, memory_contents());
    };
    link_to_host = unit("link_to_host", UnitKind::kHostLink, 0);
    host_cpu = unit("host_cpu", UnitKind::kHost, 0);
    link_to_device = unit("link_to_device", UnitKind::kHostLink, 1);
  }
  if (hw.cores > 1) {
    interconnect = std::make_unique<Interconnect>("interconnect", hw.interconnect, hw.cores, clock,
                                                  compute_values);
    for (auto& core : cores) {  // in core order: the target socket's index is the sending core
      core->link_queue->socket.bind(interconnect->socket);
      interconnect->attach(core->index, &core->buffers);
    }
  }
  // Timing only: no byte moves, so the memory image stays untouched.
  memory->set_moves_bytes(compute_values);
  for (const auto& segment : program.dram_init) {
    if (compute_values) {
      NPUSIM_CHECK(segment.has_contents(),
                   "the program was compiled for timing only: its parameter segment at {:#x} ({} "
                   "bytes) has no contents to compute values with",
                   segment.addr, segment.size());
      std::memcpy(memory_contents().data() + segment.addr, segment.bytes.data(),
                  segment.bytes.size());
    }
  }
}

std::vector<const ExecutionUnit*> Soc::units() const {
  std::vector<const ExecutionUnit*> out;
  for (const auto& core : cores) {
    for (const ExecutionUnit* u : core->units()) out.push_back(u);
  }
  return out;
}

std::vector<const HostUnit*> Soc::host_units() const {
  if (!host_cpu) return {};
  return {link_to_host.get(), host_cpu.get(), link_to_device.get()};
}

std::string Soc::describe_units() const {
  std::string out;
  for (const HostUnit* u : host_units()) {
    out += fmt::format("\n  {}: {}", u->basename(), u->state());
  }
  for (const auto& core : cores) {
    const std::string prefix = core->index == 0 ? "" : fmt::format("core{}.", core->index);
    for (const ExecutionUnit* u : core->units()) {
      out += fmt::format("\n  {}{}: {}", prefix, u->basename(), u->state());
    }
  }
  return out;
}

std::vector<ExecutionUnit*> Soc::mutable_units() {
  std::vector<ExecutionUnit*> out;
  for (auto& core : cores) {
    for (ExecutionUnit* u : core->mutable_units()) out.push_back(u);
  }
  return out;
}

void Soc::register_stats(stats::Registry& reg, const HwConfig& hw, uint64_t end_cycle) {
  for (const auto& core : cores) {
    const std::string prefix =
        core->index == 0 ? std::string("units.") : fmt::format("units.core{}.", core->index);
    for (const ExecutionUnit* u : core->units()) u->register_stats(reg, prefix + u->basename());
  }
  if (interconnect) interconnect->register_stats(reg, end_cycle);
  reg.value("memory.model", "", "off-chip memory model: simple or dram",
            to_string(hw.memory.model));
  if (hw.memory.model == MemoryModel::kDram) {
    reg.value("memory.fidelity", "", "how the dram model simulates: command or bulk",
              to_string(hw.memory.fidelity));
  }
  memory->register_stats(reg, "memory", end_cycle);
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
      case UnitKind::kHost:
        return TrackKind::kHost;
      case UnitKind::kHostLink:
        return TrackKind::kHostLink;
      case UnitKind::kLink:
        return TrackKind::kLink;
    }
    return TrackKind::kVector;
  };
  // One core: every track in the chip's process. Several: core c's tracks in process c + 1, the
  // memory's in process 0 (the chip).
  const bool several = cores.size() > 1;
  for (auto& core : cores) {
    const int process = several ? core->index + 1 : 0;
    const auto name = [&](const char* unit) {
      return several ? fmt::format("core{} {}", core->index, unit) : std::string(unit);
    };
    const auto add_unit = [&](ExecutionUnit& u, UnitKind kind, int index) {
      u.record_to(&timeline, timeline.add_track(name(u.basename()), kind_of(kind), index, process));
    };
    for (size_t i = 0; i < core->load_queues.size(); ++i)
      add_unit(*core->load_queues[i], UnitKind::kDmaLoad, int(i));
    for (size_t i = 0; i < core->store_queues.size(); ++i)
      add_unit(*core->store_queues[i], UnitKind::kDmaStore, int(i));
    for (size_t i = 0; i < core->matrix_units.size(); ++i)
      add_unit(*core->matrix_units[i], UnitKind::kMatrix, int(i));
    add_unit(*core->vector_unit, UnitKind::kVector, 0);
    if (core->link_queue) add_unit(*core->link_queue, UnitKind::kLink, 0);
    if (timeline.filter().detail == timeline::Detail::kBursts) {
      for (auto* queues : {&core->load_queues, &core->store_queues}) {
        for (size_t i = 0; i < queues->size(); ++i) {
          DmaEngine& q = *(*queues)[i];
          q.record_bursts(timeline.add_track(name(q.basename()) + " bursts", TrackKind::kBursts,
                                             int(i), process));
        }
      }
    }
  }
  if (host_cpu) {
    host_cpu->record_to(
        &timeline, timeline.add_track("host_cpu", TrackKind::kHost, 0, timeline::kHostProcess));
    link_to_host->record_to(&timeline, timeline.add_track("link_to_host", TrackKind::kHostLink, 0,
                                                          timeline::kHostProcess));
    link_to_device->record_to(&timeline, timeline.add_track("link_to_device", TrackKind::kHostLink,
                                                            1, timeline::kHostProcess));
  }
  memory->record_to(timeline);
}

void Soc::trace_waveforms(sc_core::sc_trace_file* file) {
  for (auto& core : cores) {
    const std::string prefix = core->index == 0 ? "" : fmt::format("core{}.", core->index);
    for (ExecutionUnit* u : core->mutable_units()) {
      u->trace_waveforms(file, prefix + u->basename());
    }
  }
  memory->trace_waveforms(file);
}

}  // namespace npusim
