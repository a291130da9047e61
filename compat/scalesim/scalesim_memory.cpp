#include "compat/scalesim/scalesim_memory.hpp"

#include <fmt/core.h>

#include "support/error.hpp"

namespace npusim::scalesim {

namespace {
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
constexpr int64_t kReadPortLatency = 1;        // DRAM read port: response one cycle after request
constexpr int64_t kCalcDefaultBandwidth = 10;  // words/cycle of the pre-cycle-0 CALC fill
constexpr int64_t kCalcSetsPerHalf = 50;       // SCALE-Sim: 100 sets per SRAM, half of them active
}  // namespace

CalcReadEstimator::CalcReadEstimator(int64_t sram_words, int64_t offset, int64_t domain)
    : set_words_(sram_words / 100),
      epoch_words_(kCalcSetsPerHalf * (sram_words / 100)),
      offset_(offset) {
  NPUSIM_CHECK(set_words_ > 0, "CALC read estimator: SRAM of {} words is below 100 words",
               sram_words);
  stamp_.assign(static_cast<size_t>(domain), 0);
}

void CalcReadEstimator::request_new_rows(int64_t count, int64_t rows, int64_t cycle) {
  if (count == 0 || rows == 0) return;
  if (!seen_first_) {
    seen_first_ = true;
    first_request_cycle_ = cycle;
  }
  int64_t done = 0;  // rows applied so far
  while (true) {
    // Row (done + need - 1) is the one whose requests complete the current epoch.
    const int64_t need = ceil_div(epoch_words_ - in_epoch_, count);
    if (done + need > rows) break;
    done += need;
    in_epoch_ += need * count;
    while (in_epoch_ >= epoch_words_) {
      completions_.push_back(cycle + done - 1);
      in_epoch_ -= epoch_words_;
    }
  }
  in_epoch_ += (rows - done) * count;
}

DramActivity CalcReadEstimator::finish() const {
  DramActivity out;
  if (unique_without_walk_ >= 0 || completions_.empty()) {
    // Everything fits in one epoch: a single fill that ends at cycle -1.
    const int64_t unique = unique_without_walk_ >= 0 ? unique_without_walk_ : in_epoch_;
    const int64_t sets = ceil_div(unique, set_words_);
    const int64_t lines = ceil_div(sets * set_words_, kCalcDefaultBandwidth);
    out.accesses = unique;
    out.start_cycle = -lines;
    out.stop_cycle = -1;
    return out;
  }
  out.accesses = static_cast<int64_t>(completions_.size()) * epoch_words_ + in_epoch_;
  const int64_t first_lines = ceil_div(epoch_words_, kCalcDefaultBandwidth);
  out.start_cycle = first_request_cycle_ - first_lines;
  // Epoch j>0 is fetched during [start, end] = the cycles epoch j-1 was consumed in.
  int64_t window_start = first_request_cycle_ - kReadPortLatency;
  int64_t window_end = completions_.front();
  for (size_t j = 1; j < completions_.size(); ++j) {
    if (window_end - window_start + 1 <= 0) {
      throw UserError(fmt::format(
          "SCALE-Sim's CALC bandwidth estimate is undefined for this layer: two prefetch "
          "windows complete in cycle {} (the SRAM holds fewer words than one demand row "
          "brings in); use a larger SRAM",
          window_end));
    }
    window_start = window_end + 1;
    window_end = completions_[j];
  }
  if (window_end - window_start + 1 <= 0) {
    throw UserError(fmt::format(
        "SCALE-Sim's CALC bandwidth estimate is undefined for this layer: two prefetch windows "
        "complete in cycle {}; use a larger SRAM",
        window_end));
  }
  out.stop_cycle = window_end + kReadPortLatency;
  return out;
}

UserReadBuffer::UserReadBuffer(int64_t sram_words, int64_t bandwidth_words, int64_t offset,
                               int64_t domain, std::vector<int64_t> prefetch_order, bool distinct)
    : offset_(offset), bandwidth_(bandwidth_words), distinct_(distinct) {
  active_words_ = ceil_div(sram_words, 2);
  prefetch_words_ = sram_words - active_words_;
  fetch_lines_ = ceil_div(static_cast<int64_t>(prefetch_order.size()), bandwidth_);
  const int64_t set_words = ceil_div(sram_words, 100);
  // Set s holds valid elements [s*set_words, (s+1)*set_words) of the prefetch order; the last
  // set holds the remainder and may be empty.
  set_of_position_.assign(prefetch_order.size(), kNoSet);
  int64_t valid = 0;
  for (size_t p = 0; p < prefetch_order.size(); ++p) {
    if (prefetch_order[p] >= 0) set_of_position_[p] = static_cast<uint32_t>(valid++ / set_words);
  }
  num_sets_ = valid / set_words + 1;
  if (!distinct_) {
    // Address -> every set holding it (CSR).
    std::vector<uint32_t> counts(static_cast<size_t>(domain) + 1, 0);
    for (int64_t a : prefetch_order) {
      if (a >= 0) ++counts[static_cast<size_t>(a - offset_)];
    }
    set_begin_.assign(static_cast<size_t>(domain) + 1, 0);
    for (size_t i = 0; i < static_cast<size_t>(domain); ++i)
      set_begin_[i + 1] = set_begin_[i] + counts[i];
    set_ids_.assign(static_cast<size_t>(valid), 0);
    std::vector<uint32_t> fill(set_begin_.begin(), set_begin_.end() - 1);
    for (size_t p = 0; p < prefetch_order.size(); ++p) {
      if (prefetch_order[p] < 0) continue;
      const size_t idx = static_cast<size_t>(prefetch_order[p] - offset_);
      set_ids_[fill[idx]++] = set_of_position_[p];
    }
    order_ = std::move(prefetch_order);
  }
  active_sets_ = std::min(ceil_div(active_words_, set_words), num_sets_);
  prefetch_sets_ = std::min(ceil_div(prefetch_words_, set_words), num_sets_ - active_sets_);
  window_start_ = 0;
  window_end_ = active_sets_;
}

void UserReadBuffer::start(int64_t cycle) {
  started_ = true;
  const int64_t lines = std::min(ceil_div(active_words_, bandwidth_), fetch_lines_);
  dram_.accesses += lines * bandwidth_;
  dram_.start_cycle = cycle - lines;
  last_prefetch_cycle_ = cycle - 1;
}

void UserReadBuffer::new_prefetch() {
  window_start_ = (window_start_ + prefetch_sets_) % num_sets_;
  window_end_ = (window_start_ + active_sets_) % num_sets_;
  const int64_t lines = ceil_div(prefetch_words_, bandwidth_);
  dram_.accesses += lines * bandwidth_;
  // Lines are requested in the cycles after the previous prefetch and answered a cycle later.
  last_prefetch_cycle_ += lines + kReadPortLatency;
}

void UserReadBuffer::check_progress(int guard, int64_t address) const {
  NPUSIM_CHECK(guard <= num_sets_ + 1,
               "USER read buffer: the request at prefetch position {} never enters the active "
               "window ({} sets)",
               address, num_sets_);
}

DramActivity UserReadBuffer::finish() const {
  DramActivity out = dram_;
  out.stop_cycle = last_prefetch_cycle_;
  return out;
}

WriteBuffer::WriteBuffer(int64_t sram_words, int64_t bandwidth_words)
    : active_words_(ceil_div(sram_words, 2)),
      drain_words_(sram_words - ceil_div(sram_words, 2)),
      bandwidth_(bandwidth_words),
      free_words_(sram_words) {
  NPUSIM_CHECK(bandwidth_ > 0 && drain_words_ > 0, "write buffer: {} words, bandwidth {}",
               sram_words, bandwidth_words);
}

void WriteBuffer::store(int64_t words) {
  free_words_ -= words;
  line_fill_ += words;
  lines_ += line_fill_ / bandwidth_;
  line_fill_ %= bandwidth_;
}

void WriteBuffer::flush_partial_line() {
  if (line_fill_ == 0) return;
  partial_lines_.emplace_back(lines_, line_fill_);
  ++lines_;
  line_fill_ = 0;
}

int64_t WriteBuffer::line_valid(int64_t line) {
  while (partial_cursor_ < partial_lines_.size() && partial_lines_[partial_cursor_].first < line)
    ++partial_cursor_;
  if (partial_cursor_ < partial_lines_.size() && partial_lines_[partial_cursor_].first == line)
    return partial_lines_[partial_cursor_].second;
  return bandwidth_;
}

int64_t WriteBuffer::drain(int64_t start_cycle) {
  const int64_t lines = std::min(ceil_div(drain_words_, bandwidth_), lines_ - drain_start_line_);
  NPUSIM_CHECK(lines > 0, "write buffer: drain at cycle {} with nothing to drain", start_cycle);
  const int64_t end_line = drain_start_line_ + lines;
  // SCALE-Sim counts every slot of the drained lines except the padding of the last one, so
  // padding left in earlier partial lines is counted as data (a few extra words per layer).
  const int64_t words = lines * bandwidth_ - (bandwidth_ - line_valid(end_line - 1));
  dram_.accesses += words;
  if (!drained_any_) dram_.start_cycle = start_cycle;
  drained_any_ = true;
  dram_.stop_cycle = start_cycle + lines - 1;
  free_words_ += words;
  drain_start_line_ = end_line;
  return start_cycle + lines - 1;
}

int64_t WriteBuffer::service_row(int64_t cycle, int64_t writes) {
  int64_t current = cycle;
  while (writes > 0) {
    if (current < drain_end_cycle_) {
      // While a drain runs, the array stalls when the buffer becomes full.
      const int64_t chunk = free_words_ > 0 ? std::min(writes, free_words_) : 1;
      store(chunk);
      writes -= chunk;
      if (free_words_ <= 0) current = drain_end_cycle_;
    } else {
      // A drain starts as soon as the buffer holds more than its drain half.
      const int64_t until_trigger = free_words_ - active_words_ + 1;
      const int64_t chunk = until_trigger > 0 ? std::min(writes, until_trigger) : 1;
      store(chunk);
      writes -= chunk;
      if (free_words_ < active_words_) {
        flush_partial_line();
        drain_end_cycle_ = drain(current);
      }
    }
  }
  return current;
}

int64_t WriteBuffer::bulk_rows(int64_t cycle, int64_t writes, int64_t rows) {
  if (writes == 0) return rows;
  int64_t k = 0;
  if (cycle < drain_end_cycle_) {
    // Rows still inside the running drain must leave at least one free word.
    k = std::min({rows, drain_end_cycle_ - cycle, (free_words_ - 1) / writes});
  } else {
    // Rows after it must not bring the occupancy above the drain half.
    k = free_words_ >= active_words_ ? std::min(rows, (free_words_ - active_words_) / writes) : 0;
  }
  k = std::max<int64_t>(k, 0);
  store(k * writes);
  return k;
}

void WriteBuffer::finish(int64_t last_cycle) {
  flush_partial_line();
  int64_t cycle = last_cycle;
  while (drain_start_line_ < lines_) cycle = drain(cycle) + 1;
}

}  // namespace npusim::scalesim
