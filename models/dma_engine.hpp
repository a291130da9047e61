// DMA queue: copies strided boxes between off-chip memory and an on-chip buffer over a TLM-2.0
// initiator socket. Timing rule: the engine issues one row (count[0] contiguous bytes) per cycle
// as a TLM request; the memory serialises them on its bandwidth; the instruction completes when the
// last row has completed, and the queue starts its next instruction then. A transposing load
// writes each row as a column of the buffer (a 2-D transpose on the fly, same timing).
#pragma once

#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include "models/execution_unit.hpp"
#include "models/onchip_buffers.hpp"

namespace npusim {

class DmaEngine : public ExecutionUnit {
 public:
  tlm_utils::simple_initiator_socket<DmaEngine> socket;

  DmaEngine(sc_core::sc_module_name name, const Program& program, std::vector<uint32_t> stream,
            Scoreboard& scoreboard, const CoreClock& clock, OnChipBuffers& buffers);

  uint64_t bytes_moved() const { return bytes_moved_; }

 protected:
  void execute(const Instruction& instr) override;

 private:
  OnChipBuffers& buffers_;
  std::vector<uint8_t> row_;  // one row of a transposing load
  uint64_t bytes_moved_ = 0;
};

}  // namespace npusim
