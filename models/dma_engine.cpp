#include "models/dma_engine.hpp"

#include <algorithm>
#include <cstring>

#include "support/error.hpp"

namespace npusim {

DmaEngine::DmaEngine(sc_core::sc_module_name name, const Program& program,
                     std::vector<uint32_t> stream, Scoreboard& scoreboard, const CoreClock& clock,
                     OnChipBuffers& buffers, DmaParams params)
    : ExecutionUnit(name, program, std::move(stream), scoreboard, clock),
      socket("socket"),
      buffers_(buffers),
      params_(params),
      layer_conflicts_(program.layers.size(), 0) {
  socket.register_nb_transport_bw(this, &DmaEngine::nb_transport_bw);
}

tlm::tlm_generic_payload* DmaEngine::take_payload() {
  if (free_.empty()) {
    pool_.push_back(std::make_unique<tlm::tlm_generic_payload>());
    return pool_.back().get();
  }
  tlm::tlm_generic_payload* p = free_.back();
  free_.pop_back();
  return p;
}

void DmaEngine::burst_done(const tlm::tlm_generic_payload& p, uint64_t cycle) {
  NPUSIM_CHECK(p.is_response_ok(), "{}: instruction {}: memory error at {:#x}", name(), instr_->id,
               p.get_address());
  end_ = std::max(end_, cycle);
  if (load_ && !op_->transpose) {
    const uint64_t local = op_->buffer_addr + uint64_t(p.get_data_ptr() - local_);
    conflicts_ += buffers_.dma_write_conflicts(op_->buffer, local, p.get_data_length(), cycle);
  }
}

void DmaEngine::send(uint64_t dram_addr, uint8_t* local, uint64_t len, uint64_t issue_cycle) {
  tlm::tlm_generic_payload* p = take_payload();
  p->set_command(load_ ? tlm::TLM_READ_COMMAND : tlm::TLM_WRITE_COMMAND);
  p->set_address(dram_addr);
  p->set_data_ptr(local);
  p->set_data_length(static_cast<unsigned>(len));
  p->set_streaming_width(static_cast<unsigned>(len));
  p->set_byte_enable_ptr(nullptr);
  p->set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  const uint64_t now = clock_.now();
  tlm::tlm_phase phase = tlm::BEGIN_REQ;
  sc_core::sc_time delay = clock_.cycles(issue_cycle - now);
  ++bursts_;
  const tlm::tlm_sync_enum r = socket->nb_transport_fw(*p, phase, delay);
  if (r == tlm::TLM_COMPLETED) {  // early completion: the simple memory
    burst_done(*p, now + clock_.to_cycles(delay));
    free_.push_back(p);
  } else {
    NPUSIM_CHECK(r == tlm::TLM_ACCEPTED, "{}: instruction {}: unexpected transport status {}",
                 name(), instr_->id, int(r));
    ++outstanding_;
  }
}

void DmaEngine::pump() {
  const uint64_t now = clock_.now();
  const uint64_t len = op_->count[0];
  while (next_row_ < rows_) {
    const uint64_t i1 = next_row_ % op_->count[1], i2 = next_row_ / op_->count[1];
    const uint64_t addr = op_->dram_addr + i2 * op_->dram_stride[1] + i1 * op_->dram_stride[0];
    uint8_t* local = local_ + next_row_ * len;
    if (row_offset_ == 0) row_cycle_ = std::max(next_row_cycle_, now);
    const uint64_t issue = std::max(row_cycle_, now);
    while (row_offset_ < len) {
      if (params_.max_outstanding > 0 && outstanding_ >= uint64_t(params_.max_outstanding)) {
        if (window_since_ == UINT64_MAX) window_since_ = now;
        return;  // resumed by the next completion
      }
      const uint64_t piece =
          burst_piece(addr + row_offset_, len - row_offset_, params_.burst_bytes);
      send(addr + row_offset_, local + row_offset_, piece, issue);
      row_offset_ += piece;
    }
    row_offset_ = 0;
    next_row_cycle_ = issue + 1;
    ++next_row_;
  }
}

tlm::tlm_sync_enum DmaEngine::nb_transport_bw(tlm::tlm_generic_payload& payload,
                                              tlm::tlm_phase& phase, sc_core::sc_time& delay) {
  NPUSIM_CHECK(phase == tlm::BEGIN_RESP && delay == sc_core::SC_ZERO_TIME && outstanding_ > 0,
               "{}: unexpected response (phase {}, {} outstanding)", name(), int(phase),
               outstanding_);
  const uint64_t now = clock_.now();
  --outstanding_;
  burst_done(payload, now);
  free_.push_back(&payload);
  if (window_since_ != UINT64_MAX) {
    window_full_cycles_ += now - window_since_;
    window_since_ = UINT64_MAX;
  }
  pump();
  if (next_row_ == rows_ && outstanding_ == 0) done_event_.notify(sc_core::SC_ZERO_TIME);
  phase = tlm::END_RESP;
  return tlm::TLM_COMPLETED;
}

void DmaEngine::execute(const Instruction& instr) {
  const auto* op = std::get_if<DmaOp>(&instr.op);
  NPUSIM_CHECK(op != nullptr, "{}: instruction {} is not a DMA", name(), instr.id);
  const bool load = instr.unit == UnitKind::kDmaLoad;
  NPUSIM_CHECK(!op->transpose || (load && op->count[2] == 1),
               "{}: instruction {}: only 2-D loads can transpose", name(), instr.id);
  uint8_t* local = buffers_.bytes(op->buffer, op->buffer_addr, op->bytes(), instr.id);
  const uint64_t start = clock_.now();
  op_ = op;
  instr_ = &instr;
  load_ = load;
  if (op->transpose) staging_.resize(op->bytes());
  local_ = op->transpose ? staging_.data() : local;
  rows_ = op->count[0] == 0 ? 0 : uint64_t{op->count[1]} * op->count[2];
  next_row_ = row_offset_ = 0;
  next_row_cycle_ = start;
  end_ = start + 1;
  conflicts_ = 0;
  pump();
  if (next_row_ < rows_ || outstanding_ > 0) wait(done_event_);
  NPUSIM_CHECK(next_row_ == rows_ && outstanding_ == 0, "{}: instruction {} woke unfinished",
               name(), instr.id);
  if (op->transpose) {  // row i1 of the box becomes column i1 of the buffer, element by element
    const uint32_t eb = static_cast<uint32_t>(op->transpose_element_bytes);
    for (uint32_t i1 = 0; i1 < op->count[1]; ++i1) {
      for (uint32_t j = 0; j < op->count[0] / eb; ++j) {
        std::memcpy(local + (uint64_t(j) * op->count[1] + i1) * eb,
                    staging_.data() + uint64_t(i1) * op->count[0] + uint64_t(j) * eb, eb);
      }
    }
  }
  const uint64_t end = end_ + conflicts_;
  bank_conflict_cycles_ += conflicts_;
  layer_conflicts_[instr.layer] += conflicts_;
  bytes_moved_ += op->bytes();
  add_busy(instr, end - start);
  const uint64_t now = clock_.now();
  if (end > now) wait(clock_.cycles(end - now));
  scoreboard_.complete(instr.id, start, end);
}

void DmaEngine::register_stats(stats::Registry& reg, const std::string& prefix) const {
  ExecutionUnit::register_stats(reg, prefix);
  reg.counter(prefix + ".bytes", "bytes", "bytes the queue moved", bytes_moved_);
  reg.counter(prefix + ".bursts", "count", "transactions the queue issued", bursts_);
  reg.counter(prefix + ".bank_conflict_cycles", "cycles",
              "cycles the queue's loads lost to compute holding a buffer bank",
              bank_conflict_cycles_);
  reg.counter(prefix + ".window_full_cycles", "cycles",
              "cycles a burst waited for a free slot of the outstanding window",
              window_full_cycles_);
}

}  // namespace npusim
