#include "models/core.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace npusim {

std::vector<uint32_t> Core::stream_of(const Program& program, int core, UnitKind kind, int index) {
  std::vector<uint32_t> ids;
  for (const auto& instr : program.instructions) {
    if (instr.core == core && instr.unit == kind && instr.unit_index == index) {
      ids.push_back(instr.id);
    }
  }
  return ids;
}

Core::Core(sc_core::sc_module_name name, int core_index, const HwConfig& hw, const Program& program,
           Scoreboard& scoreboard, const CoreClock& clock, OffChipMemoryInterface& memory,
           systolic::Fidelity fidelity, bool compute_values)
    : sc_module(name),
      index(core_index),
      buffers(hw),
      shadows(program, core_index, compute_values) {
  // A memory that completes every request at once (the simple one) never fills the window.
  const DmaParams dma{memory.burst_bytes(), hw.memory.max_outstanding_bursts, compute_values,
                      hw.memory.max_outstanding_transfers};
  add_queues(program, UnitKind::kDmaLoad, dma, scoreboard, clock, load_queues);
  add_queues(program, UnitKind::kDmaStore, dma, scoreboard, clock, store_queues);
  // Binding order is the initiator order of the memory's socket (simultaneous requests: lower
  // cores first, then loads before stores, lower queues first, as bound here).
  for (auto& q : load_queues) q->socket.bind(memory.socket);
  for (auto& q : store_queues) q->socket.bind(memory.socket);
  buffers.track_conflicts(&program, &scoreboard, &clock);
  systolic::ArrayParams array;
  array.rows = hw.matrix_unit.rows;
  array.cols = hw.matrix_unit.cols;
  array.dataflow = hw.matrix_unit.dataflow;
  array.weight_double_buffer = hw.matrix_unit.weight_double_buffer;
  array.kind = hw.matrix_unit.kind;
  array.block_m = hw.matrix_unit.block_m;
  array.sparse_n = hw.matrix_unit.sparse_n;
  array.sparse_m = hw.matrix_unit.sparse_m;
  for (int i = 0; i < hw.matrix_unit.count; ++i) {
    matrix_units.push_back(
        std::make_unique<MatrixUnit>(fmt::format("matrix_unit{}", i).c_str(), program,
                                     stream_of(program, index, UnitKind::kMatrix, i), scoreboard,
                                     clock, buffers, array, fidelity, compute_values));
  }
  vector_unit = std::make_unique<VectorUnit>(
      "vector_unit", program, stream_of(program, index, UnitKind::kVector, 0), scoreboard, clock,
      buffers, hw.vector_unit, compute_values);
  vector_unit->capture_into(&shadows);
  if (hw.cores > 1) {
    link_queue = std::make_unique<LinkQueue>(
        "link", program, stream_of(program, index, UnitKind::kLink, 0), scoreboard, clock, buffers);
  }
  for (ExecutionUnit* u : mutable_units()) u->set_buffer_ports(buffer_ports(hw, program.dtype));
}

void Core::add_queues(const Program& program, UnitKind kind, DmaParams params,
                      Scoreboard& scoreboard, const CoreClock& clock,
                      std::vector<std::unique_ptr<DmaEngine>>& queues) {
  int count = 1;
  for (const auto& instr : program.instructions) {
    if (instr.core == index && instr.unit == kind) count = std::max(count, instr.unit_index + 1);
  }
  for (int i = 0; i < count; ++i) {
    const std::string name =
        i == 0 ? std::string(to_string(kind)) : fmt::format("{}{}", to_string(kind), i);
    queues.push_back(std::make_unique<DmaEngine>(name.c_str(), program,
                                                 stream_of(program, index, kind, i), scoreboard,
                                                 clock, buffers, params));
  }
}

std::vector<const ExecutionUnit*> Core::units() const {
  std::vector<const ExecutionUnit*> out;
  for (const auto& q : load_queues) out.push_back(q.get());
  for (const auto& q : store_queues) out.push_back(q.get());
  for (const auto& m : matrix_units) out.push_back(m.get());
  out.push_back(vector_unit.get());
  if (link_queue) out.push_back(link_queue.get());
  return out;
}

std::vector<ExecutionUnit*> Core::mutable_units() {
  std::vector<ExecutionUnit*> out;
  for (auto& q : load_queues) out.push_back(q.get());
  for (auto& q : store_queues) out.push_back(q.get());
  for (auto& m : matrix_units) out.push_back(m.get());
  out.push_back(vector_unit.get());
  if (link_queue) out.push_back(link_queue.get());
  return out;
}

}  // namespace npusim
