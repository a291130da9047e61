#include "models/core.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace npusim {

Core::Streams::Streams(const Program& program) {
  for (const auto& instr : program.instructions) {
    ids_[{instr.core, instr.unit, instr.unit_index}].push_back(instr.id);
  }
}

std::vector<uint32_t> Core::Streams::of(int core, UnitKind kind, int index) const {
  const auto it = ids_.find({core, kind, index});
  return it == ids_.end() ? std::vector<uint32_t>{} : it->second;
}

int Core::Streams::units(int core, UnitKind kind) const {
  int count = 1;
  // The keys of (core, kind) are contiguous and ordered by index: the last one is the highest.
  auto it = ids_.lower_bound({core, kind, std::numeric_limits<int>::max()});
  if (it != ids_.begin()) {
    --it;
    const auto& [c, k, i] = it->first;
    if (c == core && k == kind) count = std::max(count, i + 1);
  }
  return count;
}

Core::Core(sc_core::sc_module_name name, int core_index, const HwConfig& hw, const Program& program,
           const Streams& streams, Scoreboard& scoreboard, const CoreClock& clock,
           OffChipMemoryInterface& memory, systolic::Fidelity fidelity, bool compute_values)
    : sc_module(name),
      index(core_index),
      buffers(hw),
      shadows(program, core_index, compute_values) {
  // A memory that completes every request at once (the simple one) never fills the window.
  const DmaParams dma{memory.burst_bytes(), hw.memory.max_outstanding_bursts, compute_values,
                      hw.memory.max_outstanding_transfers};
  add_queues(program, streams, UnitKind::kDmaLoad, dma, scoreboard, clock, load_queues);
  add_queues(program, streams, UnitKind::kDmaStore, dma, scoreboard, clock, store_queues);
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
  array.weight_load_wavefront = hw.matrix_unit.weight_load_wavefront;
  array.kind = hw.matrix_unit.kind;
  array.block_m = hw.matrix_unit.block_m;
  array.sparse_n = hw.matrix_unit.sparse_n;
  array.sparse_m = hw.matrix_unit.sparse_m;
  for (int i = 0; i < hw.matrix_unit.count; ++i) {
    matrix_units.push_back(std::make_unique<MatrixUnit>(
        fmt::format("matrix_unit{}", i).c_str(), program, streams.of(index, UnitKind::kMatrix, i),
        scoreboard, clock, buffers, array, fidelity, compute_values));
  }
  vector_unit =
      std::make_unique<VectorUnit>("vector_unit", program, streams.of(index, UnitKind::kVector, 0),
                                   scoreboard, clock, buffers, hw.vector_unit, compute_values);
  vector_unit->capture_into(&shadows);
  if (hw.cores > 1) {
    link_queue = std::make_unique<LinkQueue>("link", program, streams.of(index, UnitKind::kLink, 0),
                                             scoreboard, clock, buffers);
  }
  for (ExecutionUnit* u : mutable_units()) u->set_buffer_ports(buffer_ports(hw, program.dtype));
}

void Core::add_queues(const Program& program, const Streams& streams, UnitKind kind,
                      DmaParams params, Scoreboard& scoreboard, const CoreClock& clock,
                      std::vector<std::unique_ptr<DmaEngine>>& queues) {
  const int count = streams.units(index, kind);
  for (int i = 0; i < count; ++i) {
    const std::string name =
        i == 0 ? std::string(to_string(kind)) : fmt::format("{}{}", to_string(kind), i);
    queues.push_back(std::make_unique<DmaEngine>(name.c_str(), program, streams.of(index, kind, i),
                                                 scoreboard, clock, buffers, params));
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
