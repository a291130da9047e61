// DMA queue: copies strided boxes (1-D to 3-D) between off-chip memory and an on-chip buffer over a
// TLM-2.0 initiator socket (base-protocol non-blocking transport, one transaction per burst).
//
// Timing rule: the address generator produces one row of the box (count[0] contiguous bytes) per
// core cycle. A row is cut into bursts at multiples of the memory's burst size (split_into_bursts;
// burst size 0, the simple memory, keeps the row whole) and all its bursts issue in that cycle, at
// most `max_outstanding` of them in flight (0: no limit): a burst that finds the window full waits
// for a completion, and the rows after it shift by as much. The instruction completes when its
// last burst has completed, and at the earliest one cycle after it started, plus the bank-conflict
// cycles of its loads (rule in onchip_buffers.hpp); the queue starts its next instruction then and
// reports the completion token to the scoreboard. A transposing load writes each row as a column of
// the buffer (a 2-D transpose on the fly, same timing). Bursts are issued from the memory's
// completion callbacks, so the queue's thread wakes once per instruction, not once per burst.
#pragma once

#include <tlm_utils/simple_initiator_socket.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <tlm>
#include <vector>

#include "models/execution_unit.hpp"
#include "models/onchip_buffers.hpp"

namespace npusim {

// Calls f(offset, bytes) for each piece of [addr, addr + len) cut at the multiples of
// `burst_bytes` (offset relative to addr); burst_bytes 0 gives one piece. Plain C++.
inline uint64_t burst_piece(uint64_t addr, uint64_t remaining, uint64_t burst_bytes) {
  return burst_bytes == 0 ? remaining : std::min(remaining, burst_bytes - addr % burst_bytes);
}
template <class F>
void split_into_bursts(uint64_t addr, uint64_t len, uint64_t burst_bytes, F&& f) {
  for (uint64_t off = 0; off < len;) {
    const uint64_t piece = burst_piece(addr + off, len - off, burst_bytes);
    f(off, piece);
    off += piece;
  }
}

struct DmaParams {
  uint64_t burst_bytes = 0;  // 0: one transaction per row
  int max_outstanding = 0;   // bursts in flight; 0: no limit
};

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
  void register_stats(stats::Registry& reg, const std::string& prefix) const override;

 protected:
  void execute(const Instruction& instr) override;

 private:
  // Issues bursts of the current instruction until the window is full or the box is done.
  void pump();
  void send(uint64_t dram_addr, uint8_t* local, uint64_t len, uint64_t issue_cycle);
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
  uint64_t rows_ = 0, next_row_ = 0, row_offset_ = 0;
  uint64_t row_cycle_ = 0;       // issue cycle of the row in progress
  uint64_t next_row_cycle_ = 0;  // earliest issue cycle of the next row
  uint64_t end_ = 0;             // latest burst completion
  uint64_t outstanding_ = 0;
  uint64_t conflicts_ = 0;              // bank-conflict cycles of this instruction
  uint64_t window_since_ = UINT64_MAX;  // when a burst found the window full
  std::vector<uint8_t> staging_;        // the box of a transposing load, row by row

  uint64_t bytes_moved_ = 0, bursts_ = 0, bank_conflict_cycles_ = 0, window_full_cycles_ = 0;
  std::vector<uint64_t> layer_conflicts_;
};

}  // namespace npusim
