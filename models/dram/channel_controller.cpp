#include "models/dram/channel_controller.hpp"

#include <algorithm>

#include "support/error.hpp"

namespace npusim::dram {

ChannelController::ChannelController(const MemoryConfig& config)
    : cfg_(config),
      timing_(config.org, config.timing),
      read_capacity_(config.controller.read_queue_entries),
      write_capacity_(config.controller.write_queue_entries),
      closed_page_(config.controller.page_policy == PagePolicy::kClosed),
      refresh_(config.controller.refresh),
      frontend_(config.controller.frontend_latency_cycles),
      read_latency_(config.timing.read_latency()),
      write_latency_(config.timing.write_latency()),
      refresh_due_(size_t(config.org.pseudo_channels)),
      refresh_pending_(size_t(config.org.pseudo_channels), 0),
      first_hit_(size_t(timing_.banks()), -1),
      first_any_(size_t(timing_.banks()), -1) {
  // Staggered so that pseudo-channels do not all refresh in the same cycle.
  const int pcs = config.org.pseudo_channels;
  for (int pc = 0; pc < pcs; ++pc) {
    refresh_due_[size_t(pc)] =
        uint64_t(config.timing.refi) + uint64_t(pc) * uint64_t(config.timing.refi) / uint64_t(pcs);
  }
  reads_.reserve(size_t(read_capacity_));
  writes_.reserve(size_t(write_capacity_));
  touched_.reserve(size_t(timing_.banks()));
}

void ChannelController::add(const DramAddress& a, bool is_write, uint64_t id, uint64_t now) {
  NPUSIM_CHECK(now == now_, "dram channel: request {} added at cycle {} but the channel is at {}",
               id, now, now_);
  NPUSIM_CHECK(will_accept(is_write), "dram channel: request {} added to a full {} queue", id,
               is_write ? "write" : "read");
  Request r{id, now, now + uint64_t(frontend_),
            timing_.flat_bank(a.pseudo_channel, a.bank_group, a.bank), a.row};
  (is_write ? writes_ : reads_).push_back(r);
  cached_valid_ = false;
}

void ChannelController::update_write_mode() {
  const double writes = double(writes_.size());
  if (!write_mode_) {
    if (!writes_.empty() &&
        (writes > cfg_.controller.write_high_watermark * write_capacity_ || reads_.empty())) {
      write_mode_ = true;
    }
  } else if (writes_.empty() ||
             (writes < cfg_.controller.write_low_watermark * write_capacity_ && !reads_.empty())) {
    write_mode_ = false;
  }
}

void ChannelController::consider(Decision& best, const Decision& c) const {
  if (c.cycle < best.cycle ||
      (c.cycle == best.cycle && (c.rank < best.rank || (c.rank == best.rank && c.index < best.index)))) {
    best = c;
  }
}

void ChannelController::collect(Decision& best, bool at_cycle_only, uint64_t cycle) {
  auto offer = [&](Decision c) {
    c.cycle = std::max(c.cycle, now_);
    if (at_cycle_only) {
      if (c.cycle > cycle) return;
      c.cycle = cycle;
    }
    consider(best, c);
  };

  if (refresh_) {
    const uint32_t per_pc = uint32_t(timing_.banks_per_pseudo_channel());
    for (uint32_t pc = 0; pc < refresh_pending_.size(); ++pc) {
      if (refresh_pending_[pc]) {
        const uint32_t first = pc * per_pc;
        if (timing_.open_banks_in_pseudo_channel(pc) > 0) {
          for (uint32_t b = first; b < first + per_pc; ++b) {
            if (!timing_.is_open(b)) continue;
            Decision c;
            c.kind = Kind::kCommand;
            c.cmd = Command::kPre;
            c.bank = b;
            c.row = timing_.open_row(b);
            c.rank = 0;
            c.index = int(b);
            c.cycle = timing_.earliest(Command::kPre, b);
            offer(c);
          }
        } else {
          Decision c;
          c.kind = Kind::kCommand;
          c.cmd = Command::kRefresh;
          c.bank = first;
          c.rank = 0;
          c.index = int(pc);
          c.cycle = timing_.earliest(Command::kRefresh, first);
          offer(c);
        }
      } else if (!at_cycle_only) {
        Decision c;
        c.kind = Kind::kRefreshDue;
        c.pc = pc;
        c.rank = -1;
        c.cycle = refresh_due_[pc];
        offer(c);
      }
    }
  }

  const bool writes = write_mode_;
  const std::vector<Request>& q = writes ? writes_ : reads_;
  if (q.empty()) return;
  const uint32_t per_pc = uint32_t(timing_.banks_per_pseudo_channel());
  for (size_t i = 0; i < q.size(); ++i) {
    const Request& r = q[i];
    if (refresh_ && refresh_pending_[r.bank / per_pc]) continue;
    if (first_any_[r.bank] < 0) {
      first_any_[r.bank] = int(i);
      touched_.push_back(r.bank);
    }
    if (first_hit_[r.bank] < 0 && timing_.is_open(r.bank) && timing_.open_row(r.bank) == r.row) {
      first_hit_[r.bank] = int(i);
    }
  }
  for (uint32_t bank : touched_) {
    Decision c;
    c.kind = Kind::kCommand;
    c.bank = bank;
    c.from_writes = writes;
    if (first_hit_[bank] >= 0) {
      const Request& r = q[size_t(first_hit_[bank])];
      c.cmd = writes ? (closed_page_ ? Command::kWriteAp : Command::kWrite)
                     : (closed_page_ ? Command::kReadAp : Command::kRead);
      c.row = r.row;
      c.rank = 1;
      c.index = first_hit_[bank];
      c.cycle = std::max(timing_.earliest(c.cmd, bank), r.ready);
    } else {
      const Request& r = q[size_t(first_any_[bank])];
      c.cmd = timing_.is_open(bank) ? Command::kPre : Command::kAct;
      c.row = c.cmd == Command::kPre ? timing_.open_row(bank) : r.row;
      c.rank = 2;
      c.index = first_any_[bank];
      c.cycle = std::max(timing_.earliest(c.cmd, bank), r.ready);
    }
    first_hit_[bank] = -1;
    first_any_[bank] = -1;
    offer(c);
  }
  touched_.clear();
}

const ChannelController::Decision& ChannelController::decision() {
  if (!cached_valid_) {
    update_write_mode();
    Decision best;
    collect(best, false, 0);
    cached_ = best;
    cached_valid_ = true;
  }
  return cached_;
}

ChannelController::Decision ChannelController::decide_at(uint64_t cycle) {
  update_write_mode();
  Decision best;
  collect(best, true, cycle);
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

void ChannelController::execute(const Decision& d) {
  const uint64_t t = d.cycle;
  now_ = t;
  cached_valid_ = false;
  if (d.kind == Kind::kRefreshDue) {
    refresh_pending_[d.pc] = 1;
    return;
  }
  track_background(t);
  switch (d.cmd) {
    case Command::kAct:
      timing_.issue(Command::kAct, d.bank, d.row, t);
      ++stats_.acts;
      break;
    case Command::kPre:
      timing_.issue(Command::kPre, d.bank, d.row, t);
      ++stats_.pres;
      break;
    case Command::kRefresh: {
      timing_.issue(Command::kRefresh, d.bank, 0, t);
      ++stats_.refs;
      const uint32_t pc = timing_.pseudo_channel_of(d.bank);
      refresh_pending_[pc] = 0;
      refresh_due_[pc] += uint64_t(cfg_.timing.refi);
      break;
    }
    case Command::kRead:
    case Command::kReadAp:
    case Command::kWrite:
    case Command::kWriteAp: {
      std::vector<Request>& q = d.from_writes ? writes_ : reads_;
      const Request r = q[size_t(d.index)];
      if (timing_.row_accesses(d.bank) > 0) ++stats_.row_hits;
      timing_.issue(d.cmd, d.bank, d.row, t);
      q.erase(q.begin() + d.index);
      if (d.from_writes) {
        ++stats_.writes;
        const uint64_t done = t + uint64_t(write_latency_);
        stats_.write_latency_sum += done - r.arrival;
        write_done_.push_back({r.id, r.arrival, done});
      } else {
        ++stats_.reads;
        const uint64_t done = t + uint64_t(read_latency_);
        const uint64_t latency = done - r.arrival;
        stats_.read_latency_sum += latency;
        if (latency >= stats_.read_latency_histogram.size()) {
          stats_.read_latency_histogram.resize(size_t(latency) * 2 + 64, 0);
        }
        ++stats_.read_latency_histogram[latency];
        read_done_.push_back({r.id, r.arrival, done});
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
    std::deque<Completion>& q =
        (r && (!w || read_done_.front().cycle <= write_done_.front().cycle)) ? read_done_
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
    return (next != kNever || !reads_.empty() || !writes_.empty() || refresh_) ? now_ : kNever;
  }
  return std::min(next, decision().cycle);
}

void ChannelController::advance_to(uint64_t cycle, const Callback& on_complete) {
  NPUSIM_CHECK(cycle >= now_, "dram channel: advance_to({}) is before the current cycle {}", cycle,
               now_);
  if (cfg_.controller.clock_by_clock) {
    for (uint64_t c = now_; c < cycle; ++c) {
      now_ = c;
      for (size_t pc = 0; refresh_ && pc < refresh_pending_.size(); ++pc) {
        if (!refresh_pending_[pc] && refresh_due_[pc] <= c) refresh_pending_[pc] = 1;
      }
      while (true) {
        Decision d = decide_at(c);
        if (d.kind == Kind::kNone) break;
        execute(d);
      }
      deliver(c + 1, on_complete);
    }
  } else {
    while (true) {
      const Decision& d = decision();
      if (d.cycle >= cycle) break;
      const Decision copy = d;
      execute(copy);
    }
    deliver(cycle, on_complete);
  }
  now_ = cycle;
}

}  // namespace npusim::dram
