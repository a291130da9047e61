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
  if (burst_track_ != timeline::InstructionRecord::kNone) {
    const uint64_t issue = burst_issue_.at(&p);
    if (timeline_->bursts_wanted(instr_->layer, issue, cycle)) {
      timeline_->burst({burst_track_, instr_->id, issue, cycle, p.get_address(),
                        p.get_data_length(), p.is_write()});
    }
  }
  if (load_ && !op_->transpose && !reading_ids_) {
    const uint64_t local = op_->buffer_addr + uint64_t(p.get_data_ptr() - local_);
    conflicts_ += buffers_.dma_write_conflicts(op_->buffer, local, p.get_data_length(), cycle);
  }
}

std::optional<uint64_t> DmaEngine::send(const DmaBurst& burst) {
  tlm::tlm_generic_payload* p = take_payload();
  p->set_command(load_ ? tlm::TLM_READ_COMMAND : tlm::TLM_WRITE_COMMAND);
  p->set_address(burst.dram_addr);
  p->set_data_ptr(local_ + burst.box_offset);
  p->set_data_length(static_cast<unsigned>(burst.bytes));
  p->set_streaming_width(static_cast<unsigned>(burst.bytes));
  p->set_byte_enable_ptr(nullptr);
  p->set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  const uint64_t now = clock_.now();
  tlm::tlm_phase phase = tlm::BEGIN_REQ;
  sc_core::sc_time delay = clock_.cycles(burst.issue_cycle - now);
  ++bursts_;
  if (burst_track_ != timeline::InstructionRecord::kNone) burst_issue_[p] = burst.issue_cycle;
  const tlm::tlm_sync_enum r = socket->nb_transport_fw(*p, phase, delay);
  if (r == tlm::TLM_COMPLETED) {  // early completion: the simple memory
    const uint64_t done = now + clock_.to_cycles(delay);
    burst_done(*p, done);
    free_.push_back(p);
    return done;
  }
  NPUSIM_CHECK(r == tlm::TLM_ACCEPTED, "{}: instruction {}: unexpected transport status {}", name(),
               instr_->id, int(r));
  return std::nullopt;
}

void DmaEngine::pump() {
  transfer_->pump(clock_.now(), [this](const DmaBurst& burst) { return send(burst); });
}

tlm::tlm_sync_enum DmaEngine::nb_transport_bw(tlm::tlm_generic_payload& payload,
                                              tlm::tlm_phase& phase, sc_core::sc_time& delay) {
  NPUSIM_CHECK(phase == tlm::BEGIN_RESP && delay == sc_core::SC_ZERO_TIME && transfer_ &&
                   transfer_->outstanding() > 0,
               "{}: unexpected response (phase {})", name(), int(phase));
  const uint64_t now = clock_.now();
  transfer_->completed(now);
  burst_done(payload, now);
  free_.push_back(&payload);
  pump();
  if (transfer_->finished()) done_event_.notify(sc_core::SC_ZERO_TIME);
  phase = tlm::END_RESP;
  return tlm::TLM_COMPLETED;
}

void DmaEngine::run_transfer() {
  pump();
  if (!transfer_->finished()) wait(done_event_);
  NPUSIM_CHECK(transfer_->finished(), "{}: instruction {} woke unfinished", name(), instr_->id);
  window_full_cycles_ += transfer_->window_full_cycles();
}

void DmaEngine::read_ids(const Instruction& instr, const DmaOp& op) {
  NPUSIM_CHECK(load_ && !op.transpose && op.count[2] == 1,
               "{}: instruction {}: an indexed DMA is a 2-D load", name(), instr.id);
  index_op_ = DmaOp{};
  index_op_.dram_addr = op.index_addr;
  index_op_.count[0] = static_cast<uint32_t>(op.index_bytes());
  ids_.assign(op.count[1], 0);
  local_ = reinterpret_cast<uint8_t*>(ids_.data());
  reading_ids_ = true;
  transfer_.emplace(index_op_, params_, clock_.now());
  run_transfer();
  reading_ids_ = false;
  const uint64_t end = transfer_->end_cycle();
  if (end > clock_.now()) wait(clock_.cycles(end - clock_.now()));
  tlm::tlm_generic_payload p;
  p.set_command(tlm::TLM_READ_COMMAND);
  p.set_address(op.index_addr);
  p.set_data_ptr(local_);
  p.set_data_length(static_cast<unsigned>(op.index_bytes()));
  p.set_streaming_width(static_cast<unsigned>(op.index_bytes()));
  NPUSIM_CHECK(socket->transport_dbg(p) == op.index_bytes(),
               "{}: instruction {}: the ids at {:#x} could not be read", name(), instr.id,
               op.index_addr);
  for (uint32_t i = 0; i < op.count[1]; ++i) {
    NPUSIM_CHECK(ids_[i] >= 0 && uint32_t(ids_[i]) < op.index_rows,
                 "{}: instruction {}: id {} (position {}) outside [0, {})", name(), instr.id,
                 ids_[i], i, op.index_rows);
  }
  bytes_moved_ += op.index_bytes();
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
  conflicts_ = 0;
  if (op->indexed) read_ids(instr, *op);
  if (op->transpose && params_.values) staging_.resize(op->bytes());
  local_ = op->transpose && params_.values ? staging_.data() : local;
  transfer_.emplace(*op, params_, clock_.now(), op->indexed ? ids_.data() : nullptr);
  run_transfer();
  if (op->transpose && params_.values) {  // row i1 of the box becomes column i1 of the buffer
    const uint32_t eb = static_cast<uint32_t>(op->transpose_element_bytes);
    for (uint32_t i1 = 0; i1 < op->count[1]; ++i1) {
      for (uint32_t j = 0; j < op->count[0] / eb; ++j) {
        std::memcpy(local + (uint64_t(j) * op->count[1] + i1) * eb,
                    staging_.data() + uint64_t(i1) * op->count[0] + uint64_t(j) * eb, eb);
      }
    }
  }
  const uint64_t end = transfer_->end_cycle() + conflicts_;
  bank_conflict_cycles_ += conflicts_;
  layer_conflicts_[instr.layer] += conflicts_;
  bytes_moved_ += op->bytes();
  add_busy(instr, end - start);
  const uint64_t now = clock_.now();
  if (end > now) wait(clock_.cycles(end - now));
  complete(instr, start, end);
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
