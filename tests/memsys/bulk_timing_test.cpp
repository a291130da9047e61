// The bulk memory fidelity's core (models/dram/bulk_timing.hpp) without a kernel: exact cycles of
// the rule derived from the preset's own figures, and streams against the command-level
// MemorySystem driven with the same bursts (cycles and energy within 2 %).
#include "models/dram/bulk_timing.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "arch/dram/dram_config.hpp"
#include "models/dram/memory_system.hpp"

namespace npusim {
namespace {

using dram::BulkTiming;
using dram::MemoryConfig;
using dram::MemorySystem;

// Core and memory on one clock: core cycle c enters the memory at memory cycle c + 1.
constexpr uint64_t kPs = 1000;

TEST(BulkTiming, ReadAtAnIdleMemoryTakesActRcdAndTheReadLatency) {
  const MemoryConfig cfg = dram::resolve_memory_config("hbm2");
  const dram::DramTiming& t = cfg.timing;
  BulkTiming bulk(cfg, kPs, kPs, 0);
  // 4 bursts of one row, arriving at core cycle 10: enters at 11, ready one front-end cycle
  // later, ACT then, columns tRCD after it one every max(tCCD_L, BL/2), the last read's data
  // CL + BL/2 after its column command.
  const uint64_t ready = 11 + uint64_t(cfg.controller.frontend_latency_cycles);
  const uint64_t expected =
      ready + uint64_t(t.rcd_read) + 3 * uint64_t(t.read_to_read_l()) + uint64_t(t.read_latency());
  EXPECT_EQ(bulk.access(0, 0, 4 * 64, false, 10), expected);
  const dram::MemoryStats s = bulk.stats(expected + 1);
  EXPECT_EQ(s.reads, 4u);
  EXPECT_EQ(s.acts, 1u);
  EXPECT_EQ(s.row_hits, 3u);
  // A second request to the open row is a row hit: no ACT.
  const uint64_t again = bulk.access(0, 4 * 64, 64, false, expected);
  EXPECT_EQ(again, expected + 1 + uint64_t(cfg.controller.frontend_latency_cycles) +
                       uint64_t(t.read_latency()));
  EXPECT_EQ(bulk.stats(again + 1).acts, 1u);
}

TEST(BulkTiming, AWindowOfOneBurstWaitsForEachCompletion) {
  const MemoryConfig cfg = dram::resolve_memory_config("hbm2");
  const dram::DramTiming& t = cfg.timing;
  BulkTiming bulk(cfg, kPs, kPs, 1);
  // Burst k + 1 is sent in the core cycle burst k completes (e), enters at e + 1 and is ready a
  // front-end cycle later; a row hit then completes CL + BL/2 after: every burst after the
  // first adds 1 + front end + read latency.
  const uint64_t fe = uint64_t(cfg.controller.frontend_latency_cycles);
  const uint64_t first = 1 + fe + uint64_t(t.rcd_read) + uint64_t(t.read_latency());
  const uint64_t per = 1 + fe + uint64_t(t.read_latency());
  EXPECT_EQ(bulk.access(0, 0, 8 * 64, false, 0), first + 7 * per);
}

// Every burst of `bytes` from `base` (reads, or writes) added to a command-level memory at cycle
// 0 (waiting in front of full queues), run to the end: the last completion.
struct Reference {
  uint64_t last = 0;
  dram::MemoryStats stats;
};
Reference command_level(const MemoryConfig& cfg, const std::vector<uint64_t>& bursts,
                        const std::vector<bool>& writes) {
  MemorySystem mem(cfg);
  Reference r;
  mem.set_callback([&r](uint64_t, uint64_t cycle) { r.last = std::max(r.last, cycle); });
  for (size_t i = 0; i < bursts.size(); ++i) {
    mem.add_or_wait(mem.mapper().map(bursts[i]), writes[i], i);
  }
  for (int guard = 0; mem.outstanding() > 0 && guard < 100000000; ++guard) {
    mem.advance_to(mem.next_event_cycle() + 1);
  }
  mem.advance_to(r.last + 1);
  r.stats = mem.stats();
  return r;
}

// `rows` requests of `row_bytes`, `stride` apart, all arriving at once; every `write_every`-th
// one a write (0: none) to a second region.
void expect_within_two_percent(const char* preset, uint64_t rows, uint64_t row_bytes,
                               uint64_t stride, int write_every) {
  const MemoryConfig cfg = dram::resolve_memory_config(preset);
  const uint64_t burst = uint64_t(cfg.org.access_bytes());
  const uint64_t write_base = cfg.org.capacity_bytes() / 2;
  std::vector<uint64_t> bursts;
  std::vector<bool> writes;
  BulkTiming bulk(cfg, kPs, kPs, 0);
  uint64_t last = 0;
  for (uint64_t r = 0; r < rows; ++r) {
    const bool w = write_every > 0 && r % uint64_t(write_every) == 0;
    const uint64_t addr = (w ? write_base : 0) + r * stride;
    last = std::max(last, bulk.access(0, addr, row_bytes, w, 0));
    for (uint64_t b = 0; b < row_bytes; b += burst) {
      bursts.push_back(addr + b);
      writes.push_back(w);
    }
  }
  const Reference ref = command_level(cfg, bursts, writes);
  const dram::MemoryStats s = bulk.stats(ref.last + 1);
  SCOPED_TRACE(::testing::Message() << preset << ": " << rows << " x " << row_bytes << " B, stride "
                                    << stride << ", writes 1/" << write_every);
  // The bulk core's cycle 0 request enters at memory cycle 1: one cycle of the difference.
  EXPECT_NEAR(double(last), double(ref.last), 0.02 * double(ref.last));
  EXPECT_EQ(s.reads + s.writes, ref.stats.reads + ref.stats.writes);
  EXPECT_NEAR(s.total_energy_pj, ref.stats.total_energy_pj, 0.02 * ref.stats.total_energy_pj);
}

TEST(BulkTiming, SequentialReadsWithinTwoPercentOfTheCommandLevel) {
  expect_within_two_percent("hbm2", 1024, 4096, 4096, 0);
  expect_within_two_percent("ddr3-2133", 256, 4096, 4096, 0);
  expect_within_two_percent("lpddr4", 256, 4096, 4096, 0);
}

TEST(BulkTiming, StridedRowsWithinTwoPercentOfTheCommandLevel) {
  // 512-byte rows 64 KiB apart: a new DRAM row for every request.
  expect_within_two_percent("hbm2", 4096, 512, 65536, 0);
  // LPDDR4's shared command bus: every ACT has to fit between column commands.
  expect_within_two_percent("lpddr4", 1024, 256, 4096, 0);
  expect_within_two_percent("lpddr4", 1024, 256, 65536, 0);
}

TEST(BulkTiming, ReadsAndWritesWithinTwoPercentOfTheCommandLevel) {
  expect_within_two_percent("hbm2", 1024, 4096, 4096, 4);
  expect_within_two_percent("lpddr4", 256, 4096, 4096, 4);
}

}  // namespace
}  // namespace npusim
