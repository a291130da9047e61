// Scheduler behaviour of the channel controller: latencies from the timing formulas, FR-FCFS
// row-hit priority, write draining by watermarks, refresh, page policy, and the proof that the
// event-driven stepping gives the same cycles as a literal clock-by-clock scheduler.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "models/dram/membench.hpp"
#include "support/error.hpp"
#include "tests/dram/dram_test_util.hpp"

namespace npusim::dram {
namespace {

using testing::address;
using testing::preset;
using testing::Recorder;

MemoryConfig quiet(const char* name) {
  MemoryConfig cfg = preset(name);
  cfg.controller.refresh = false;
  return cfg;
}

// One read into an idle memory: latency = front end + (tRP) + (tRCD) + tCL + BL/2.
TEST(DramControllerLatency, IdleReadLatenciesFollowTheTimingFormula) {
  for (const char* name : {"hbm2", "hbm3", "ddr3", "lpddr4"}) {
    MemoryConfig cfg = quiet(name);
    const DramTiming& t = cfg.timing;
    const uint64_t fe = uint64_t(cfg.controller.frontend_latency_cycles);
    Recorder rec(cfg);
    MemorySystem& mem = rec.mem();
    // Closed bank: ACT, then RD after tRCD.
    mem.add_request(address(mem, 0, 0, 5, 0), false, 1);
    rec.run_until_done(1);
    EXPECT_EQ(rec.cycle_of(1), fe + t.rcd_read + t.read_latency()) << name;
    // Row hit (the row stays open: open page).
    mem.advance_to(mem.now() + 1000);
    uint64_t start = mem.now();
    mem.add_request(address(mem, 0, 0, 5, 1), false, 2);
    rec.run_until_done(2);
    EXPECT_EQ(rec.cycle_of(2) - start, fe + t.read_latency()) << name;
    // Row conflict: PRE, ACT, RD.
    mem.advance_to(mem.now() + 1000);
    start = mem.now();
    mem.add_request(address(mem, 0, 0, 6, 0), false, 3);
    rec.run_until_done(3);
    EXPECT_EQ(rec.cycle_of(3) - start, fe + t.rp + t.rcd_read + t.read_latency()) << name;
    // A write completes when its data is in: tCWL + BL/2 after the WR.
    mem.advance_to(mem.now() + 1000);
    start = mem.now();
    mem.add_request(address(mem, 0, 0, 6, 3), true, 4);
    rec.run_until_done(4);
    EXPECT_EQ(rec.cycle_of(4) - start, fe + t.write_latency()) << name;
  }
}

TEST(DramControllerScheduler, RowHitGoesBeforeAnOlderConflict) {
  MemoryConfig cfg = quiet("hbm2");
  const DramTiming& t = cfg.timing;
  Recorder rec(cfg);
  MemorySystem& mem = rec.mem();
  mem.add_request(address(mem, 0, 0, 1, 0), false, 1);  // opens row 1
  rec.run_until_done(1);
  mem.advance_to(mem.now() + 500);
  const uint64_t start = mem.now();
  mem.add_request(address(mem, 0, 0, 2, 0), false, 2);  // older, conflicts with row 1
  mem.add_request(address(mem, 0, 0, 1, 1), false, 3);  // younger, hits row 1
  rec.run_until_done(3);
  const uint64_t fe = uint64_t(cfg.controller.frontend_latency_cycles);
  // The hit reads at once; the PRE for the conflict then waits tRTP after that RD.
  EXPECT_EQ(rec.cycle_of(3), start + fe + t.read_latency());
  EXPECT_EQ(rec.cycle_of(2), start + fe + t.rtp + t.rp + t.rcd_read + t.read_latency());
}

TEST(DramControllerScheduler, OldestFirstAmongEquals) {
  MemoryConfig cfg = quiet("hbm2");
  Recorder rec(cfg);
  MemorySystem& mem = rec.mem();
  // Two closed banks of different bank groups: both ACTs are legal at once, the older goes first.
  mem.add_request(address(mem, 1, 0, 4, 0), false, 1);
  mem.add_request(address(mem, 2, 0, 4, 0), false, 2);
  rec.run_until_done(2);
  EXPECT_LT(rec.cycle_of(1), rec.cycle_of(2));
  EXPECT_EQ(rec.cycle_of(2) - rec.cycle_of(1), uint64_t(cfg.timing.rrd_s));
}

// Completions in cycle order with each one's issue cycle (completion minus the data latency).
struct Issued {
  bool is_write;
  uint64_t cycle;
};
std::vector<Issued> issue_order(const Recorder& rec, const MemoryConfig& cfg,
                                uint64_t first_write_id) {
  std::vector<Issued> out;
  for (const auto& c : rec.done()) {
    const bool w = c.id >= first_write_id;
    out.push_back(
        {w, c.cycle - uint64_t(w ? cfg.timing.write_latency() : cfg.timing.read_latency())});
  }
  std::sort(out.begin(), out.end(),
            [](const Issued& a, const Issued& b) { return a.cycle < b.cycle; });
  return out;
}

TEST(DramControllerScheduler, WritesWaitBelowTheHighWatermark) {
  MemoryConfig cfg = quiet("hbm2");
  const int high = int(cfg.controller.write_high_watermark * cfg.controller.write_queue_entries);
  ASSERT_GT(high, 5);
  Recorder rec(cfg);
  MemorySystem& mem = rec.mem();
  for (uint32_t i = 0; i < 5; ++i) mem.add_request(address(mem, i % 4, 1, 9, i), true, 100 + i);
  for (uint32_t i = 0; i < 5; ++i) mem.add_request(address(mem, i % 4, 0, 3, i), false, i);
  rec.run_until_done(10);
  auto order = issue_order(rec, cfg, 100);
  for (size_t i = 0; i < order.size(); ++i) EXPECT_EQ(order[i].is_write, i >= 5) << i;
}

TEST(DramControllerScheduler, WritesDrainFromHighToLowWatermark) {
  MemoryConfig cfg = quiet("hbm2");
  const int cap = cfg.controller.write_queue_entries;
  const double high = cfg.controller.write_high_watermark * cap;
  const double low = cfg.controller.write_low_watermark * cap;
  const int writes = int(high) + 1;  // just above the high watermark
  // Draining stops once fewer than `low` writes remain.
  const int drained = writes - (int(std::ceil(low)) - 1);
  Recorder rec(cfg);
  MemorySystem& mem = rec.mem();
  for (int i = 0; i < writes; ++i) {
    mem.add_request(address(mem, uint32_t(i) % 4, 1, 9, uint32_t(i) / 4), true, 100 + uint64_t(i));
  }
  for (uint32_t i = 0; i < 5; ++i) mem.add_request(address(mem, i % 4, 0, 3, i), false, i);
  rec.run_until_done(size_t(writes) + 5);
  auto order = issue_order(rec, cfg, 100);
  int before_first_read = 0;
  while (order[size_t(before_first_read)].is_write) ++before_first_read;
  EXPECT_EQ(before_first_read, drained);
}

TEST(DramControllerRefresh, OneRefreshPerIntervalPerPseudoChannel) {
  for (const char* name : {"hbm2", "hbm3"}) {
    MemoryConfig cfg = preset(name);
    Recorder rec(cfg);
    // Idle banks are closed, so each pseudo-channel's REF issues when due, every tREFI.
    const uint64_t cycles = 10 * uint64_t(cfg.timing.refi) + uint64_t(cfg.timing.refi) / 2 + 5;
    rec.mem().advance_to(cycles);
    EXPECT_EQ(rec.mem().stats().refs, 10u * uint64_t(cfg.org.pseudo_channels)) << name;
  }
}

TEST(DramControllerRefresh, RefreshClosesOpenRowsAndDelaysRequests) {
  MemoryConfig cfg = preset("hbm2");
  const DramTiming& t = cfg.timing;
  Recorder rec(cfg);
  MemorySystem& mem = rec.mem();
  mem.add_request(address(mem, 0, 0, 1, 0), false, 1);
  rec.run_until_done(1);
  // Arrive exactly when the refresh falls due: PRE (tRAS long past), REF after tRP, then ACT
  // after tRFC.
  const uint64_t due = uint64_t(t.refi);
  mem.advance_to(due);
  mem.add_request(address(mem, 0, 0, 1, 1), false, 2);
  rec.run_until_done(2);
  EXPECT_EQ(rec.cycle_of(2), due + t.rp + t.rfc + t.rcd_read + t.read_latency());
  EXPECT_EQ(mem.stats().refs, 1u);
}

// Per-bank refresh (hbm2-2400, TPU v4's HBM2): one REFpb every tREFI / banks per
// pseudo-channel, every bank once per round, and a stream never waits for one: the turn goes to a
// bank without queued requests, so sequential reads keep the bandwidth they have without refresh.
TEST(DramControllerRefresh, PerBankRefreshTakesIdleBanksInRounds) {
  MemoryConfig cfg = preset("hbm2-2400");
  ASSERT_EQ(cfg.controller.refresh_mode, RefreshMode::kPerBank);
  const int banks = cfg.org.banks_per_pseudo_channel();
  const uint64_t interval = uint64_t(cfg.refresh_interval());
  EXPECT_EQ(interval, uint64_t(cfg.timing.refi / banks));
  Recorder rec(cfg);
  std::vector<uint32_t> refreshed;
  rec.mem().set_command_observer(0, [&](Command c, uint32_t bank, uint32_t, uint64_t) {
    if (c == Command::kRefreshBank) refreshed.push_back(bank);
    EXPECT_NE(c, Command::kRefresh);
  });
  // Idle banks are closed, so each REFpb issues when due.
  rec.mem().advance_to(3 * uint64_t(banks) * interval + interval / 2);
  ASSERT_EQ(refreshed.size(), 3u * uint64_t(banks) * uint64_t(cfg.org.pseudo_channels));
  for (size_t round = 0; round < 3; ++round) {
    std::vector<uint32_t> r(refreshed.begin() + long(round) * banks,
                            refreshed.begin() + long(round + 1) * banks);
    std::sort(r.begin(), r.end());
    for (int b = 0; b < banks; ++b) EXPECT_EQ(r[size_t(b)], uint32_t(b)) << "round " << round;
  }

  MembenchOptions opt;
  opt.pattern = Pattern::kSeqRead;
  opt.requests = 200000;
  const MembenchResult per_bank = run_membench(cfg, opt);
  MemoryConfig all_bank = cfg;
  all_bank.controller.refresh_mode = RefreshMode::kAllBank;
  const MembenchResult all = run_membench(all_bank, opt);
  const MembenchResult none = run_membench(quiet("hbm2-2400"), opt);
  EXPECT_GT(per_bank.stats.refs, 0u);
  EXPECT_GE(per_bank.stats.bandwidth_gbps, 0.999 * none.stats.bandwidth_gbps);
  // All-bank refresh costs at least tRFC / tREFI of the stream.
  EXPECT_LT(all.stats.bandwidth_gbps,
            none.stats.bandwidth_gbps * (1.0 - double(cfg.timing.rfc) / double(cfg.timing.refi)));
}

TEST(DramControllerPolicy, ClosedPageActivatesForEveryAccess) {
  // Refresh off: a refresh may close a row between a request's ACT and its column command.
  MemoryConfig cfg = quiet("hbm2");
  cfg.controller.page_policy = PagePolicy::kClosed;
  MembenchOptions opt;
  opt.pattern = Pattern::kSeqRead;
  opt.requests = 4096;
  MembenchResult r = run_membench(cfg, opt);
  EXPECT_EQ(r.stats.acts, 4096u);
  EXPECT_EQ(r.stats.row_hits, 0u);
  cfg.controller.page_policy = PagePolicy::kOpen;
  r = run_membench(cfg, opt);
  EXPECT_LT(r.stats.acts, 4096u / 8);
}

// Drives two memories with the same seeded arrivals; returns the completions.
std::vector<testing::Completion> drive(MemoryConfig cfg, bool clock_by_clock, uint64_t seed) {
  cfg.controller.clock_by_clock = clock_by_clock;
  Recorder rec(cfg);
  MemorySystem& mem = rec.mem();
  std::mt19937_64 rng(seed);
  const uint64_t lines = cfg.org.capacity_bytes() / uint64_t(cfg.org.access_bytes());
  const uint64_t total = 1500;
  uint64_t issued = 0, arrival = 0;
  uint64_t addr = 0;
  bool is_write = false;
  bool have = false;
  while (rec.done().size() < total) {
    if (!have && issued < total) {
      // Bursts of sequential and random requests with random gaps, a third of them writes.
      arrival += rng() % 4 == 0 ? rng() % 300 : 0;
      addr =
          (rng() % 2 == 0 ? (addr / uint64_t(cfg.org.access_bytes()) + 1) % lines : rng() % lines) *
          uint64_t(cfg.org.access_bytes());
      is_write = rng() % 3 == 0;
      have = true;
    }
    if (have && arrival <= mem.now() && mem.try_add_request(addr, is_write, issued)) {
      ++issued;
      have = false;
      continue;
    }
    uint64_t next = mem.next_event_cycle();
    if (have && arrival > mem.now()) next = std::min(next, arrival - 1);
    mem.advance_to(next + 1);
    if (mem.now() > 50000000) break;  // bounded
  }
  return rec.done();
}

TEST(DramControllerStepping, EventDrivenEqualsClockByClock) {
  for (const char* name : {"hbm2", "hbm2-2400", "hbm3", "ddr3", "lpddr4"}) {
    MemoryConfig cfg = preset(name);
    cfg.timing.refi = 1500;  // several refreshes within the short run
    cfg.timing.rfc = std::min(cfg.timing.rfc, 300);
    cfg.timing.rfc_pb = std::min(cfg.timing.rfc_pb, 60);  // below tREFI / banks (hbm2-2400: 93)
    const auto fast = drive(cfg, false, 7);
    const auto slow = drive(cfg, true, 7);
    ASSERT_EQ(fast.size(), 1500u) << name;
    ASSERT_EQ(fast.size(), slow.size()) << name;
    for (size_t i = 0; i < fast.size(); ++i) {
      ASSERT_TRUE(fast[i] == slow[i])
          << name << ": completion " << i << ": event-driven id " << fast[i].id << " at "
          << fast[i].cycle << ", clock-by-clock id " << slow[i].id << " at " << slow[i].cycle;
    }
  }
}

TEST(DramControllerApi, FullQueueRefusesAndNextEventIsNeverWhenIdle) {
  MemoryConfig cfg = quiet("hbm2");
  MemorySystem mem(cfg);
  EXPECT_EQ(mem.next_event_cycle(), kNever);
  const uint64_t a = address(mem, 0, 0, 1, 0);
  for (int i = 0; i < cfg.controller.read_queue_entries; ++i) {
    EXPECT_TRUE(mem.try_add_request(a, false, uint64_t(i)));
  }
  EXPECT_FALSE(mem.will_accept(a, false));
  EXPECT_TRUE(mem.will_accept(a, true));
  EXPECT_FALSE(mem.try_add_request(a, false, 99));
  EXPECT_THROW(mem.add_request(a, false, 99), InternalError);
  mem.advance_to(10);
  EXPECT_THROW(mem.advance_to(5), InternalError);  // time only moves forward
}

}  // namespace
}  // namespace npusim::dram
