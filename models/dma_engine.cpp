#include "models/dma_engine.hpp"

#include <algorithm>
#include <cstring>

#include "support/error.hpp"

namespace npusim {

DmaEngine::DmaEngine(sc_core::sc_module_name name, const Program& program,
                     std::vector<uint32_t> stream, Scoreboard& scoreboard, const CoreClock& clock,
                     OnChipBuffers& buffers)
    : ExecutionUnit(name, program, std::move(stream), scoreboard, clock),
      socket("socket"),
      buffers_(buffers) {}

void DmaEngine::execute(const Instruction& instr) {
  const auto* op = std::get_if<DmaOp>(&instr.op);
  NPUSIM_CHECK(op != nullptr, "{}: instruction {} is not a DMA", name(), instr.id);
  const bool load = instr.unit == UnitKind::kDmaLoad;
  uint8_t* local = buffers_.bytes(op->buffer, op->buffer_addr, op->bytes(), instr.id);
  const uint64_t start = clock_.now();
  uint64_t end = start + 1;
  uint64_t issue_offset = 0;
  NPUSIM_CHECK(!op->transpose || (load && op->count[2] == 1),
               "{}: instruction {}: only 2-D loads can transpose", name(), instr.id);
  uint8_t* const local_base = local;
  tlm::tlm_generic_payload payload;
  for (uint32_t i2 = 0; i2 < op->count[2]; ++i2) {
    for (uint32_t i1 = 0; i1 < op->count[1]; ++i1) {
      payload.set_command(load ? tlm::TLM_READ_COMMAND : tlm::TLM_WRITE_COMMAND);
      payload.set_address(op->dram_addr + i2 * op->dram_stride[1] + i1 * op->dram_stride[0]);
      if (op->transpose) row_.resize(op->count[0]);
      payload.set_data_ptr(op->transpose ? row_.data() : local);
      payload.set_data_length(op->count[0]);
      payload.set_streaming_width(op->count[0]);
      payload.set_byte_enable_ptr(nullptr);
      payload.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
      sc_core::sc_time delay = clock_.cycles(issue_offset);
      socket->b_transport(payload, delay);
      NPUSIM_CHECK(payload.is_response_ok(), "{}: instruction {}: memory error", name(), instr.id);
      end = std::max(end, start + clock_.to_cycles(delay));
      if (op->transpose) {  // row i1 of the box becomes column i1 of the buffer
        const uint32_t eb = static_cast<uint32_t>(op->transpose_element_bytes);
        for (uint32_t j = 0; j < op->count[0] / eb; ++j) {
          std::memcpy(local_base + (uint64_t(j) * op->count[1] + i1) * eb, row_.data() + j * eb, eb);
        }
      }
      local += op->count[0];
      ++issue_offset;
    }
  }
  bytes_moved_ += op->bytes();
  add_busy(instr, end - start);
  wait(clock_.cycles(end - start));
  scoreboard_.complete(instr.id, start, end);
}

}  // namespace npusim
