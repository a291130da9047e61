#include "models/soc.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "support/error.hpp"

namespace npusim {

std::vector<uint32_t> Soc::stream_of(const Program& program, UnitKind kind, int index) {
  std::vector<uint32_t> ids;
  for (const auto& instr : program.instructions) {
    if (instr.unit == kind && instr.unit_index == index) ids.push_back(instr.id);
  }
  return ids;
}

DmaParams Soc::dma_params(const HwConfig& hw, bool values) const {
  // A memory that completes every request at once (the simple one) never fills the window.
  return DmaParams{memory->burst_bytes(), hw.memory.max_outstanding_bursts, values};
}

Soc::Soc(sc_core::sc_module_name name, const HwConfig& hw, const Program& program,
         systolic::Fidelity fidelity, bool compute_values)
    : sc_module(name),
      clock(hw.clock_mhz),
      buffers(hw),
      scoreboard("scoreboard", program.instructions.size(), clock),
      memory(make_offchip_memory(hw, program.dram_bytes, clock)),
      dma_load(to_string(UnitKind::kDmaLoad), program, stream_of(program, UnitKind::kDmaLoad, 0),
               scoreboard, clock, buffers, dma_params(hw, compute_values)),
      dma_store(to_string(UnitKind::kDmaStore), program, stream_of(program, UnitKind::kDmaStore, 0),
                scoreboard, clock, buffers, dma_params(hw, compute_values)),
      vector_unit("vector_unit", program, stream_of(program, UnitKind::kVector, 0), scoreboard,
                  clock, buffers, hw.vector_unit, compute_values),
      shadows(program) {
  vector_unit.capture_into(&shadows);
  add_queues(dma_params(hw, compute_values), program, UnitKind::kDmaLoad, dma_load, load_queues);
  add_queues(dma_params(hw, compute_values), program, UnitKind::kDmaStore, dma_store, store_queues);
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
  // Timing only: no byte moves, so the memory image stays untouched.
  memory->set_moves_bytes(compute_values);
  for (const auto& segment : program.dram_init) {
    if (compute_values) {
      std::memcpy(memory_contents().data() + segment.addr, segment.bytes.data(),
                  segment.bytes.size());
    }
  }
}

void Soc::add_queues(const DmaParams& params, const Program& program, UnitKind kind,
                     DmaEngine& first, std::vector<DmaEngine*>& queues) {
  int count = 1;
  for (const auto& instr : program.instructions) {
    if (instr.unit == kind) count = std::max(count, instr.unit_index + 1);
  }
  queues.push_back(&first);
  for (int i = 1; i < count; ++i) {
    extra_queues_.push_back(std::make_unique<DmaEngine>(
        fmt::format("{}{}", to_string(kind), i).c_str(), program, stream_of(program, kind, i),
        scoreboard, clock, buffers, params));
    queues.push_back(extra_queues_.back().get());
  }
  // Binding order is the initiator order of the memory's socket (simultaneous requests: loads
  // before stores, lower queues first, as bound here).
  for (DmaEngine* q : queues) q->socket.bind(memory->socket);
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
  reg.value("memory.model", "", "off-chip memory model: simple or dram",
            to_string(hw.memory.model));
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
  memory->record_to(timeline);
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
  memory->trace_waveforms(file);
}

}  // namespace npusim
