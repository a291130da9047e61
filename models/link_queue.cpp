#include "models/link_queue.hpp"

#include "support/error.hpp"

namespace npusim {

LinkQueue::LinkQueue(sc_core::sc_module_name name, const Program& program,
                     std::vector<uint32_t> stream, Scoreboard& scoreboard, const CoreClock& clock,
                     OnChipBuffers& buffers)
    : ExecutionUnit(name, program, std::move(stream), scoreboard, clock),
      socket("socket"),
      buffers_(buffers) {}

void LinkQueue::execute(const Instruction& instr) {
  const auto* op = std::get_if<CopyOp>(&instr.op);
  NPUSIM_CHECK(op != nullptr, "{}: instruction {} is not a COPY", name(), instr.id);
  const uint64_t start = clock_.now();
  uint8_t* src = buffers_.bytes(BufferId::kUnified, op->src_addr, op->bytes, instr.id);
  payload_.set_command(tlm::TLM_WRITE_COMMAND);
  payload_.set_address((uint64_t(op->dst_core) << Interconnect::kCoreAddressShift) | op->dst_addr);
  payload_.set_data_ptr(src);
  payload_.set_data_length(static_cast<unsigned>(op->bytes));
  payload_.set_streaming_width(static_cast<unsigned>(op->bytes));
  payload_.set_byte_enable_ptr(nullptr);
  payload_.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  socket->b_transport(payload_, delay);
  NPUSIM_CHECK(payload_.is_response_ok(), "{}: instruction {}: interconnect error", name(),
               instr.id);
  const uint64_t end = start + clock_.to_cycles(delay);
  bytes_ += op->bytes;
  add_busy(instr, end - start);
  wait(delay);
  complete(instr, start, end);
}

void LinkQueue::register_stats(stats::Registry& reg, const std::string& prefix) const {
  ExecutionUnit::register_stats(reg, prefix);
  reg.counter(prefix + ".bytes", "bytes", "bytes the core's copies sent over the interconnect",
              bytes_);
}

}  // namespace npusim
