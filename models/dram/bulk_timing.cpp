#include "models/dram/bulk_timing.hpp"

#include <algorithm>
#include <array>

#include "support/error.hpp"

namespace npusim::dram {

namespace {
// Placed segments a later-sent request may arrive before (see the rule): enough for the queues
// of a few DMA engines sending at once.
constexpr size_t kRecentSegments = 64;

bool same_row(const DramAddress& a, const DramAddress& b) {
  return a.channel == b.channel && a.pseudo_channel == b.pseudo_channel &&
         a.bank_group == b.bank_group && a.bank == b.bank && a.row == b.row;
}
}  // namespace

BulkTiming::BulkTiming(MemoryConfig config, uint64_t core_period_ps, uint64_t memory_period_ps,
                       int window)
    : cfg_(std::move(config)),
      mapper_(cfg_.org, cfg_.controller.address_mapping),
      core_ps_(core_period_ps),
      mem_ps_(memory_period_ps),
      window_(window > 0 ? uint64_t(window) : 0),
      burst_bytes_(uint64_t(cfg_.org.access_bytes())),
      pcs_per_channel_(cfg_.org.pseudo_channels),
      banks_per_pc_(cfg_.org.banks_per_pseudo_channel()),
      bank_groups_(cfg_.org.bank_groups) {
  NPUSIM_CHECK(core_ps_ > 0 && mem_ps_ > 0, "bulk dram: clock periods {} ps and {} ps", core_ps_,
               mem_ps_);
  const DramTiming& t = cfg_.timing;
  step_l_ = uint64_t(t.read_to_read_l());
  step_s_ = uint64_t(t.read_to_read_s());
  rl_ = uint64_t(t.read_latency());
  wl_ = uint64_t(t.write_latency());
  rcd_r_ = uint64_t(t.rcd_read);
  rcd_w_ = uint64_t(t.rcd_write);
  rp_ = uint64_t(t.rp);
  ras_ = uint64_t(t.ras);
  rc_ = uint64_t(t.rc);
  rtp_ = uint64_t(t.rtp);
  wtp_ = uint64_t(t.write_to_precharge());
  rrd_s_ = uint64_t(t.rrd_s);
  rrd_l_ = uint64_t(t.rrd_l);
  faw_ = uint64_t(t.faw);
  rfc_ = uint64_t(t.rfc);
  refi_ = uint64_t(std::max(t.refi, 1));
  rtw_ = uint64_t(t.read_to_write());
  wtr_ = uint64_t(t.write_to_read_s());
  frontend_ = uint64_t(cfg_.controller.frontend_latency_cycles);
  refresh_ = cfg_.controller.refresh && cfg_.controller.refresh_mode == RefreshMode::kAllBank;
  if (cfg_.controller.refresh && !refresh_) per_bank_interval_ = uint64_t(cfg_.refresh_interval());
  act_bus_halves_ = t.dual_command_bus ? 0 : uint64_t(std::max(t.act_command_cycles - 1, 0));
  pre_bus_halves_ = t.dual_command_bus ? 0 : uint64_t(std::max(t.row_command_cycles - 1, 0));
  const size_t channels = size_t(cfg_.org.channels);
  const size_t pcs = channels * size_t(pcs_per_channel_);
  banks_.resize(pcs * size_t(banks_per_pc_));
  pcs_.resize(pcs);
  for (Pc& p : pcs_) p.next_due = refresh_ ? refi_ : kNever;
  group_act_.assign(pcs * size_t(bank_groups_), 0);
  channels_.resize(channels);
  channel_bursts_.assign(channels, 0);
  // Runs of bursts within a row are found in one step when the column is the lowest field.
  column_lowest_ = true;
  for (int k = 0; k < cfg_.org.columns && column_lowest_; ++k) {
    const DramAddress a = mapper_.map(uint64_t(k) * burst_bytes_);
    column_lowest_ = a.column == uint32_t(k) && a.channel == 0 && a.pseudo_channel == 0 &&
                     a.bank_group == 0 && a.bank == 0 && a.row == 0;
  }
}

uint64_t BulkTiming::access(int initiator, uint64_t addr, uint64_t len, bool is_write,
                            uint64_t arrival) {
  NPUSIM_CHECK(len > 0 && initiator >= 0, "bulk dram: request of {} bytes from initiator {}", len,
               initiator);
  if (size_t(initiator) >= initiators_.size()) initiators_.resize(size_t(initiator) + 1);
  const uint64_t b = burst_bytes_;
  const uint64_t first = addr / b * b;
  const uint64_t bursts = (addr + len - first + b - 1) / b;
  const uint64_t ready = entry_memory_cycle(arrival) + frontend_;
  uint64_t done = 0;
  for (uint64_t i = 0; i < bursts;) {
    const uint64_t a = first + i * b;
    const DramAddress d = mapper_.map(a);
    uint64_t n = 1;
    if (column_lowest_) {
      n = std::min<uint64_t>(bursts - i, uint64_t(cfg_.org.columns) - d.column);
      if (n > 1) {
        const DramAddress e = mapper_.map(a + (n - 1) * b);
        if (!same_row(d, e) || e.column != d.column + n - 1) n = 1;
      }
    }
    if (n == 1) {  // burst by burst, for a mapping that puts other fields below the column
      while (i + n < bursts && same_row(d, mapper_.map(a + n * b))) ++n;
    }
    done = std::max(done, place(initiator, d, n, is_write, ready));
    i += n;
  }
  last_cycle_ = std::max(last_cycle_, done);
  return std::max(seen_core_cycle(done), arrival + 1);
}

void BulkTiming::add_completion(Initiator& init, uint64_t cycle) const {
  if (cycle < init.cursor) {  // already behind the cursor: counted at once
    ++init.counted;
    return;
  }
  if (init.completions.empty()) init.completions.assign(1u << 12, 0);
  if (cycle - init.cursor >= init.completions.size()) {  // beyond the ring: grow it
    size_t size = init.completions.size();
    while (cycle - init.cursor >= size) size *= 2;
    std::vector<uint32_t> grown(size, 0);
    const size_t old = init.completions.size();
    for (uint64_t t = init.cursor; t < init.cursor + old; ++t) {
      grown[t & (size - 1)] = init.completions[t & (old - 1)];
    }
    init.completions.swap(grown);
  }
  ++init.completions[cycle & (init.completions.size() - 1)];
}

uint64_t BulkTiming::completed_by(Initiator& init, uint64_t count) const {
  NPUSIM_CHECK(count <= init.next, "bulk dram: waiting for {} completions of {} bursts", count,
               init.next);
  const uint64_t mask = init.completions.size() - 1;
  while (init.counted < count) {
    uint32_t& here = init.completions[init.cursor & mask];
    init.counted += here;
    here = 0;
    ++init.cursor;
  }
  return init.cursor - 1;
}

uint64_t BulkTiming::window_bound(Initiator& init, uint64_t n, uint64_t step) const {
  const uint64_t k0 = init.next;
  if (window_ == 0 || k0 < window_) return 0;
  // The DMA sends burst k in the core cycle it sees the (k - W + 1)-th completion.
  auto sent = [&](uint64_t e) { return entry_memory_cycle(seen_core_cycle(e)) + frontend_; };
  uint64_t bound = sent(completed_by(init, k0 - window_ + 1));
  if (n > 1) {
    const uint64_t last = sent(completed_by(init, k0 + n - window_));
    if (last > (n - 1) * step) bound = std::max(bound, last - (n - 1) * step);
  }
  return bound;
}

uint64_t BulkTiming::first_fit(const Pc& p, uint64_t from, uint64_t cycles) {
  std::array<std::pair<uint64_t, uint64_t>, kRecentSegments> busy;
  size_t n = 0;
  for (const Placed& x : p.recent) {
    if (x.bus_end > from) busy[n++] = {x.bus_start, x.bus_end};
  }
  std::sort(busy.begin(), busy.begin() + std::ptrdiff_t(n));
  uint64_t t = from;
  // Before the oldest segment remembered, the bus may have been busy with forgotten ones.
  if (p.recent.size() == kRecentSegments) t = std::max(t, p.recent.front().bus_start);
  for (size_t i = 0; i < n && busy[i].first < t + cycles; ++i) t = std::max(t, busy[i].second);
  return t;
}

void BulkTiming::open_bank(uint32_t channel, Bank& b, uint64_t act_cycle) {
  b.open = true;
  Channel& c = channels_[channel];
  if (c.open_banks++ == 0) c.open_since = act_cycle;
}

void BulkTiming::close_pc_banks(uint32_t pc_index, uint64_t pre_cycle) {
  Pc& p = pcs_[pc_index];
  Channel& c = channels_[pc_index / uint32_t(pcs_per_channel_)];
  const size_t first = size_t(pc_index) * size_t(banks_per_pc_);
  for (size_t i = first; i < first + size_t(banks_per_pc_); ++i) {
    if (!banks_[i].open) continue;
    banks_[i].open = false;
    --p.open_banks;
    if (--c.open_banks == 0 && pre_cycle > c.open_since)
      c.active_cycles += pre_cycle - c.open_since;
  }
}

void BulkTiming::refresh_until(uint32_t pc_index, uint64_t cycle) {
  Pc& p = pcs_[pc_index];
  while (p.next_due <= cycle) {
    const uint64_t due = p.next_due;
    uint64_t ref = due;
    if (p.open_banks > 0) {
      uint64_t pre = std::max(due, p.last_act + ras_);
      if (p.read_seen) pre = std::max(pre, p.last_read + rtp_);
      if (p.write_seen) pre = std::max(pre, p.last_write + wtp_);
      pres_ += uint64_t(p.open_banks);
      close_pc_banks(pc_index, pre);
      ref = pre + rp_;
    }
    ref = std::max(ref, p.act_ok);
    p.act_ok = ref + rfc_;
    ++p.refs;
    p.next_due += refi_;
  }
}

uint64_t BulkTiming::place(int initiator, const DramAddress& d, uint64_t n, bool is_write,
                           uint64_t ready) {
  const uint32_t pci = d.channel * uint32_t(pcs_per_channel_) + d.pseudo_channel;
  Pc& p = pcs_[pci];
  const uint32_t per_group = uint32_t(banks_per_pc_ / bank_groups_);
  Bank& bk = banks_[size_t(pci) * size_t(banks_per_pc_) + d.bank_group * per_group + d.bank];
  uint64_t& group_act = group_act_[size_t(pci) * size_t(bank_groups_) + d.bank_group];
  Initiator& init = initiators_[size_t(initiator)];
  const uint64_t entry = ready - frontend_;
  const uint64_t rcd = is_write ? rcd_w_ : rcd_r_;
  const uint64_t latency = is_write ? wl_ : rl_;
  uint64_t last_done = 0;
  while (n > 0) {
    // At most a window of bursts at once: the later ones wait for the first ones' completions.
    const uint64_t piece = window_ > 0 ? std::min(n, window_) : n;
    const uint64_t r = std::max(ready, window_bound(init, piece, step_l_));
    // In order of arrival: behind every segment placed so far, unless some placed segment
    // arrived after this one (another initiator sent it earlier); then in the first gap of the
    // bus those segments left (below).
    const bool jumped = r < p.max_ready;
    uint64_t col = jumped ? r : std::max(r, p.bus_free);
    if (!jumped) {
      if (is_write && p.read_seen && p.last_read + rtw_ > col) col = p.last_read + rtw_;
      if (!is_write && p.write_seen && p.last_write + wtr_ > col) col = p.last_write + wtr_;
    }
    if (refresh_) refresh_until(pci, col);
    const bool hit = bk.open && bk.row == d.row;
    if (!hit) {
      uint64_t act = r;
      const bool conflict = bk.open;
      // A segment placed before later-placed ones sees the bank as they leave it (its row may
      // be another), but not their cycles, which lie after its own.
      if (conflict) {  // PRE, then ACT
        uint64_t pre = jumped ? r : std::max(r, bk.act + ras_);
        if (bk.read_seen && !jumped) pre = std::max(pre, bk.last_read + rtp_);
        if (bk.write_seen && !jumped) pre = std::max(pre, bk.last_write + wtp_);
        ++pres_;
        bk.open = false;
        --p.open_banks;
        Channel& c = channels_[d.channel];
        if (--c.open_banks == 0 && pre > c.open_since) c.active_cycles += pre - c.open_since;
        act = pre + rp_;
      }
      if (!jumped) {
        if (bk.activated) act = std::max(act, bk.act + rc_);
        act = std::max({act, p.act_ok, p.any_act ? p.last_act + rrd_s_ : 0,
                        faw_ > 0 ? p.faw[p.faw_pos] : 0, group_act});
      }
      if (refresh_ && act >= p.next_due) {
        refresh_until(pci, act);
        act = std::max(act, p.act_ok);
      }
      open_bank(d.channel, bk, act);
      ++p.open_banks;
      bk.row = d.row;
      bk.act = std::max(bk.act, act);
      bk.activated = true;
      if (!jumped) {
        p.last_act = act;
        p.any_act = true;
        if (faw_ > 0) {
          p.faw[p.faw_pos] = act + faw_;
          p.faw_pos = (p.faw_pos + 1) & 3;
        }
        group_act = act + rrd_l_;
      }
      ++acts_;
      col = std::max(col, act + rcd);
      if (act_bus_halves_ > 0 && p.bus_free > act) {  // the ACT fits between streaming columns
        p.act_bus_loss += act_bus_halves_ + (conflict ? pre_bus_halves_ : 0);
        col += p.act_bus_loss / 2;
        p.act_bus_loss %= 2;
      }
    } else if (!jumped) {
      col = std::max(col, bk.act + rcd);
    }
    // The columns before the next refresh falls due; the rest after it.
    uint64_t k = piece;
    if (refresh_ && col + (k - 1) * step_l_ >= p.next_due) {
      if (col >= p.next_due) {
        refresh_until(pci, col);
        continue;  // its row was closed: place it again
      }
      k = (p.next_due - col + step_l_ - 1) / step_l_;
    }
    if (jumped) col = first_fit(p, col, (k - 1) * step_l_ + step_s_);
    const uint64_t last_col = col + (k - 1) * step_l_;
    const uint64_t done = last_col + latency;
    if (is_write) {
      writes_ += k;
      write_latency_sum_ += k * (col + latency - entry) + step_l_ * k * (k - 1) / 2;
      bk.last_write = last_col;
      bk.write_seen = true;
      if (!p.write_seen || last_col > p.last_write) p.last_write = last_col;
      p.write_seen = true;
    } else {
      reads_ += k;
      for (uint64_t j = 0; j < k; ++j) {
        const uint64_t lat = col + j * step_l_ + latency - entry;
        read_latency_sum_ += lat;
        if (lat >= read_latency_histogram_.size()) {
          read_latency_histogram_.resize(size_t(lat) * 2 + 64, 0);
        }
        ++read_latency_histogram_[lat];
      }
      bk.last_read = last_col;
      bk.read_seen = true;
      if (!p.read_seen || last_col > p.last_read) p.last_read = last_col;
      p.read_seen = true;
    }
    row_hits_ += hit ? k : k - 1;
    const uint64_t bus_end = last_col + step_s_;
    p.bus_free = std::max(p.bus_free, bus_end);
    p.recent.push_back({r, col, bus_end});
    p.max_ready = std::max(p.max_ready, r);
    if (p.recent.size() > kRecentSegments) p.recent.pop_front();
    if (window_ > 0) {
      for (uint64_t j = 0; j < k; ++j) add_completion(init, col + j * step_l_ + latency);
    }
    init.next += k;
    channel_bursts_[d.channel] += k;
    if (observer_) observer_(d.channel, k * burst_bytes_, seen_core_cycle(done));
    last_done = std::max(last_done, done);
    n -= k;
  }
  return last_done;
}

MemoryStats BulkTiming::stats(uint64_t end) const {
  MemoryStats s;
  s.cycles = end;
  s.reads = reads_;
  s.writes = writes_;
  s.acts = acts_;
  s.pres = pres_;
  s.row_hits = row_hits_;
  // Refreshes every tREFI of the run, also those no request has reached yet.
  for (const Pc& p : pcs_) {
    s.refs += p.refs;
    if (refresh_ && p.next_due < end) s.refs += (end - 1 - p.next_due) / refi_ + 1;
    if (per_bank_interval_ > 0 && end > 0) s.refs += (end - 1) / per_bank_interval_;
  }
  // Background: a channel is active from the ACT that opens its first bank to the PRE that
  // closes its last; its open banks close at the next refresh due.
  uint64_t active = 0;
  for (size_t ch = 0; ch < channels_.size(); ++ch) {
    const Channel& c = channels_[ch];
    active += c.active_cycles;
    if (c.open_banks > 0) {
      uint64_t close = end;
      for (int pc = 0; pc < pcs_per_channel_; ++pc) {
        const Pc& p = pcs_[ch * size_t(pcs_per_channel_) + size_t(pc)];
        if (p.open_banks > 0) close = std::min(close, std::max(p.next_due, c.open_since));
      }
      if (close > c.open_since) active += close - c.open_since;
    }
  }
  const uint64_t all = end * uint64_t(channels_.size());
  active = std::min(active, all);
  const uint64_t precharged = all - active;
  derive_memory_figures(s, cfg_, read_latency_sum_, write_latency_sum_, read_latency_histogram_,
                        active, precharged);
  return s;
}

}  // namespace npusim::dram
