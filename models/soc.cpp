#include "models/soc.hpp"

#include <cstring>

#include <fmt/format.h>

namespace npusim {

std::vector<uint32_t> Soc::stream_of(const Program& program, UnitKind kind, int index) {
  std::vector<uint32_t> ids;
  for (const auto& instr : program.instructions) {
    if (instr.unit == kind && instr.unit_index == index) ids.push_back(instr.id);
  }
  return ids;
}

Soc::Soc(sc_core::sc_module_name name, const HwConfig& hw, const Program& program,
         systolic::Fidelity fidelity)
    : sc_module(name),
      clock(hw.clock_mhz),
      buffers(hw),
      scoreboard("scoreboard", program.instructions.size(), clock),
      memory("memory", program.dram_bytes, hw.memory_bytes_per_cycle(),
             hw.memory_latency_cycles(), clock),
      dma_load("dma_load", program, stream_of(program, UnitKind::kDmaLoad, 0), scoreboard, clock,
               buffers),
      dma_store("dma_store", program, stream_of(program, UnitKind::kDmaStore, 0), scoreboard,
                clock, buffers),
      vector_unit("vector_unit", program, stream_of(program, UnitKind::kVector, 0), scoreboard,
                  clock, buffers, hw.vector_unit) {
  dma_load.socket.bind(memory.socket);
  dma_store.socket.bind(memory.socket);
  systolic::ArrayParams array;
  array.rows = hw.matrix_unit.rows;
  array.cols = hw.matrix_unit.cols;
  array.dataflow = hw.matrix_unit.dataflow;
  array.weight_double_buffer = hw.matrix_unit.weight_double_buffer;
  for (int i = 0; i < hw.matrix_unit.count; ++i) {
    matrix_units.push_back(std::make_unique<MatrixUnit>(
        fmt::format("matrix_unit{}", i).c_str(), program,
        stream_of(program, UnitKind::kMatrix, i), scoreboard, clock, buffers, array, fidelity));
  }
  for (const auto& segment : program.dram_init) {
    std::memcpy(memory.contents().data() + segment.addr, segment.bytes.data(),
                segment.bytes.size());
  }
}

}  // namespace npusim
