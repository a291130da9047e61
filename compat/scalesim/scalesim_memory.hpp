// SCALE-Sim v2's memory models, reproduced from their documented behaviour (docs/scalesim.md):
//
// CalcReadEstimator (CALC mode IFMAP/FILTER SRAM): never stalls the array. It groups the
//   addresses the array requests, in demand order, into "epochs" of E = 50 * floor(words/100)
//   distinct addresses; an address already seen in the current epoch is a hit. Every epoch is
//   fetched once, so DRAM reads = sum of the epochs' distinct addresses. The first epoch is
//   fetched before cycle 0 at 10 words/cycle; each later epoch is fetched in the cycles the
//   previous one took to consume, so the DRAM trace ends one cycle after the last full epoch.
//
// UserReadBuffer (USER mode IFMAP/FILTER SRAM): the operand's prefetch order is cut into sets of
//   ceil(words/100) addresses; an active window of ceil(words/2) words' worth of sets is resident.
//   A request outside the window slides it forward by one prefetch half (wrapping around), costs
//   ceil(half/bw) DRAM lines issued right after the previous prefetch, and the request completes
//   when that prefetch does (or one cycle after issue, if the prefetch landed earlier). The first
//   window is fetched so that it ends at cycle -1.
//
// WriteBuffer (OFMAP SRAM, both modes): when more than half the buffer is occupied a drain of
//   ceil(half/bw) lines starts, one line per cycle; the array stalls only if the buffer fills up
//   while a drain is still running. Whatever is left is drained after the last compute cycle.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "support/error.hpp"

namespace npusim::scalesim {

struct DramActivity {
  int64_t accesses = 0;  // words read or written
  int64_t start_cycle = 0;
  int64_t stop_cycle = 0;
};

class CalcReadEstimator {
 public:
  // `domain` is the number of distinct addresses (address - offset lies in [0, domain)).
  CalcReadEstimator(int64_t sram_words, int64_t offset, int64_t domain);

  void request(int64_t address, int64_t cycle) {
    const int64_t idx = address - offset_;
    if (!seen_first_) {
      seen_first_ = true;
      first_request_cycle_ = cycle;
    }
    if (stamp_[static_cast<std::size_t>(idx)] == epoch_) {
      ++requests_;
      return;
    }
    stamp_[static_cast<std::size_t>(idx)] = epoch_;
    ++requests_;
    if (++in_epoch_ == epoch_words_) {
      completions_.push_back(cycle);
      completion_requests_.push_back(requests_);
      in_epoch_ = 0;
      if (++epoch_ == 0) {  // 16-bit stamps keep the table in cache; renumber on wrap-around
        std::fill(stamp_.begin(), stamp_.end(), uint16_t{0});
        epoch_ = 1;
      }
    }
  }
  // Used when no address can repeat within an epoch: all `count` requests are new.
  void request_new(int64_t count, int64_t cycle) {
    if (count == 0) return;
    if (!seen_first_) {
      seen_first_ = true;
      first_request_cycle_ = cycle;
    }
    in_epoch_ += count;
    while (in_epoch_ >= epoch_words_) {
      completions_.push_back(cycle);
      in_epoch_ -= epoch_words_;
    }
  }
  // `rows` consecutive rows of `count` new requests each, issued in cycles cycle, cycle+1, ...
  void request_new_rows(int64_t count, int64_t rows, int64_t cycle);
  // Used when the whole operand is known to hold fewer distinct addresses than one epoch: the
  // request stream need not be walked.
  void set_unique_without_walk(int64_t unique) { unique_without_walk_ = unique; }
  int64_t epoch_words() const { return epoch_words_; }
  int64_t in_epoch() const { return in_epoch_; }
  int64_t completions() const { return static_cast<int64_t>(completions_.size()); }
  // Walked requests so far, and the request count at which epoch j completed (walk only).
  int64_t requests() const { return requests_; }
  int64_t completion_request(int64_t j) const {
    return completion_requests_[static_cast<std::size_t>(j)];
  }
  // An epoch completion known from the structure of the stream (see simulate_layer).
  void add_completion(int64_t cycle) { completions_.push_back(cycle); }
  // New requests known not to complete an epoch; their cycles do not matter.
  void add_new_untimed(int64_t count) {
    in_epoch_ += count;
    NPUSIM_CHECK(in_epoch_ < epoch_words_, "CALC estimator: untimed requests complete an epoch");
  }

  DramActivity finish() const;

