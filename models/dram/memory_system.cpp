#include "models/dram/memory_system.hpp"

#include <algorithm>

#include "support/error.hpp"

namespace npusim::dram {

MemorySystem::MemorySystem(MemoryConfig config, Callback on_complete)
    : cfg_(std::move(config)),
      mapper_(cfg_.org, cfg_.controller.address_mapping),
      on_complete_(std::move(on_complete)) {
  for (int c = 0; c < cfg_.org.channels; ++c) {
    channels_.push_back(std::make_unique<ChannelController>(cfg_));
  }
  next_.assign(channels_.size(), kUnknown);
  bound_.assign(channels_.size(), kUnknown);
}

void MemorySystem::add_request(uint64_t addr, bool is_write, uint64_t id) {
  const DramAddress a = mapper_.map(addr);
  enqueue(a.channel, a, is_write, id);
}

uint64_t MemorySystem::next_event_cycle() {
  uint64_t next = kNever;
  for (size_t ch = 0; ch < channels_.size(); ++ch) next = std::min(next, channel_next(ch));
  return next;
}

uint64_t MemorySystem::next_completion_bound() {
  uint64_t next = kNever;
  for (size_t ch = 0; ch < channels_.size(); ++ch) {
    if (bound_[ch] == kUnknown) bound_[ch] = channels_[ch]->next_completion_bound();
    next = std::min(next, bound_[ch]);
  }
  return next;
}

void MemorySystem::advance_to(uint64_t cycle) {
  NPUSIM_CHECK(cycle >= now_, "dram: advance_to({}) is before the current cycle {}", cycle, now_);
  const bool waited = waiting_ > 0;
  uint64_t drained = 0;
  for (size_t ch = 0; ch < channels_.size(); ++ch) {
    if (channel_next(ch) >= cycle) continue;  // nothing happens there before `cycle`
    ChannelController& c = *channels_[ch];
    const size_t before = c.waiting();
    c.advance_to(cycle, on_complete_);
    next_[ch] = kUnknown;
    bound_[ch] = kUnknown;
    if (before > 0) {
      waiting_ -= before - c.waiting();
      if (c.waiting() == 0) drained = std::max(drained, c.waiting_drained_at());
    }
  }
  waiting_ended_at_ = !waited ? 0 : waiting_ > 0 ? kNever : drained;
  now_ = cycle;
}

size_t MemorySystem::outstanding() const {
  size_t n = 0;
  for (const auto& ch : channels_) n += ch->outstanding();
  return n;
}

void derive_memory_figures(MemoryStats& s, const MemoryConfig& config, uint64_t read_latency_sum,
                           uint64_t write_latency_sum,
                           const std::vector<uint64_t>& read_latency_histogram,
                           uint64_t active_cycles, uint64_t precharged_cycles) {
  const uint64_t columns = s.reads + s.writes;
  s.bytes = columns * uint64_t(config.org.access_bytes());
  if (s.reads > 0) {
    s.avg_read_latency_cycles = double(read_latency_sum) / double(s.reads);
    // Nearest-rank percentiles of the exact histogram.
    auto percentile = [&](double p) {
      const uint64_t rank = std::max<uint64_t>(uint64_t(p * double(s.reads) + 0.999999), 1);
      uint64_t seen = 0;
      for (size_t i = 0; i < read_latency_histogram.size(); ++i) {
        seen += read_latency_histogram[i];
        if (seen >= rank) return uint64_t(i);
      }
      return uint64_t(read_latency_histogram.size());
    };
    s.p50_read_latency_cycles = percentile(0.50);
    s.p99_read_latency_cycles = percentile(0.99);
    s.max_read_latency_cycles = percentile(1.0);
  }
  if (s.writes > 0) s.avg_write_latency_cycles = double(write_latency_sum) / double(s.writes);
  if (columns > 0) s.row_hit_rate = double(s.row_hits) / double(columns);
  const double seconds_ns = double(s.cycles) * config.timing.tck_ns;
  if (s.cycles > 0) s.bandwidth_gbps = double(s.bytes) / seconds_ns;
  const DramEnergy& e = config.energy;
  s.act_energy_pj = double(s.acts) * e.act_pj;
  s.read_energy_pj = double(s.reads) * e.read_pj;
  s.write_energy_pj = double(s.writes) * e.write_pj;
  s.refresh_energy_pj = double(s.refs) * e.refresh_pj;
  s.background_energy_pj = double(active_cycles) * e.active_standby_pj +
                           double(precharged_cycles) * e.precharge_standby_pj;
  s.total_energy_pj = s.act_energy_pj + s.read_energy_pj + s.write_energy_pj + s.refresh_energy_pj +
                      s.background_energy_pj;
  if (s.bytes > 0) s.energy_pj_per_bit = s.total_energy_pj / (8.0 * double(s.bytes));
  if (s.cycles > 0) s.average_power_mw = s.total_energy_pj / seconds_ns;
}

MemoryStats MemorySystem::stats() const {
  MemoryStats s;
  s.cycles = now_;
  std::vector<uint64_t> histogram;
  uint64_t read_latency_sum = 0, write_latency_sum = 0;
  uint64_t active = 0, precharged = 0;
  for (const auto& chp : channels_) {
    const ChannelStats& c = chp->stats();
    uint64_t a = 0, p = 0;
    chp->background_cycles(now_, &a, &p);
    active += a;
    precharged += p;
    s.reads += c.reads;
    s.writes += c.writes;
    s.acts += c.acts;
    s.pres += c.pres;
    s.refs += c.refs;
    s.row_hits += c.row_hits;
    read_latency_sum += c.read_latency_sum;
    write_latency_sum += c.write_latency_sum;
    if (histogram.size() < c.read_latency_histogram.size()) {
      histogram.resize(c.read_latency_histogram.size(), 0);
    }
    for (size_t i = 0; i < c.read_latency_histogram.size(); ++i) {
      histogram[i] += c.read_latency_histogram[i];
    }
  }
  derive_memory_figures(s, cfg_, read_latency_sum, write_latency_sum, histogram, active,
                        precharged);
  return s;
}

}  // namespace npusim::dram
