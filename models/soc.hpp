// The accelerator: DMA load and store queues and the matrix units and vector unit, all sharing
// the on-chip buffers; the DMA queues reach off-chip memory through TLM-2.0 sockets. Built from a
// hardware description and loaded with a Program; sc_start runs it to completion.
#pragma once

#include <memory>
#include <vector>

#include <systemc>

#include "arch/hw_config.hpp"
#include "arch/program.hpp"
#include "models/dma_engine.hpp"
#include "models/matrix_unit.hpp"
#include "models/offchip_memory.hpp"
#include "models/onchip_buffers.hpp"
#include "models/scoreboard.hpp"
#include "models/vector_unit.hpp"

namespace npusim {

class Soc : public sc_core::sc_module {
 public:
  Soc(sc_core::sc_module_name name, const HwConfig& hw, const Program& program,
      systolic::Fidelity fidelity);

  CoreClock clock;
  OnChipBuffers buffers;
  Scoreboard scoreboard;
  OffChipMemory memory;
  DmaEngine dma_load;
  DmaEngine dma_store;
  std::vector<std::unique_ptr<MatrixUnit>> matrix_units;
  VectorUnit vector_unit;

 private:
  static std::vector<uint32_t> stream_of(const Program& program, UnitKind kind, int index);
};

}  // namespace npusim