 private:
  int64_t set_words_;
  int64_t epoch_words_;
  int64_t offset_;
  std::vector<uint16_t> stamp_;  // epoch in which each address was last seen
  uint16_t epoch_ = 1;
  int64_t in_epoch_ = 0;
  bool seen_first_ = false;
  int64_t first_request_cycle_ = 0;
  std::vector<int64_t> completions_;
  int64_t requests_ = 0;
  std::vector<int64_t> completion_requests_;
  int64_t unique_without_walk_ = -1;
};

class UserReadBuffer {
 public:
  // `prefetch_order`: the operand in SCALE-Sim's prefetch order, -1 for padding. Requests are
  // given as positions in that order. `distinct`: no address appears twice in it (GEMM-like
  // operands); otherwise an address may also hit through another position holding it.
  UserReadBuffer(int64_t sram_words, int64_t bandwidth_words, int64_t offset, int64_t domain,
                 std::vector<int64_t> prefetch_order, bool distinct);

  // Services one demand row whose requests are prefetch-order positions first, first+1, ...,
  // first+count-1 (in lane order; padding positions are not requests); returns the cycle its
  // data is available.
  int64_t service_positions(int64_t cycle, int64_t first, int64_t count) {
    if (!started_) start(cycle);
    int64_t out = cycle + 1;  // hit latency 1
    for (int64_t p = first; p < first + count; ++p) {
      const uint32_t s = set_of_position_[static_cast<std::size_t>(p)];
      if (s == kNoSet) continue;  // a window element outside the IFMAP: no request
      int guard = 0;
      // Its own set is usually in the window; a repeated address may be in another one.
      while (!in_window(s) && (distinct_ || !hit(order_[static_cast<std::size_t>(p)] - offset_))) {
        new_prefetch();
        out = std::max(out, last_prefetch_cycle_);  // waits for the prefetch to land
        check_progress(++guard, p);
      }
    }
    return out;
  }

  DramActivity finish() const;

 private:
  void start(int64_t cycle);
  void new_prefetch();
  void check_progress(int guard, int64_t address) const;
  bool in_window(int64_t s) const {
    return window_start_ < window_end_ ? (s >= window_start_ && s < window_end_)
                                       : (s >= window_start_ || s < window_end_);
  }
  bool hit(int64_t idx) const {
    for (uint32_t p = set_begin_[static_cast<std::size_t>(idx)];
         p < set_begin_[static_cast<std::size_t>(idx) + 1]; ++p) {
      if (in_window(set_ids_[p])) return true;
    }
    return false;
  }

  int64_t offset_;
  int64_t bandwidth_;
  int64_t active_words_;
  int64_t prefetch_words_;
  int64_t fetch_lines_;
  int64_t num_sets_;
  int64_t active_sets_;
  int64_t prefetch_sets_;
  std::vector<uint32_t> set_begin_;  // CSR: address index -> set ids holding it
  std::vector<uint32_t> set_ids_;
  static constexpr uint32_t kNoSet = UINT32_MAX;
  bool distinct_;
  std::vector<int64_t> order_;             // prefetch order (kept when !distinct_)
  std::vector<uint32_t> set_of_position_;  // prefetch position -> set id
  bool started_ = false;
  int64_t window_start_ = 0;
  int64_t window_end_ = 0;
  int64_t last_prefetch_cycle_ = 0;
  DramActivity dram_;
};

class WriteBuffer {
 public:
  WriteBuffer(int64_t sram_words, int64_t bandwidth_words);

  // `writes` words arrive in the demand row issued at `cycle`; returns the cycle the row
  // completes (cycle + stall).
  int64_t service_row(int64_t cycle, int64_t writes);
  // How many of `rows` consecutive rows of `writes` words, issued from `cycle` on one per cycle,
  // start no drain and stall nowhere; stores that many and returns the number (0: none).
  int64_t bulk_rows(int64_t cycle, int64_t writes, int64_t rows);
  // Drains everything left, starting at `last_cycle`.
  void finish(int64_t last_cycle);
  const DramActivity& dram() const { return dram_; }
  bool wrote() const { return drained_any_; }

 private:
  void store(int64_t words);
  void flush_partial_line();
  int64_t drain(int64_t start_cycle);
  int64_t line_valid(int64_t line);

  int64_t active_words_;
  int64_t drain_words_;
  int64_t bandwidth_;
  int64_t free_words_;
  int64_t line_fill_ = 0;
  int64_t lines_ = 0;
  std::vector<std::pair<int64_t, int64_t>> partial_lines_;  // (line index, valid words)
  std::size_t partial_cursor_ = 0;
  int64_t drain_start_line_ = 0;
  int64_t drain_end_cycle_ = 0;
  bool drained_any_ = false;
  DramActivity dram_;
};

}  // namespace npusim::scalesim
