#include "models/dram/channel_controller.hpp"

#include <algorithm>
#include <bit>

#include "support/error.hpp"

namespace npusim::dram {

namespace {
inline uint64_t bit(uint32_t b) { return uint64_t{1} << b; }
}  // namespace

ChannelController::ChannelController(const MemoryConfig& config)
    : cfg_(config),
      timing_(config.org, config.timing),
      read_capacity_(config.controller.read_queue_entries),
      write_capacity_(config.controller.write_queue_entries),
      closed_page_(config.controller.page_policy == PagePolicy::kClosed),
      refresh_(config.controller.refresh),
      per_bank_refresh_(config.controller.refresh_mode == RefreshMode::kPerBank),
      refresh_interval_(uint64_t(config.refresh_interval())),
      frontend_(config.controller.frontend_latency_cycles),
      read_latency_(config.timing.read_latency()),
      write_latency_(config.timing.write_latency()),
      refresh_due_(size_t(config.org.pseudo_channels)),
      refresh_pending_(size_t(config.org.pseudo_channels), 0),
      refresh_turn_(size_t(config.org.pseudo_channels), 0),
      refreshed_in_round_(size_t(config.org.pseudo_channels), 0),
      last_column_(size_t(timing_.banks()), 0),
      candidate_(size_t(timing_.banks())) {
  NPUSIM_CHECK(timing_.banks() <= kMaxBanksPerChannel, "dram: {} banks per channel (max {})",
               timing_.banks(), kMaxBanksPerChannel);
  for (auto& q : bank_queue_) q.resize(size_t(timing_.banks()));
  const int per_pc = timing_.banks_per_pseudo_channel();
  pc_bank_mask_ = per_pc >= 64 ? ~uint64_t{0} : (uint64_t{1} << per_pc) - 1;
  // Every pseudo-channel falls due at the same time, as Ramulator 2's all-bank refresh does:
  // staggering them would stall an in-order stream once per pseudo-channel instead of once.
  for (auto& due : refresh_due_) due = refresh_interval_;
  earliest_refresh_due_ = refresh_interval_;
  // The watermarks as counts: more than high_writes_ writes is above the high watermark, fewer
  // than low_writes_ below the low one (the same comparisons in doubles, made once).
  const double high = config.controller.write_high_watermark * write_capacity_;
  const double low = config.controller.write_low_watermark * write_capacity_;
  high_writes_ = 0;
  while (high_writes_ <= size_t(write_capacity_) && double(high_writes_ + 1) <= high)
    ++high_writes_;
  low_writes_ = 0;
  while (low_writes_ <= size_t(write_capacity_) && double(low_writes_) < low) ++low_writes_;
}

void ChannelController::add(const DramAddress& a, bool is_write, uint64_t id, uint64_t now) {
  NPUSIM_CHECK(now == now_, "dram channel: request {} added at cycle {} but the channel is at {}",
               id, now, now_);
  NPUSIM_CHECK(will_accept(is_write), "dram channel: request {} added to a full {} queue", id,
               is_write ? "write" : "read");
  const int q = is_write ? 1 : 0;
  const uint32_t b = timing_.flat_bank(a.pseudo_channel, a.bank_group, a.bank);
  FrontErasingVector<Request>& list = bank_queue_[q][b];
  // A candidate picks the bank's first row hit, else its oldest request: a request appended
  // behind others changes it only when it is the first hit of the open row.
  const bool unchanged = (dirty_ & bit(b)) == 0 && !list.empty() &&
                         !(candidate_[b].cmd == Command::kPre && a.row == timing_.open_row(b));
  list.push_back(Request{id, now, now + uint64_t(frontend_), next_seq_++, b, a.row});
  ++queued_[q];
  nonempty_[q] |= bit(b);
  if (!cached_valid_ || cfg_.controller.clock_by_clock) {
    dirty_ |= bit(b);
    return;
  }
  // The request changes at most its own bank's candidate: update the cached decision instead of
  // selecting again, unless that bank held the decision or the read/write mode would flip (the
  // mode is only ever evaluated when deciding, as a clock-by-clock scheduler does).
  if (next_write_mode() != write_mode_) {
    dirty_ |= bit(b);
    cached_valid_ = false;
    return;
  }
  if (q != (write_mode_ ? 1 : 0) || (pending_mask_ & bit(b)) != 0) {
    dirty_ |= bit(b);
    return;
  }
  if (unchanged) return;  // the bank's candidate, hence the decision, stay as they are
  if (cached_.kind == Kind::kCommand && cached_.bank == b) {
    dirty_ |= bit(b);
    cached_valid_ = false;
    return;
  }
  bank_candidate(b, candidate_[b]);
  dirty_ &= ~bit(b);
  const Decision& c = candidate_[b];
  const uint64_t cycle = std::max(c.cycle, now_);
  if (cycle < cached_.cycle ||
      (cycle == cached_.cycle &&
       (c.rank < cached_.rank || (c.rank == cached_.rank && c.seq < cached_.seq)))) {
    cached_ = c;
    cached_.cycle = cycle;
  }
}

bool ChannelController::update_write_mode() {
  const bool before = write_mode_;
  write_mode_ = next_write_mode();
  return before != write_mode_;
}

// Decisions are written field by field where they live (candidate_, cached_) rather than built on
// the stack and copied: a copy read back right after its fields were stored one by one stalls on
// store forwarding, and this runs once per DRAM command.
void ChannelController::bank_candidate(uint32_t b, Decision& c) const {
  const FrontErasingVector<Request>& list = bank_queue_[write_mode_ ? 1 : 0][b];
  c.pos = 0;
  c.pc = 0;
  if (list.empty()) {
    c.cycle = kNever;
    c.rank = 3;
    c.seq = kNever;
    c.kind = Kind::kNone;
    c.cmd = Command::kAct;
    c.bank = 0;
    c.row = 0;
    c.own = 0;
    c.cls = 0;
    return;
  }
  c.kind = Kind::kCommand;
  c.bank = b;
  c.rank = 2;
  const Request* r = &list.front();
  if (timing_.is_open(b)) {
    const uint32_t open = timing_.open_row(b);
    c.cmd = Command::kPre;
    c.row = open;
    for (uint32_t i = 0; i < list.size(); ++i) {
      if (list[i].row == open) {
        r = &list[i];
        c.pos = i;
        c.rank = 1;
        c.cmd = write_mode_ ? (closed_page_ ? Command::kWriteAp : Command::kWrite)
                            : (closed_page_ ? Command::kReadAp : Command::kRead);
        break;
      }
    }
  } else {
    c.cmd = Command::kAct;
    c.row = r->row;
  }
  c.seq = r->seq;
  c.cls = ChannelTiming::timing_class(c.cmd);
  c.own = std::max(timing_.bank_bound(c.cls, b), r->ready);
  c.cycle = std::max(c.own, timing_.shared_bound(c.cls, b));
}

void ChannelController::refresh_candidates(Decision& best, bool due_events) const {
  if (!refresh_) return;
  // Takes the candidate if it wins (Decision::better_than), writing only the fields it sets.
  auto offer = [&best](uint64_t cycle, int rank, uint64_t seq, Kind kind, Command cmd,
                       uint32_t bank, uint32_t row, uint32_t pc) {
    if (cycle > best.cycle) return;
    if (cycle == best.cycle && (rank > best.rank || (rank == best.rank && seq >= best.seq))) return;
    best.cycle = cycle;
    best.rank = rank;
    best.seq = seq;
    best.kind = kind;
    best.cmd = cmd;
    best.bank = bank;
    best.row = row;
    best.pos = 0;
    best.pc = pc;
    best.own = 0;
    best.cls = 0;
  };
  for (uint32_t pc = 0; pc < refresh_pending_.size(); ++pc) {
    if (refresh_pending_[pc]) {
      // The banks the refresh holds: their open rows are precharged first, then REF (REFpb).
      const uint64_t banks = refresh_banks(pc);
      bool open = false;
      for (uint64_t m = banks; m != 0; m &= m - 1) {
        const uint32_t b = uint32_t(std::countr_zero(m));
        if (!timing_.is_open(b)) continue;
        open = true;
        offer(std::max(timing_.earliest(Command::kPre, b), now_), 0, b, Kind::kCommand,
              Command::kPre, b, timing_.open_row(b), 0);
      }
      if (!open) {
        const uint32_t first = uint32_t(std::countr_zero(banks));
        const Command ref = per_bank_refresh_ ? Command::kRefreshBank : Command::kRefresh;
        offer(std::max(timing_.earliest(ref, first), now_), 0, per_bank_refresh_ ? first : pc,
              Kind::kCommand, ref, first, 0, 0);
      }
    } else if (due_events) {
      offer(std::max(refresh_due_[pc], now_), -1, pc, Kind::kRefreshDue, Command::kAct, 0, 0, pc);
    }
  }
}

void ChannelController::select() {
  if (update_write_mode()) dirty_ = ~uint64_t{0};
  const uint64_t active = nonempty_[write_mode_ ? 1 : 0] & ~pending_mask_;
  for (uint64_t m = dirty_ & active; m != 0; m &= m - 1) {
    const uint32_t b = uint32_t(std::countr_zero(m));
    bank_candidate(b, candidate_[b]);
  }
  dirty_ &= ~active;
  // Two passes keep the hot loop free of unpredictable branches: the earliest cycle first, then
  // the tie-break among the (few) banks legal at that cycle.
  uint64_t cycles[kMaxBanksPerChannel];
  uint64_t bank_min = kNever;
  for (uint64_t m = active; m != 0; m &= m - 1) {
    const uint32_t b = uint32_t(std::countr_zero(m));
    const Decision& c = candidate_[b];
    const uint64_t cycle = std::max({c.own, timing_.shared_bound(c.cls, b), now_});
    cycles[b] = cycle;
    bank_min = std::min(bank_min, cycle);
  }
  Decision& best = cached_;
  // Refresh work outranks every request, so it wins at equal cycles. With none pending, the only
  // refresh candidates are the due events, none of them before the earliest due cycle: when that
  // comes after bank_min, they all lose.
  if (refresh_ && (pending_mask_ != 0 || std::max(earliest_refresh_due_, now_) <= bank_min)) {
    best.cycle = kNever;
    best.rank = 3;
    best.seq = kNever;
    best.kind = Kind::kNone;
    refresh_candidates(best, true);
    if (best.kind != Kind::kNone && best.cycle <= bank_min) return;
  }
  if (active == 0) {
    best = Decision();
    return;
  }
  uint32_t winner = kMaxBanksPerChannel;
  for (uint64_t m = active; m != 0; m &= m - 1) {
    const uint32_t b = uint32_t(std::countr_zero(m));
    if (cycles[b] != bank_min) continue;
    const Decision& c = candidate_[b];
    if (winner == kMaxBanksPerChannel || c.rank < candidate_[winner].rank ||
        (c.rank == candidate_[winner].rank && c.seq < candidate_[winner].seq)) {
      winner = b;
    }
  }
  best = candidate_[winner];
  best.cycle = bank_min;
}

ChannelController::Decision ChannelController::decide_at(uint64_t cycle) {
  update_write_mode();
  Decision best;
  refresh_candidates(best, false);
  if (best.cycle > cycle) best = Decision();
  const int q = write_mode_ ? 1 : 0;
  for (uint32_t b = 0; b < uint32_t(timing_.banks()); ++b) {
    if ((pending_mask_ & bit(b)) != 0) continue;
    Decision c;
    bank_candidate(b, c);
    if (c.kind == Kind::kNone) continue;
    const Request& r = bank_queue_[q][b][c.pos];
    if (r.ready > cycle || !timing_.can_issue(c.cmd, b, c.row, cycle)) continue;
    c.cycle = cycle;
    if (c.better_than(best)) best = c;
  }
  if (best.kind != Kind::kNone) best.cycle = cycle;
  return best;
}

void ChannelController::track_background(uint64_t cycle) {
  if (cycle <= background_since_) return;
  (any_open_ ? stats_.active_standby_cycles : stats_.precharge_standby_cycles) +=
      cycle - background_since_;
  background_since_ = cycle;
}

void ChannelController::background_cycles(uint64_t cycle, uint64_t* active,
                                          uint64_t* precharged) const {
  *active = stats_.active_standby_cycles;
  *precharged = stats_.precharge_standby_cycles;
  if (cycle > background_since_) (any_open_ ? *active : *precharged) += cycle - background_since_;
}

uint64_t ChannelController::refresh_banks(uint32_t pc) const {
  const uint32_t first = pc * uint32_t(timing_.banks_per_pseudo_channel());
  return per_bank_refresh_ ? bit(first + refresh_turn_[pc]) : pc_bank_mask_ << first;
}

void ChannelController::set_refresh_pending(uint32_t pc) {
  if (per_bank_refresh_) {
    // As out-of-order per-bank refresh does (K. K. Chang et al., Improving DRAM Performance by
    // Parallelizing Refreshes with Accesses, HPCA 2014): the turn goes to an idle bank.
    const uint32_t per_pc = uint32_t(timing_.banks_per_pseudo_channel());
    // Requests for a bank: in its queues, and those waiting for a queue slot.
    size_t waiting[kMaxBanksPerChannel] = {};
    for (size_t i = 0; i < waiting_.size(); ++i) {
      const DramAddress& a = waiting_[i].address;
      ++waiting[timing_.flat_bank(a.pseudo_channel, a.bank_group, a.bank)];
    }
    // Of the banks without requests, one not served within the last 2 tRFCpb (a bank served
    // that recently is likely back within the refresh: the next rows of a tile, a stream's next
    // burst), of those the one served last (a stream has just left it), then the highest (a
    // stream that has not reached it yet reaches it last when it climbs the banks in order).
    const uint64_t recent = 2 * uint64_t(cfg_.timing.rfc_pb);
    size_t best_queued = ~size_t{0};
    bool best_hot = true;
    uint64_t best_last = 0;
    for (uint32_t j = 0; j < per_pc; ++j) {
      if ((refreshed_in_round_[pc] & bit(j)) != 0) continue;
      const uint32_t b = pc * per_pc + j;
      const size_t queued = bank_queue_[0][b].size() + bank_queue_[1][b].size() + waiting[b];
      const uint64_t last = last_column_[b];
      const bool hot = last > 0 && now_ + 1 < last + recent;
      if (queued < best_queued ||
          (queued == best_queued && (hot < best_hot || (hot == best_hot && last >= best_last)))) {
        best_queued = queued;
        best_hot = hot;
        best_last = last;
        refresh_turn_[pc] = j;
      }
    }
  }
  refresh_pending_[pc] = 1;
  pending_mask_ |= refresh_banks(pc);
}

void ChannelController::execute(const Decision& d) {
  const uint64_t t = d.cycle;
  now_ = t;
  cached_valid_ = false;
  if (d.kind == Kind::kRefreshDue) {
    set_refresh_pending(d.pc);
    return;
  }
  track_background(t);
  dirty_ |= bit(d.bank);
  if (observer_) {
    const bool ref = d.cmd == Command::kRefresh || d.cmd == Command::kRefreshBank;
    observer_(d.cmd, d.bank, ref ? 0 : d.row, t);
  }
  switch (d.cmd) {
    case Command::kAct:
      timing_.issue(Command::kAct, d.bank, d.row, t);
      ++stats_.acts;
      break;
    case Command::kPre:
      timing_.issue(Command::kPre, d.bank, d.row, t);
      ++stats_.pres;
      break;
    case Command::kRefresh:
    case Command::kRefreshBank: {
      timing_.issue(d.cmd, d.bank, 0, t);
      ++stats_.refs;
      const uint32_t pc = timing_.pseudo_channel_of(d.bank);
      refresh_pending_[pc] = 0;
      pending_mask_ &= ~refresh_banks(pc);
      if (per_bank_refresh_) {
        refreshed_in_round_[pc] |= bit(refresh_turn_[pc]);
        if (refreshed_in_round_[pc] == pc_bank_mask_) refreshed_in_round_[pc] = 0;
      }
      refresh_due_[pc] += refresh_interval_;
      earliest_refresh_due_ = *std::min_element(refresh_due_.begin(), refresh_due_.end());
      break;
    }
    case Command::kRead:
    case Command::kReadAp:
    case Command::kWrite:
    case Command::kWriteAp: {
      const bool is_write = d.cmd == Command::kWrite || d.cmd == Command::kWriteAp;
      FrontErasingVector<Request>& list = bank_queue_[is_write ? 1 : 0][d.bank];
      NPUSIM_CHECK(d.pos < list.size() && list[d.pos].seq == d.seq,
                   "dram channel: {} at cycle {} lost its request", command_name(d.cmd), t);
      const Request r = list[d.pos];
      if (timing_.row_accesses(d.bank) > 0) ++stats_.row_hits;
      last_column_[d.bank] = t + 1;
      timing_.issue(d.cmd, d.bank, d.row, t);
      list.erase(d.pos);
      --queued_[is_write ? 1 : 0];
      if (list.empty()) nonempty_[is_write ? 1 : 0] &= ~bit(d.bank);
      if (is_write) {
        ++stats_.writes;
        const uint64_t done = t + uint64_t(write_latency_);
        stats_.write_latency_sum += done - r.arrival;
        write_done_.push_back({r.id, done});
      } else {
        ++stats_.reads;
        const uint64_t done = t + uint64_t(read_latency_);
        const uint64_t latency = done - r.arrival;
        stats_.read_latency_sum += latency;
        if (latency >= stats_.read_latency_histogram.size()) {
          stats_.read_latency_histogram.resize(size_t(latency) * 2 + 64, 0);
        }
        ++stats_.read_latency_histogram[latency];
        read_done_.push_back({r.id, done});
      }
      break;
    }
  }
  any_open_ = timing_.open_banks() > 0;
}

void ChannelController::deliver(uint64_t before, const Callback& on_complete) {
  while (true) {
    const bool r = !read_done_.empty() && read_done_.front().cycle < before;
    const bool w = !write_done_.empty() && write_done_.front().cycle < before;
    if (!r && !w) return;
    RingQueue<Completion>& q = (r && (!w || read_done_.front().cycle <= write_done_.front().cycle))
                                   ? read_done_
                                   : write_done_;
    const Completion c = q.front();
    q.pop_front();
    if (on_complete) on_complete(c.id, c.cycle);
  }
}

uint64_t ChannelController::next_event_cycle() {
  uint64_t next = kNever;
  if (!read_done_.empty()) next = std::min(next, read_done_.front().cycle);
  if (!write_done_.empty()) next = std::min(next, write_done_.front().cycle);
  if (cfg_.controller.clock_by_clock) {
    return (next != kNever || queued_[0] + queued_[1] > 0 || refresh_) ? now_ : kNever;
  }
  return std::min(next, decision().cycle);
}

uint64_t ChannelController::next_completion_bound() {
  if (cfg_.controller.clock_by_clock) return next_event_cycle();
  uint64_t next = kNever;
  if (!read_done_.empty()) next = read_done_.front().cycle;
  if (!write_done_.empty()) next = std::min(next, write_done_.front().cycle);
  if (queued_[0] + queued_[1] > 0) {
    next = std::min(next, decision().cycle + uint64_t(std::min(read_latency_, write_latency_)));
  }
  return next;
}

void ChannelController::admit_waiting(uint64_t cycle) {
  now_ = cycle;
  while (!waiting_.empty() && will_accept(waiting_.front().is_write)) {
    const Waiting& w = waiting_.front();
    add(w.address, w.is_write, w.id, cycle);
    waiting_.pop_front();
    if (waiting_.empty()) drained_at_ = cycle;
  }
}

void ChannelController::advance_to(uint64_t cycle, const Callback& on_complete) {
  NPUSIM_CHECK(cycle >= now_, "dram channel: advance_to({}) is before the current cycle {}", cycle,
               now_);
  // A waiting request enters at the cycle after the column command that freed its slot, once
  // every command of that cycle has issued.
  if (cfg_.controller.clock_by_clock) {
    for (uint64_t c = now_; c < cycle; ++c) {
      now_ = c;
      for (uint32_t pc = 0; refresh_ && pc < refresh_pending_.size(); ++pc) {
        if (!refresh_pending_[pc] && refresh_due_[pc] <= c) set_refresh_pending(pc);
      }
      while (true) {
        const Decision d = decide_at(c);
        if (d.kind == Kind::kNone) break;
        execute(d);
      }
      deliver(c + 1, on_complete);
      if (!waiting_.empty() && will_accept(waiting_.front().is_write)) admit_waiting(c + 1);
    }
  } else {
    uint64_t admit_after = kNever;  // the cycle of a command that freed a slot for a waiting one
    while (true) {
      const Decision& d = decision();
      if (admit_after != kNever && d.cycle > admit_after) {
        admit_waiting(admit_after + 1);
        admit_after = kNever;
        continue;
      }
      if (d.cycle >= cycle) break;
      const uint64_t t = d.cycle;
      execute(d);  // reads the cached decision, which it only marks stale
      if (!waiting_.empty() && will_accept(waiting_.front().is_write)) admit_after = t;
    }
    deliver(cycle, on_complete);
  }
  now_ = cycle;
}

}  // namespace npusim::dram
