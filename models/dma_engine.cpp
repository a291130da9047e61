#include "models/dma_engine.hpp"

#include <algorithm>
#include <cstring>

#include "support/error.hpp"

namespace npusim {

namespace {

// [begin, end) of off-chip memory the box covers (a superset of its rows for a strided box).
std::pair<uint64_t, uint64_t> dram_extent(const DmaOp& op) {
  if (op.count[0] == 0 || op.count[1] == 0 || op.count[2] == 0) return {op.dram_addr, op.dram_addr};
  const uint64_t last = uint64_t(op.count[2] - 1) * op.dram_stride[1] +
                        uint64_t(op.count[1] - 1) * op.dram_stride[0] + op.count[0];
  return {op.dram_addr, op.dram_addr + last};
}

}  // namespace

DmaEngine::DmaEngine(sc_core::sc_module_name name, const Program& program,
                     std::vector<uint32_t> stream, Scoreboard& scoreboard, const CoreClock& clock,
                     OnChipBuffers& buffers, DmaParams params)
    : ExecutionUnit(name, program, std::move(stream), scoreboard, clock),
      socket("socket"),
      buffers_(buffers),
      params_(params),
      layer_conflicts_(program.layers.size(), 0) {
  NPUSIM_CHECK(params_.max_transfers >= 1, "{}: {} transfers in flight", this->name(),
               params_.max_transfers);
  socket.register_nb_transport_bw(this, &DmaEngine::nb_transport_bw);
}

DmaEngine::Payload* DmaEngine::take_payload() {
  if (free_.empty()) {
    pool_.push_back(std::make_unique<Payload>());
    pool_.back()->set_extension(new EarlyResponseExtension(this));  // the payload owns it
    return pool_.back().get();
  }
  Payload* p = free_.back();
  free_.pop_back();
  return p;
}

void DmaEngine::burst_done(Slot& s, const tlm::tlm_generic_payload& p, uint64_t cycle) {
  NPUSIM_CHECK(p.is_response_ok(), "{}: instruction {}: memory error at {:#x}", name(), s.instr->id,
               p.get_address());
  if (burst_track_ != timeline::InstructionRecord::kNone) {
    const uint64_t issue = burst_issue_.at(&p);
    if (timeline_->bursts_wanted(s.instr->layer, issue, cycle)) {
      timeline_->burst({burst_track_, s.instr->id, issue, cycle, p.get_address(),
                        p.get_data_length(), p.is_write()});
    }
  }
  if (s.load && !s.op->transpose && !s.reading_ids) {
    const uint64_t local = s.op->buffer_addr + uint64_t(p.get_data_ptr() - s.local);
    s.conflicts += buffers_.dma_write_conflicts(s.op->buffer, local, p.get_data_length(), cycle);
  }
}

std::optional<uint64_t> DmaEngine::send(Slot& s, const DmaBurst& burst, uint64_t sim_now) {
  Payload* p = take_payload();
  p->slot = &s;
  p->set_command(s.load ? tlm::TLM_READ_COMMAND : tlm::TLM_WRITE_COMMAND);
  p->set_address(burst.dram_addr);
  p->set_data_ptr(s.local + burst.box_offset);
  p->set_data_length(static_cast<unsigned>(burst.bytes));
  p->set_streaming_width(static_cast<unsigned>(burst.bytes));
  p->set_byte_enable_ptr(nullptr);
  p->set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  tlm::tlm_phase phase = tlm::BEGIN_REQ;
  sc_core::sc_time delay = clock_.cycles(burst.issue_cycle - sim_now);
  ++bursts_;
  if (burst_track_ != timeline::InstructionRecord::kNone) burst_issue_[p] = burst.issue_cycle;
  const tlm::tlm_sync_enum r = socket->nb_transport_fw(*p, phase, delay);
  if (r == tlm::TLM_COMPLETED) {  // early completion: the simple memory
    const uint64_t done = sim_now + clock_.to_cycles(delay);
    burst_done(s, *p, done);
    free_.push_back(p);
    return done;
  }
  NPUSIM_CHECK(r == tlm::TLM_ACCEPTED, "{}: instruction {}: unexpected transport status {}", name(),
               s.instr->id, int(r));
  return std::nullopt;
}

void DmaEngine::pump(uint64_t now, uint64_t sim_now) {
  if (issuing_ == nullptr) return;
  Slot& s = *issuing_;
  s.transfer->pump(now,
                   [this, &s, sim_now](const DmaBurst& burst) { return send(s, burst, sim_now); });
  if (s.transfer->all_issued()) {
    issuing_ = nullptr;
    issued_event_.notify(sc_core::SC_ZERO_TIME);
  }
}

void DmaEngine::retire() {
  for (auto& owned : in_flight_) {
    Slot& s = *owned;
    if (s.reported) continue;
    if (!s.transfer->finished()) break;  // completions are reported in program order
    window_full_cycles_ += s.transfer->window_full_cycles();
    s.reported = true;
    slot_event_.notify(sc_core::SC_ZERO_TIME);
    if (s.reading_ids) {
      s.end = s.transfer->end_cycle();
      continue;
    }
    const DmaOp& op = *s.op;
    if (op.transpose && params_.values) {  // row i1 of the box becomes column i1 of the buffer
      const uint32_t eb = static_cast<uint32_t>(op.transpose_element_bytes);
      for (uint32_t i1 = 0; i1 < op.count[1]; ++i1) {
        for (uint32_t j = 0; j < op.count[0] / eb; ++j) {
          std::memcpy(s.buffer + (uint64_t(j) * op.count[1] + i1) * eb,
                      s.staging.data() + uint64_t(i1) * op.count[0] + uint64_t(j) * eb, eb);
        }
      }
      std::vector<uint8_t>().swap(s.staging);
    }
    if (op.unpack_int4 && params_.values) {  // each byte: two int4 values, the lower nibble first
      for (uint64_t i = 0; i < s.staging.size(); ++i) {
        const uint8_t b = s.staging[i];
        s.buffer[2 * i] = uint8_t(int8_t(uint8_t(b << 4)) >> 4);
        s.buffer[2 * i + 1] = uint8_t(int8_t(b) >> 4);
      }
      std::vector<uint8_t>().swap(s.staging);
    }
    if (op.format != WeightFormat::kDense && params_.values) {
      expand_weight_box(s.staging, op.dense, op.format, s.buffer);
      std::vector<uint8_t>().swap(s.staging);
    }
    const Instruction& instr = *s.instr;
    s.end = std::max(s.transfer->end_cycle() + s.conflicts, last_end_);
    if (op.format != WeightFormat::kDense) {
      // The decompressor writes one dense row per cycle, from the transfer's start or when it
      // finished the previous box, and its last row one cycle after the last compressed byte.
      const uint64_t expanded = std::max(s.start, decompressor_free_) + op.dense.rows;
      s.end = std::max({s.end, s.transfer->end_cycle() + 1 + s.conflicts, expanded});
      decompressor_free_ = s.end;
    }
    bank_conflict_cycles_ += s.conflicts;
    layer_conflicts_[instr.layer] += s.conflicts;
    bytes_moved_ += op.bytes();
    add_busy(instr, s.end - std::max(s.start, last_end_));  // the union of the queue's windows
    last_end_ = s.end;
    complete(instr, s.start, s.end);
  }
}

void DmaEngine::release_slots() {
  const uint64_t now = clock_.now();
  while (!in_flight_.empty() && in_flight_.front()->reported && in_flight_.front()->end <= now) {
    in_flight_.pop_front();
  }
}

void DmaEngine::wait_for_oldest() {
  const Slot& s = *in_flight_.front();
  const uint64_t now = clock_.now();
  if (s.reported) {
    wait(clock_.cycles(s.end - now));
  } else {
    wait(slot_event_);
  }
}

bool DmaEngine::overlaps_in_flight(const DmaOp& op, bool load) const {
  const auto mine = dram_extent(op);
  for (const auto& owned : in_flight_) {
    const Slot& s = *owned;
    if (s.reading_ids) continue;
    if (load) {
      if (s.op->buffer == op.buffer && s.op->buffer_addr < op.buffer_addr + op.buffer_bytes() &&
          op.buffer_addr < s.op->buffer_addr + s.op->buffer_bytes()) {
        return true;
      }
    } else {
      const auto theirs = dram_extent(*s.op);
      if (theirs.first < mine.second && mine.first < theirs.second) return true;
    }
  }
  return false;
}

DmaEngine::Slot& DmaEngine::issue(std::unique_ptr<Slot> owned, const int32_t* ids) {
  Slot& s = *owned;
  s.transfer.emplace(*s.op, params_, clock_.now(), ids, &window_);
  in_flight_.push_back(std::move(owned));
  max_in_flight_ = std::max<uint64_t>(max_in_flight_, in_flight_.size());
  NPUSIM_CHECK(issuing_ == nullptr, "{}: instruction {} issued while the address generator is busy",
               name(), s.instr->id);
  issuing_ = &s;
  pump(clock_.now(), clock_.now());
  while (issuing_ == &s) wait(issued_event_);
  retire();
  // The address generator takes the next instruction from the cycle after this one's last row.
  const uint64_t free = s.transfer->next_row_cycle(), now = clock_.now();
  if (free > now) wait(clock_.cycles(free - now));
  return s;
}

tlm::tlm_sync_enum DmaEngine::nb_transport_bw(tlm::tlm_generic_payload& payload,
                                              tlm::tlm_phase& phase, sc_core::sc_time& delay) {
  auto& p = static_cast<Payload&>(payload);
  NPUSIM_CHECK(phase == tlm::BEGIN_RESP && p.slot != nullptr && p.slot->transfer &&
                   p.slot->transfer->outstanding() > 0,
               "{}: unexpected response (phase {})", name(), int(phase));
  // An early response (early_response.hpp) completes `delay` after the simulated time.
  const uint64_t sim_now = clock_.now();
  // An early response must be quiet: checked below by its effects (it ended neither the issuing
  // nor a transfer), not by asking response_is_quiet() again.
  const bool early = delay != sc_core::SC_ZERO_TIME;
  const uint64_t now = early ? sim_now + clock_.to_cycles(delay) : sim_now;
  Slot& s = *p.slot;
  s.transfer->completed(now);
  burst_done(s, p, now);
  p.slot = nullptr;
  free_.push_back(&p);
  const Slot* issuing = issuing_;
  pump(now, sim_now);  // the freed window slot goes to the transfer being issued
  if (early) {         // it ended neither the issuing nor a transfer: nothing to notify or report
    NPUSIM_CHECK(issuing_ == issuing, "{}: an early response ended the issuing", name());
    for (const auto& owned : in_flight_) {
      if (owned->reported) continue;
      NPUSIM_CHECK(!owned->transfer->finished(), "{}: an early response ended instruction {}",
                   name(), owned->instr->id);
      break;
    }
  } else {
    retire();
  }
  phase = tlm::END_RESP;
  return tlm::TLM_COMPLETED;
}

bool DmaEngine::response_is_quiet(const tlm::tlm_generic_payload& payload) const {
  if (burst_track_ != timeline::InstructionRecord::kNone) return false;
  const Slot& s = *static_cast<const Payload&>(payload).slot;
  if (s.transfer->outstanding() <= 1 && s.transfer->all_issued()) {
    for (const auto& owned : in_flight_) {  // retire() reports from the oldest unreported one
      if (owned->reported) continue;
      if (owned.get() == &s) return false;
      break;
    }
  }
  if (issuing_ != nullptr) {
    // The window gets one slot back; pump() sends at most that many bursts, one row at least each.
    if (params_.max_outstanding <= 0) return false;
    const uint64_t free = uint64_t(params_.max_outstanding) + 1 - window_.in_flight;
    if (issuing_->transfer->rows_left() <= free) return false;
  }
  return true;
}

void DmaEngine::read_ids(const Instruction& instr, const DmaOp& op) {
  NPUSIM_CHECK(op.transpose == false && instr.unit == UnitKind::kDmaLoad && op.count[2] == 1,
               "{}: instruction {}: an indexed DMA is a 2-D load", name(), instr.id);
  index_op_ = DmaOp{};
  index_op_.dram_addr = op.index_addr;
  index_op_.count[0] = static_cast<uint32_t>(op.index_bytes());
  ids_.assign(op.count[1], 0);
  auto owned = std::make_unique<Slot>();
  owned->instr = &instr;
  owned->op = &index_op_;
  owned->load = true;
  owned->reading_ids = true;
  owned->local = reinterpret_cast<uint8_t*>(ids_.data());
  owned->start = clock_.now();
  Slot& s = issue(std::move(owned), nullptr);
  while (!s.reported) wait(slot_event_);
  const uint64_t end = s.end;
  if (end > clock_.now()) wait(clock_.cycles(end - clock_.now()));
  release_slots();
  NPUSIM_CHECK(in_flight_.empty(), "{}: instruction {}: the id read did not drain", name(),
               instr.id);
  tlm::tlm_generic_payload p;
  p.set_command(tlm::TLM_READ_COMMAND);
  p.set_address(op.index_addr);
  p.set_data_ptr(reinterpret_cast<uint8_t*>(ids_.data()));
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

void DmaEngine::before_issue(const Instruction& /*instr*/) {
  while (true) {
    release_slots();
    if (in_flight_.size() < size_t(params_.max_transfers)) return;
    wait_for_oldest();
  }
}

void DmaEngine::execute(const Instruction& instr) {
  const auto* op = std::get_if<DmaOp>(&instr.op);
  NPUSIM_CHECK(op != nullptr, "{}: instruction {} is not a DMA", name(), instr.id);
  const bool load = instr.unit == UnitKind::kDmaLoad;
  NPUSIM_CHECK(!op->transpose || (load && op->count[2] == 1),
               "{}: instruction {}: only 2-D loads can transpose", name(), instr.id);
  // The queue's own writes land in program order; an indexed load's ids need the queue alone.
  while (true) {
    release_slots();
    if (in_flight_.empty() || (!op->indexed && !overlaps_in_flight(*op, load))) break;
    wait_for_oldest();
  }
  auto owned = std::make_unique<Slot>();
  Slot& s = *owned;
  s.instr = &instr;
  s.op = op;
  s.load = load;
  NPUSIM_CHECK(!op->unpack_int4 || (load && !op->transpose && !op->indexed),
               "{}: instruction {}: only plain loads unpack int4", name(), instr.id);
  NPUSIM_CHECK(op->format == WeightFormat::kDense ||
                   (load && !op->transpose && !op->indexed && !op->unpack_int4),
               "{}: instruction {}: only plain loads decompress", name(), instr.id);
  s.buffer = buffers_.bytes(op->buffer, op->buffer_addr, op->buffer_bytes(), instr.id);
  s.start = clock_.now();
  if (op->indexed) read_ids(instr, *op);
  const bool staged =
      (op->transpose || op->unpack_int4 || op->format != WeightFormat::kDense) && params_.values;
  if (staged) s.staging.resize(op->bytes());
  s.local = staged ? s.staging.data() : s.buffer;
  issue(std::move(owned), op->indexed ? ids_.data() : nullptr);
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
  reg.counter(prefix + ".max_transfers_in_flight", "count",
              "most instructions the queue had in flight at once", max_in_flight_);
}

}  // namespace npusim
