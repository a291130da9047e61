// DMA queue: copies strided boxes (1-D to 3-D) between off-chip memory and an on-chip buffer over a
// TLM-2.0 initiator socket (base-protocol non-blocking transport, one transaction per burst).
//
// Timing rule: rows, bursts and the outstanding window as the core states it (models/dma_core.hpp).
// The queue keeps up to `max_transfers` instructions in flight (descriptor pipelining, as DMA
// engines with descriptor rings do): an instruction starts when the scoreboard releases its tokens,
// a slot is free and the address generator has issued the previous instruction's last row; its
// bursts share the queue's window of `max_outstanding` bursts with the transfers still in flight.
// An instruction completes at its last burst's completion plus the bank-conflict cycles of its
// loads (rule in onchip_buffers.hpp), and never before the instruction ahead of it in the queue
// (completions are reported in order, the ISA's contract); it holds its slot until then. An
// instruction whose destination (buffer bytes of a load, off-chip extent of a store) overlaps one
// in flight waits for that one to complete first, so a queue's own writes land in program order.
// With max_transfers 1 this is the serial queue: each instruction starts after the previous ended.
// A transposing load writes each row as a column of the buffer (a 2-D transpose on the fly, same
// timing); an int4-unpacking load writes each byte as two int8 values (the box's bytes move, twice
// as many land); a compressed weight load (DmaOp::format) reads the compressed box and its
// decompressor writes the dense one, one row per cycle (rows of the queue's successive compressed
// loads one after another), its last row no earlier than the cycle after the last byte arrived.
// Bursts are issued from the memory's completion callbacks, so the queue's thread
// wakes once or twice per instruction, not once per burst; the queue takes early responses
// (early_response.hpp) for the completions that end neither a transfer nor the issuing of one, so
// the memory need not wake at each completion cycle either. An indexed load (an embedding lookup)
// waits for the queue to drain, then runs as two transfers: its ids (4 bytes each, one box row)
// with the same rule, then, from the cycle the last id arrived, one row per id at the address the
// id selects; the ids' values come through the memory's debug transport, so a timing-only run
// (values off) reads the same rows at the same cycles.
#pragma once

#include <tlm_utils/simple_initiator_socket.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <tlm>
#include <unordered_map>
#include <vector>

#include "models/dma_core.hpp"
#include "models/early_response.hpp"
#include "models/execution_unit.hpp"
#include "models/onchip_buffers.hpp"

namespace npusim {

class DmaEngine : public ExecutionUnit, public EarlyResponses {
 public:
  tlm_utils::simple_initiator_socket<DmaEngine> socket;

  DmaEngine(sc_core::sc_module_name name, const Program& program, std::vector<uint32_t> stream,
            Scoreboard& scoreboard, const CoreClock& clock, OnChipBuffers& buffers,
            DmaParams params);

  uint64_t bytes_moved() const { return bytes_moved_; }
  uint64_t bursts() const { return bursts_; }
  // Cycles loads waited on bank conflicts in total and per layer.
  uint64_t bank_conflict_cycles() const { return bank_conflict_cycles_; }
  const std::vector<uint64_t>& layer_bank_conflict_cycles() const { return layer_conflicts_; }
  // Cycles a burst waited for a free slot of the outstanding window.
  uint64_t window_full_cycles() const { return window_full_cycles_; }
  // Most instructions in flight at once.
  uint64_t max_in_flight() const { return max_in_flight_; }
  // With the timeline's burst detail: records each burst (issue to completion) on `track`.
  void record_bursts(uint32_t track) { burst_track_ = track; }
  void register_stats(stats::Registry& reg, const std::string& prefix) const override;
  // A burst's completion is quiet (early_response.hpp) unless it may end the oldest transfer in
  // flight (its report goes to the scoreboard) or let the transfer being issued send its last burst
  // (which wakes the queue's thread), or bursts are recorded.
  bool response_is_quiet(const tlm::tlm_generic_payload& payload) const override;

 protected:
  void before_issue(const Instruction& instr) override;
  void execute(const Instruction& instr) override;

 private:
  // One transfer in flight: an instruction's box, or an indexed load's id read (instr null).
  struct Slot {
    const Instruction* instr = nullptr;
    const DmaOp* op = nullptr;
    bool load = false;
    bool reading_ids = false;
    uint8_t* buffer = nullptr;     // the instruction's bytes in its buffer
    uint8_t* local = nullptr;      // where row 0 lands or comes from (staging when transposing)
    std::vector<uint8_t> staging;  // the box of a transposing load, row by row
    std::optional<DmaTransfer> transfer;
    uint64_t start = 0;
    uint64_t conflicts = 0;  // bank-conflict cycles of its loads
    bool reported = false;   // its completion went to the scoreboard
    uint64_t end = 0;        // and the cycle it completes (it holds its slot until then)
  };
  // A payload knows the transfer it belongs to.
  struct Payload : tlm::tlm_generic_payload {
    Slot* slot = nullptr;
  };

  // Starts the slot's transfer and returns once the address generator has issued its last row.
  Slot& issue(std::unique_ptr<Slot> slot, const int32_t* ids);
  // Waits until the oldest transfer in flight has finished (or its completion cycle, if reported).
  void wait_for_oldest();
  // Issues bursts of the transfer being issued, at core cycle `now`, until the window is full or
  // its box is done; `sim_now` is the simulated time's cycle (< now for an early response).
  void pump(uint64_t now, uint64_t sim_now);
  // Reports the completions of the finished transfers at the head of the queue, in order.
  void retire();
  // Drops the slots whose completion cycle has passed.
  void release_slots();
  // An instruction in flight writes bytes that `op` writes too.
  bool overlaps_in_flight(const DmaOp& op, bool load) const;
  // An indexed load's ids, read off chip with timing; checked against index_rows.
  void read_ids(const Instruction& instr, const DmaOp& op);
  // Sends one burst of `slot`, its delay counted from `sim_now` (the simulated time's cycle); its
  // completion cycle if the memory completed it at once.
  std::optional<uint64_t> send(Slot& slot, const DmaBurst& burst, uint64_t sim_now);
  void burst_done(Slot& slot, const tlm::tlm_generic_payload& p, uint64_t cycle);
  tlm::tlm_sync_enum nb_transport_bw(tlm::tlm_generic_payload& payload, tlm::tlm_phase& phase,
                                     sc_core::sc_time& delay);
  Payload* take_payload();

  OnChipBuffers& buffers_;
  DmaParams params_;
  std::vector<std::unique_ptr<Payload>> pool_;
  std::vector<Payload*> free_;
  DmaWindow window_;
  std::deque<std::unique_ptr<Slot>> in_flight_;  // program order
  Slot* issuing_ = nullptr;                      // the transfer whose rows are being issued
  sc_core::sc_event issued_event_;               // issuing_ sent its last burst
  sc_core::sc_event slot_event_;                 // a transfer finished (and was reported)
  uint64_t last_end_ = 0;                        // completion cycle of the last reported one
  uint64_t decompressor_free_ = 0;               // the cycle the decompressor's last row left

  std::vector<int32_t> ids_;  // an indexed load's ids
  DmaOp index_op_;            // and their read
  uint32_t burst_track_ = timeline::InstructionRecord::kNone;
  std::unordered_map<const tlm::tlm_generic_payload*, uint64_t> burst_issue_;  // burst detail only

  uint64_t bytes_moved_ = 0, bursts_ = 0, bank_conflict_cycles_ = 0, window_full_cycles_ = 0;
  uint64_t max_in_flight_ = 0;
  std::vector<uint64_t> layer_conflicts_;
};

}  // namespace npusim
