// DMA queue: copies strided boxes (1-D to 3-D) between off-chip memory and an on-chip buffer over a
// TLM-2.0 initiator socket (base-protocol non-blocking transport, one transaction per burst).
//
// Timing rule: rows, bursts and the outstanding window as the core states it (models/dma_core.hpp);
// the instruction completes at the core's end cycle plus the bank-conflict cycles of its loads
// (rule in onchip_buffers.hpp); the queue starts its next instruction then and reports the
// completion token to the scoreboard. A transposing load writes each row as a column of the buffer
// (a 2-D transpose on the fly, same timing). Bursts are issued from the memory's completion
// callbacks, so the queue's thread wakes once per instruction, not once per burst.
// An indexed load (an embedding lookup) runs as two transfers: its ids (4 bytes each, one box row)
// with the same rule, then, from the cycle the last id arrived, one row per id at the address the
// id selects; the ids' values come through the memory's debug transport, so a timing-only run
// (values off) reads the same rows at the same cycles.
#pragma once

#include <tlm_utils/simple_initiator_socket.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <tlm>
#include <unordered_map>
#include <vector>

#include "models/dma_core.hpp"
#include "models/execution_unit.hpp"
#include "models/onchip_buffers.hpp"

namespace npusim {

class DmaEngine : public ExecutionUnit {
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
  // With the timeline's burst detail: records each burst (issue to completion) on `track`.
  void record_bursts(uint32_t track) { burst_track_ = track; }
  void register_stats(stats::Registry& reg, const std::string& prefix) const override;

 protected:
  void execute(const Instruction& instr) override;

 private:
  // Issues bursts of the current instruction until the window is full or the box is done.
  void pump();
  // Runs transfer_ from now to its end: pumps, waits for the completions.
  void run_transfer();
  // An indexed load's ids, read off chip with timing; checked against index_rows.
  void read_ids(const Instruction& instr, const DmaOp& op);
  // Sends one burst; its completion cycle if the memory completed it at once.
  std::optional<uint64_t> send(const DmaBurst& burst);
  void burst_done(const tlm::tlm_generic_payload& p, uint64_t cycle);
  tlm::tlm_sync_enum nb_transport_bw(tlm::tlm_generic_payload& payload, tlm::tlm_phase& phase,
                                     sc_core::sc_time& delay);
  tlm::tlm_generic_payload* take_payload();

  OnChipBuffers& buffers_;
  DmaParams params_;
  std::vector<std::unique_ptr<tlm::tlm_generic_payload>> pool_;
  std::vector<tlm::tlm_generic_payload*> free_;
  sc_core::sc_event done_event_;

  // The instruction in progress.
  const DmaOp* op_ = nullptr;
  const Instruction* instr_ = nullptr;
  bool load_ = false;
  uint8_t* local_ = nullptr;  // where row 0 lands or comes from (staging_ when transposing)
  std::optional<DmaTransfer> transfer_;
  uint64_t conflicts_ = 0;        // bank-conflict cycles of this instruction
  std::vector<uint8_t> staging_;  // the box of a transposing load, row by row
  DmaOp index_op_;                // an indexed load's id read
  std::vector<int32_t> ids_;      // and its ids
  bool reading_ids_ = false;
  uint32_t burst_track_ = timeline::InstructionRecord::kNone;
  std::unordered_map<const tlm::tlm_generic_payload*, uint64_t> burst_issue_;  // burst detail only

  uint64_t bytes_moved_ = 0, bursts_ = 0, bank_conflict_cycles_ = 0, window_full_cycles_ = 0;
  std::vector<uint64_t> layer_conflicts_;
};

}  // namespace npusim
