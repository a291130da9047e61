// On-chip SRAM: unified buffer (int8 activations, int32 biases), weight buffer (int8), accumulators
// (int32), each split into banks from the hardware description. Plain storage with always-on bounds
// checks: a compiler bug that would overflow a buffer stops the simulation with the instruction and
// the range, never corrupts silently.
//
// Banks are contiguous: bank b of a buffer holds bytes [b * B, (b + 1) * B), B = capacity / banks;
// each bank has one port. Bank-conflict rule: a compute instruction (matrix or vector unit) holds
// the port of every bank its operand ranges touch for its whole window [start, end) (the
// scoreboard's timing; until it reports, from its first access on). A DMA load burst that lands
// (completes) at cycle t in a bank held at t loses the port to the compute unit and takes one
// extra cycle per such bank; the DMA instruction completes that many cycles later. DMA stores
// (buffer reads) and transposing loads are not charged. Double buffering in different banks
// therefore costs nothing, and a DMA refilling the bank a tile is reading pays. Accesses are
// registered by bytes(); the check sees the compute instructions that have started by the time the
// burst's completion is known.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "arch/hw_config.hpp"
#include "arch/isa.hpp"
#include "arch/program.hpp"
#include "models/clock.hpp"
#include "support/zeroed_bytes.hpp"

namespace npusim {

class Scoreboard;

class OnChipBuffers {
 public:
  explicit OnChipBuffers(const HwConfig& hw);

  // Enables the bank-conflict rule: compute accesses through bytes() are looked up in `program`,
  // their windows in `scoreboard`.
  void track_conflicts(const Program* program, const Scoreboard* scoreboard,
                       const CoreClock* clock);

  // A checked view of [addr, addr + size) of `id` (not kDram), accessed by `instruction`.
  uint8_t* bytes(BufferId id, uint64_t addr, uint64_t size, uint32_t instruction);
  uint64_t capacity(BufferId id) const;
  // All of `id`'s bytes, unchecked and untracked (for copies outside the timed model).
  const uint8_t* contents(BufferId id) const { return slot(id).data.data(); }
  int banks(BufferId id) const;
  // Extra cycles for a DMA write of [addr, addr + size) of `id` landing at `cycle` (the rule
  // above); counts them per buffer.
  uint64_t dma_write_conflicts(BufferId id, uint64_t addr, uint64_t size, uint64_t cycle);
  uint64_t conflict_cycles(BufferId id) const { return slot(id).conflicts; }

 private:
  struct Use {
    uint32_t instruction;
    uint64_t start;
    uint32_t first_bank, last_bank;
  };
  struct Buffer {
    ZeroedBytes data;
    uint64_t bank_bytes = 1;
    int banks = 1;
    std::deque<Use> uses;  // compute instructions that may still hold banks
    uint64_t conflicts = 0;
  };
  Buffer& slot(BufferId id);
  bool reported(uint32_t instruction) const;
  void prune(Buffer& b) const;
  const Buffer& slot(BufferId id) const { return const_cast<OnChipBuffers*>(this)->slot(id); }

  Buffer unified_, weight_, accumulators_;
  const Program* program_ = nullptr;
  const Scoreboard* scoreboard_ = nullptr;
  const CoreClock* clock_ = nullptr;
};

}  // namespace npusim
