// The DMA queue's timing core, plain C++ (models/dma_engine.hpp adapts it to TLM and the
// scoreboard): one instruction's strided box -> rows -> bursts, the bounded in-flight window and
// the cycles they take.
//
// Timing rule: the address generator produces one row of the box (count[0] contiguous bytes) per
// core cycle, from the instruction's start cycle. A row is cut into bursts at multiples of the
// memory's burst size (split_into_bursts; burst size 0, the simple memory, keeps the row whole) and
// all its bursts issue in that cycle, at most `max_outstanding` of them in flight (0: no limit): a
// burst that finds the window full waits for a completion, and the rows after it shift by as much.
// A memory may complete a burst at once (the simple memory: its completion cycle is known when it
// is sent, and it never occupies the window) or later (completed()). The transfer ends at its
// latest burst completion, and at the earliest one cycle after it started.
//
// Several transfers of one queue may be in flight at once (descriptor pipelining, dma_engine.hpp):
// they share one window (DmaWindow) and one address generator, so the next transfer's first row
// issues no earlier than the cycle after this one's last row (next_row_cycle() once all_issued()).
//
// Contract: pump() at the start cycle and after every completed() of any transfer sharing the
// window; the transfer is finished when every row has been issued and nothing is in flight.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>

#include "arch/isa.hpp"

namespace npusim {

// The size of the piece of [addr, addr + remaining) up to the next multiple of `burst_bytes`
// (all of it when burst_bytes is 0).
inline uint64_t burst_piece(uint64_t addr, uint64_t remaining, uint64_t burst_bytes) {
  return burst_bytes == 0 ? remaining : std::min(remaining, burst_bytes - addr % burst_bytes);
}
// Calls f(offset, bytes) for each piece of [addr, addr + len) cut at the multiples of
// `burst_bytes` (offset relative to addr); burst_bytes 0 gives one piece.
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
  int max_outstanding = 0;   // bursts in flight per queue; 0: no limit
  bool values = true;        // false (timing-only runs): the engine moves no bytes
  int max_transfers = 1;     // instructions (descriptors) in flight per queue, >= 1
};

// The bursts in flight of a queue, shared by its transfers.
struct DmaWindow {
  uint64_t in_flight = 0;
};

struct DmaBurst {
  uint64_t dram_addr = 0;
  uint64_t box_offset = 0;  // where its bytes sit in the packed box (row-major, count[0] fastest)
  uint64_t bytes = 0;
  uint64_t issue_cycle = 0;  // core cycle it leaves the queue (>= the cycle it is sent in)
};

class DmaTransfer {
 public:
  // `ids` (an indexed load's, count[1] of them): row i1 comes from dram_addr + ids[i1] *
  // dram_stride[0].
  // `window`: the queue's window this transfer shares with the others in flight (nullptr: its own).
  DmaTransfer(const DmaOp& op, const DmaParams& params, uint64_t start_cycle,
              const int32_t* ids = nullptr, DmaWindow* window = nullptr)
      : op_(op),
        ids_(ids),
        window_(window != nullptr ? window : &own_window_),
        params_(params),
        rows_(op.count[0] == 0 ? 0 : uint64_t{op.count[1]} * op.count[2]),
        next_row_cycle_(start_cycle),
        end_(start_cycle + 1) {}

  // Sends, at core cycle `now`, every burst the rule allows until the window is full or the box
  // is done. `send(const DmaBurst&)` hands one to the memory and returns its completion cycle if
  // the memory completed it at once, std::nullopt if it will report it through completed().
  template <class Send>
  void pump(uint64_t now, Send&& send);
  // A burst in flight completed at core cycle `cycle` (now).
  void completed(uint64_t cycle) {
    --outstanding_;
    --window_->in_flight;
    end_ = std::max(end_, cycle);
  }
  DmaTransfer(const DmaTransfer&) = delete;
  DmaTransfer& operator=(const DmaTransfer&) = delete;

  bool finished() const { return next_row_ == rows_ && outstanding_ == 0; }
  // Every burst has been sent: the address generator is free from next_row_cycle() on.
  bool all_issued() const { return next_row_ == rows_; }
  // Rows not issued whole yet (the one in progress included); each has at least one burst to send.
  uint64_t rows_left() const { return rows_ - next_row_; }
  uint64_t next_row_cycle() const { return next_row_cycle_; }
  uint64_t outstanding() const { return outstanding_; }
  // The latest burst completion so far, at least start + 1: the end cycle once finished().
  uint64_t end_cycle() const { return end_; }
  uint64_t bursts() const { return bursts_; }
  // Cycles a burst waited for a free slot of the window.
  uint64_t window_full_cycles() const { return window_full_cycles_; }

 private:
  static constexpr uint64_t kNotWaiting = UINT64_MAX;
  bool window_full() const {
    return params_.max_outstanding > 0 && window_->in_flight >= uint64_t(params_.max_outstanding);
  }

  const DmaOp& op_;
  const int32_t* ids_;
  DmaWindow own_window_;
  DmaWindow* window_;
  DmaParams params_;
  uint64_t rows_;
  uint64_t next_row_ = 0, row_offset_ = 0;
  uint64_t row_i1_ = 0, row_i2_ = 0;  // next_row_ % count[1], next_row_ / count[1]
  uint64_t row_cycle_ = 0;            // issue cycle of the row in progress
  uint64_t row_addr_ = 0;             // and its first byte off chip
  uint64_t next_row_cycle_;           // earliest issue cycle of the next row
  uint64_t end_;                      // latest burst completion
  uint64_t outstanding_ = 0;
  uint64_t bursts_ = 0;
  uint64_t window_since_ = kNotWaiting;  // when a burst found the window full
  uint64_t window_full_cycles_ = 0;
};

template <class Send>
void DmaTransfer::pump(uint64_t now, Send&& send) {
  if (window_since_ != kNotWaiting && !window_full()) {  // a completion freed a slot
    window_full_cycles_ += now - window_since_;
    window_since_ = kNotWaiting;
  }
  const uint64_t len = op_.count[0];
  while (next_row_ < rows_) {
    if (row_offset_ == 0) {  // a new row: its address (kept while the window holds it back)
      const uint64_t row = ids_ != nullptr ? uint64_t(ids_[row_i1_]) : row_i1_;
      row_addr_ = op_.dram_addr + row_i2_ * op_.dram_stride[1] + row * op_.dram_stride[0];
      row_cycle_ = std::max(next_row_cycle_, now);
    }
    const uint64_t addr = row_addr_;
    const uint64_t issue = std::max(row_cycle_, now);
    while (row_offset_ < len) {
      if (window_full()) {
        if (window_since_ == kNotWaiting) window_since_ = now;
        return;  // resumed by the next completion
      }
      const uint64_t piece =
          burst_piece(addr + row_offset_, len - row_offset_, params_.burst_bytes);
      ++bursts_;
      const std::optional<uint64_t> done =
          send(DmaBurst{addr + row_offset_, next_row_ * len + row_offset_, piece, issue});
      if (done) {
        end_ = std::max(end_, *done);
      } else {
        ++outstanding_;
        ++window_->in_flight;
      }
      row_offset_ += piece;
    }
    row_offset_ = 0;
    next_row_cycle_ = issue + 1;
    ++next_row_;
    if (++row_i1_ == op_.count[1]) {  // next_row_ = row_i2_ * count[1] + row_i1_
      row_i1_ = 0;
      ++row_i2_;
    }
  }
}

}  // namespace npusim
