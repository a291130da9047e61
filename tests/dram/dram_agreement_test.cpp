// Agreement of one hbm2 channel with DRAMsim3, the reference this model follows (a legacy
// 128-bit channel with 64-byte accesses). Reference figures are copied from
// /work/shared/DRAM_REFERENCE.md, table 4.1 "One channel" (DRAMsim3 columns) and table 4.3
// "The bounds the numbers land on". Tier 1 (timing-only figures) must agree within 3 %, tier 2
// (scheduler- and queue-dependent) within 30 %.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "models/dram/membench.hpp"
#include "support/error.hpp"
#include "tests/dram/dram_test_util.hpp"

namespace npusim::dram {
namespace {

using testing::preset;

MembenchResult run(Pattern p, uint64_t requests, int channels = 1) {
  MembenchOptions opt;
  opt.pattern = p;
  opt.requests = requests;
  return run_membench(preset("hbm2", channels), opt);
}

void expect_within(double ours, double reference, double tolerance, const char* what) {
  EXPECT_NEAR(ours, reference, tolerance * reference)
      << what << ": ours " << ours << ", DRAMsim3 " << reference;
}

constexpr double kTier1 = 0.03;
constexpr double kTier2 = 0.30;

TEST(DramAgreement, StreamingReadTier1) {
  MembenchResult r = run(Pattern::kSeqRead, 300000);
  // Table 4.1 seq_read: 29.41 GB/s, row hit 0.967, 1.97 pJ/bit.
  expect_within(r.stats.bandwidth_gbps, 29.41, kTier1, "seq_read GB/s");
  expect_within(r.stats.row_hit_rate, 0.967, kTier1, "seq_read row hit rate");
  expect_within(r.stats.energy_pj_per_bit, 1.97, kTier1, "seq_read pJ/bit");
  // ACTs per request = 1 - row hit rate of the reference.
  expect_within(double(r.stats.acts) / double(r.requests), 1 - 0.967, kTier1,
                "seq_read ACT per request");
  // One all-bank REF per tREFI (3900 cycles) per channel.
  EXPECT_NEAR(double(r.stats.refs), double(r.stats.cycles) / 3900.0, 1.0);
}

TEST(DramAgreement, StreamingWriteTier1) {
  MembenchResult r = run(Pattern::kSeqWrite, 300000);
  // Table 4.1 seq_write: 29.41 GB/s, row hit 0.967, 2.48 pJ/bit.
  expect_within(r.stats.bandwidth_gbps, 29.41, kTier1, "seq_write GB/s");
  expect_within(r.stats.row_hit_rate, 0.967, kTier1, "seq_write row hit rate");
  expect_within(r.stats.energy_pj_per_bit, 2.48, kTier1, "seq_write pJ/bit");
}

TEST(DramAgreement, RandomAndRowStrideAreFawBoundTier1) {
  MembenchResult r = run(Pattern::kRandomRead, 200000);
  // Table 4.1 rand_read: 7.86 GB/s, row hit 0.000, 4.47 pJ/bit; one ACT per request.
  expect_within(r.stats.bandwidth_gbps, 7.86, kTier1, "rand_read GB/s");
  EXPECT_LT(r.stats.row_hit_rate, 0.01);
  expect_within(r.stats.energy_pj_per_bit, 4.47, kTier1, "rand_read pJ/bit");
  expect_within(double(r.stats.acts) / double(r.requests), 1.0, kTier1, "rand_read ACT/request");
  MembenchResult s = run(Pattern::kStrideRow, 200000);
  // Table 4.1 stride = row: 7.85 GB/s, row hit 0.000.
  expect_within(s.stats.bandwidth_gbps, 7.85, kTier1, "stride GB/s");
  EXPECT_LT(s.stats.row_hit_rate, 0.01);
}

TEST(DramAgreement, IdleLatenciesTier1) {
  MembenchResult r = run(Pattern::kIdleRandomRead, 20000);
  // Table 4.1 idle rand_read: avg / p50 / p99 = 51.0 / 31 / 316; table 4.3 closed bank = 31.
  EXPECT_EQ(r.stats.p50_read_latency_cycles, 31u);
  expect_within(r.stats.avg_read_latency_cycles, 51.0, kTier1, "idle rand avg latency");
  expect_within(double(r.stats.p99_read_latency_cycles), 316, kTier1, "idle rand p99 latency");
  MembenchResult s = run(Pattern::kIdleSeqRead, 20000);
  // Table 4.1 idle seq_read: 31.8 / 17 / 304, row hit 0.919; table 4.3 row hit = 17.
  EXPECT_EQ(s.stats.p50_read_latency_cycles, 17u);
  expect_within(s.stats.avg_read_latency_cycles, 31.8, kTier1, "idle seq avg latency");
  expect_within(double(s.stats.p99_read_latency_cycles), 304, kTier1, "idle seq p99 latency");
  expect_within(s.stats.row_hit_rate, 0.919, kTier1, "idle seq row hit rate");
  // Table 4.3 idle row conflict = tRP + tRCD + CL + BL/2 + 1 = 45 (Ramulator's probe: 44.9).
  MemoryConfig cfg = preset("hbm2");
  cfg.controller.refresh = false;
  testing::Recorder rec(cfg);
  MemorySystem& mem = rec.mem();
  mem.add_request(testing::address(mem, 0, 0, 1), false, 1);
  rec.run_until_done(1);
  mem.advance_to(1000);
  mem.add_request(testing::address(mem, 0, 0, 2), false, 2);
  rec.run_until_done(2);
  expect_within(double(rec.cycle_of(2) - 1000), 45.0, kTier1, "idle conflict latency");
}

TEST(DramAgreement, MixedPatternsTier2) {
  // Table 4.1 rand_mix21 7.83 GB/s and seq_mix21 19.53 GB/s depend on the write-drain policy.
  expect_within(run(Pattern::kMix2r1w, 150000).stats.bandwidth_gbps, 7.83, kTier2, "rand_mix21");
  expect_within(run(Pattern::kSeqMix2r1w, 150000).stats.bandwidth_gbps, 19.53, kTier2, "seq_mix21");
}

TEST(DramAgreement, LoadedLatencyFollowsLittlesLaw) {
  // Loaded latency is set by the queues (DRAM_REFERENCE 4.3): requests in the controller =
  // throughput x latency = the 32-entry read queue plus the reads already issued.
  MemoryConfig cfg = preset("hbm2");
  MembenchResult r = run(Pattern::kRandomRead, 100000);
  const double per_cycle = double(r.stats.reads) / double(r.stats.cycles);
  const double in_controller = per_cycle * r.stats.avg_read_latency_cycles;
  EXPECT_GE(in_controller, double(cfg.controller.read_queue_entries));
  EXPECT_LE(in_controller, double(cfg.controller.read_queue_entries + cfg.timing.read_latency()));
}

TEST(DramAgreement, EightChannelsAreEightTimesOne) {
  for (Pattern p : {Pattern::kSeqRead, Pattern::kRandomRead}) {
    const double one = run(p, 100000).stats.bandwidth_gbps;
    const double eight = run(p, 800000, 8).stats.bandwidth_gbps;
    EXPECT_NEAR(eight / one, 8.0, 8.0 * 0.02) << pattern_name(p);
  }
}

TEST(DramAgreement, TraceReplayEqualsThePattern) {
  // Both gen_trace.py formats, written here for seq_read with 64-byte requests.
  const std::string dir = ::testing::TempDir();
  const std::string ds3 = dir + "/dram_seq_read_dramsim3.trace";
  const std::string ram = dir + "/dram_seq_read_ramulator.trace";
  {
    std::ofstream a(ds3), b(ram);
    for (int i = 0; i < 20000; ++i) {
      char line[64];
      std::snprintf(line, sizeof line, "0x%x READ 0\n", i * 64);
      a << line;
      std::snprintf(line, sizeof line, "LD 0x%x\n", i * 64);
      b << line;
    }
  }
  MembenchResult pattern = run(Pattern::kSeqRead, 20000);
  for (const std::string& file : {ds3, ram}) {
    MembenchOptions opt;
    opt.pattern = Pattern::kTrace;
    opt.trace_file = file;
    MembenchResult t = run_membench(preset("hbm2"), opt);
    EXPECT_EQ(t.requests, 20000u);
    EXPECT_EQ(t.stats.cycles, pattern.stats.cycles) << file;
    EXPECT_EQ(t.stats.acts, pattern.stats.acts) << file;
  }
  std::ofstream(dir + "/dram_bad.trace") << "0x40 READ 0\nSTORE 0x80\n";
  MembenchOptions bad;
  bad.pattern = Pattern::kTrace;
  bad.trace_file = dir + "/dram_bad.trace";
  try {
    run_membench(preset("hbm2"), bad);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("dram_bad.trace:2: bad address or operation"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace npusim::dram

namespace npusim::dram {
namespace {

// The same model configured as Ramulator 2.1 sees HBM2 (preset hbm2-pc: two 64-bit pseudo-
// channels per channel, 32-byte bursts, a 2-cycle ACT on the shared row bus, tFAW 15 per
// pseudo-channel, RoBaRaCoCh mapping) must land on Ramulator's figures: the row-bus bound of
// random traffic then replaces DRAMsim3's tFAW bound. Reference figures from DRAM_REFERENCE.md
// table 4.1, "Ramulator RoBaRaCoCh" columns.
MembenchResult run_pc(Pattern p, uint64_t requests) {
  MembenchOptions opt;
  opt.pattern = p;
  opt.requests = requests;
  return run_membench(testing::preset("hbm2-pc"), opt);
}

void expect_near_ramulator(double ours, double reference, double tolerance, const char* what) {
  EXPECT_NEAR(ours, reference, tolerance * reference)
      << what << ": ours " << ours << ", Ramulator 2 " << reference;
}

TEST(DramAgreementPseudoChannel, RamulatorTier1) {
  MembenchResult seq = run_pc(Pattern::kSeqRead, 300000);
  // seq_read 16.54 GB/s, row hit 0.968: the 32-entry queue spans one 1 KiB pseudo-channel row.
  expect_near_ramulator(seq.stats.bandwidth_gbps, 16.54, kTier1, "seq_read GB/s");
  expect_near_ramulator(seq.stats.row_hit_rate, 0.968, kTier1, "seq_read row hit");
  // One REFab per pseudo-channel per nREFI: about 2 x cycles / 3900 per channel.
  EXPECT_NEAR(double(seq.stats.refs), 2.0 * double(seq.stats.cycles) / 3900.0, 2.0);
  expect_near_ramulator(run_pc(Pattern::kSeqWrite, 300000).stats.bandwidth_gbps, 16.81, kTier1,
                        "seq_write GB/s");
  // rand_read 9.87 and stride 9.90 GB/s: 32 B per 3 row-bus cycles (ACT 2 + PRE 1).
  expect_near_ramulator(run_pc(Pattern::kRandomRead, 200000).stats.bandwidth_gbps, 9.87, kTier1,
                        "rand_read GB/s");
  expect_near_ramulator(run_pc(Pattern::kStrideRow, 200000).stats.bandwidth_gbps, 9.90, kTier1,
                        "stride GB/s");
  // Idle rand_read 49.0 and seq_read 32.3 cycles mean latency, seq row hit 0.919.
  expect_near_ramulator(run_pc(Pattern::kIdleRandomRead, 20000).stats.avg_read_latency_cycles, 49.0,
                        kTier1, "idle rand latency");
  MembenchResult idle_seq = run_pc(Pattern::kIdleSeqRead, 20000);
  expect_near_ramulator(idle_seq.stats.avg_read_latency_cycles, 32.3, kTier1, "idle seq latency");
  expect_near_ramulator(idle_seq.stats.row_hit_rate, 0.919, kTier1, "idle seq row hit");
}

// Ramulator's MOP4CLXOR mapping (DRAM_REFERENCE.md section 2) as a split-field XOR spec; with 8
// channels its CacheLineInterleave puts the channel in the lowest bits above the 32-byte burst.
constexpr const char* kMop4clxor = "roco3babgraco2ch:ra^co0,bg^co1,ba^co3";

MembenchResult run_mop(Pattern p, uint64_t requests, int channels) {
  MembenchOptions opt;
  opt.pattern = p;
  opt.requests = requests;
  MemoryConfig cfg = testing::preset("hbm2-pc", channels);
  cfg.controller.address_mapping = kMop4clxor;
  return run_membench(cfg, opt);
}

TEST(DramAgreementPseudoChannel, RamulatorMop4clxorTier1) {
  // Table 4.1, Ramulator MOP4CLXOR: seq_read 28.57 GB/s, row hit 0.957; idle seq_read mean
  // latency 36.9, row hit 0.599 (the XOR spreads a row's bursts over banks).
  MembenchResult seq = run_mop(Pattern::kSeqRead, 300000, 1);
  expect_near_ramulator(seq.stats.bandwidth_gbps, 28.57, kTier1, "MOP4CLXOR seq_read GB/s");
  expect_near_ramulator(seq.stats.row_hit_rate, 0.957, kTier1, "MOP4CLXOR seq_read row hit");
  MembenchResult idle = run_mop(Pattern::kIdleSeqRead, 20000, 1);
  expect_near_ramulator(idle.stats.avg_read_latency_cycles, 36.9, kTier1,
                        "MOP4CLXOR idle seq latency");
  expect_near_ramulator(idle.stats.row_hit_rate, 0.599, kTier1, "MOP4CLXOR idle seq row hit");
  // Table 4.2: 8 channels, seq_read 228.53 GB/s (89.3 % of 256).
  expect_near_ramulator(run_mop(Pattern::kSeqRead, 1600000, 8).stats.bandwidth_gbps, 228.53, kTier1,
                        "MOP4CLXOR 8-channel seq_read GB/s");
}

TEST(DramAgreementPseudoChannel, RamulatorTier2) {
  // rand_mix21 9.25 and seq_mix21 8.34 GB/s; loaded mean read latency 134.7 (rand_read).
  expect_near_ramulator(run_pc(Pattern::kMix2r1w, 150000).stats.bandwidth_gbps, 9.25, kTier2,
                        "rand_mix21 GB/s");
  expect_near_ramulator(run_pc(Pattern::kSeqMix2r1w, 150000).stats.bandwidth_gbps, 8.34, kTier2,
                        "seq_mix21 GB/s");
  expect_near_ramulator(run_pc(Pattern::kRandomRead, 100000).stats.avg_read_latency_cycles, 134.7,
                        kTier2, "rand_read latency");
}

}  // namespace
}  // namespace npusim::dram
