// Plain C++ parts of the memory system: burst splitting, channel interleave of the DRAM address
// mapping, the core/memory clock crossing, and the memory keys of the hardware description.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "arch/dram/address_mapping.hpp"
#include "arch/dram/dram_config.hpp"
#include "arch/hw_config.hpp"
#include "models/dma_core.hpp"
#include "models/dram_memory.hpp"
#include "support/error.hpp"
#include "support/json_reader.hpp"

namespace npusim {
namespace {

using Pieces = std::vector<std::pair<uint64_t, uint64_t>>;

Pieces split(uint64_t addr, uint64_t len, uint64_t burst) {
  Pieces p;
  split_into_bursts(addr, len, burst, [&](uint64_t off, uint64_t n) { p.emplace_back(off, n); });
  return p;
}

TEST(MemsysBursts, RowsAreCutAtMultiplesOfTheBurstSize) {
  // [100, 300) with 64-byte bursts: up to 128, then 192, 256, and the 44-byte tail.
  EXPECT_EQ(split(100, 200, 64), (Pieces{{0, 28}, {28, 64}, {92, 64}, {156, 44}}));
  EXPECT_EQ(split(128, 128, 64), (Pieces{{0, 64}, {64, 64}}));  // aligned: whole bursts
  EXPECT_EQ(split(5, 3, 64), (Pieces{{0, 3}}));                 // inside one burst
  EXPECT_EQ(split(100, 200, 0), (Pieces{{0, 200}}));            // simple memory: one piece
  EXPECT_TRUE(split(100, 0, 64).empty());
}

TEST(MemsysBursts, ContiguousBurstsInterleaveOverEveryChannel) {
  const dram::MemoryConfig cfg = dram::resolve_memory_config("hbm2");
  const dram::AddressMapper mapper(cfg.org, cfg.controller.address_mapping);
  const uint64_t burst = uint64_t(cfg.org.access_bytes());
  const int channels = cfg.org.channels;
  ASSERT_GT(channels, 1);
  // hbm2 maps "rorabgbachco": the channel bits sit just above the column bits, so one row's worth
  // of consecutive bursts (row_bytes) stays in a channel and the next row's worth moves to the
  // next.
  const uint64_t row = uint64_t(cfg.org.row_bytes());
  std::vector<uint64_t> per_channel(size_t(channels), 0);
  const uint64_t span = row * uint64_t(channels) * 4;
  for (uint64_t a = 0; a < span; a += burst) {
    const dram::DramAddress d = mapper.map(a);
    EXPECT_EQ(d.channel, (a / row) % uint64_t(channels)) << a;
    ++per_channel[d.channel];
  }
  for (uint64_t n : per_channel) EXPECT_EQ(n, span / burst / uint64_t(channels));
}

TEST(MemsysClock, CrossingRoundsAsDocumented) {
  // 700 MHz core (1429 ps) and a 1 ns memory clock.
  const ClockCrossing x(1429, 1000);
  EXPECT_EQ(x.entry_memory_cycle(0), 1u);     // floor(0) + 1
  EXPECT_EQ(x.entry_memory_cycle(1), 2u);     // floor(1.429) + 1
  EXPECT_EQ(x.entry_memory_cycle(7), 11u);    // floor(10.003) + 1
  EXPECT_EQ(x.seen_core_cycle(10), 7u);       // ceil(6.998)
  EXPECT_EQ(x.seen_core_cycle(1429), 1000u);  // exactly on a core edge: no rounding
  EXPECT_EQ(x.seen_core_cycle(1430), 1001u);
  // Equal clocks: one synchronizer edge in, none out.
  const ClockCrossing same(1000, 1000);
  EXPECT_EQ(same.entry_memory_cycle(5), 6u);
  EXPECT_EQ(same.seen_core_cycle(6), 6u);
  // Nothing completes in the core cycle that issued it.
  for (uint64_t c = 0; c < 5000; ++c) EXPECT_GT(x.seen_core_cycle(x.entry_memory_cycle(c)), c);
}

// The requests not yet admitted come out by cycle, then initiator, then the order sent, also when
// an initiator sends a later cycle before an earlier one.
TEST(MemsysArrivals, ComeOutByCycleThenInitiatorThenOrderSent) {
  std::vector<tlm::tlm_generic_payload> p(6);
  ArrivalQueues q;
  q.push(1, 5, &p[0]);
  q.push(0, 7, &p[1]);
  q.push(0, 5, &p[2]);  // before initiator 0's cycle-7 request
  q.push(1, 5, &p[3]);
  q.push(0, 5, &p[4]);
  q.push(1, 9, &p[5]);
  EXPECT_EQ(q.size(), 6u);
  EXPECT_EQ(q.earliest(), 5u);
  std::vector<tlm::tlm_generic_payload*> order;
  for (uint64_t c : {5, 7, 9}) {  // as DramMemory::admit_arrivals takes them, cycle by cycle
    for (int i = 0; i < q.initiators(); ++i) {
      while (const ArrivalQueues::Arrival* a = q.front(i, c)) {
        EXPECT_EQ(a->cycle, c);
        order.push_back(a->payload);
        q.pop(i);
      }
    }
    if (!q.empty()) {
      EXPECT_GT(q.earliest(), c);
    }
  }
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(order,
            (std::vector<tlm::tlm_generic_payload*>{&p[2], &p[4], &p[0], &p[3], &p[1], &p[5]}));
  // take(), which DramMemory::admit_arrivals uses, hands them over in the same order.
  ArrivalQueues t;
  t.push(1, 5, &p[0]);
  t.push(0, 7, &p[1]);
  t.push(0, 5, &p[2]);
  t.push(1, 5, &p[3]);
  t.push(0, 5, &p[4]);
  t.push(1, 9, &p[5]);
  std::vector<tlm::tlm_generic_payload*> taken;
  for (uint64_t c : {5, 7, 9}) {
    t.take(c, [&](int, const ArrivalQueues::Arrival& a) {
      EXPECT_EQ(a.cycle, c);
      taken.push_back(a.payload);
    });
    if (!t.empty()) {
      EXPECT_GT(t.earliest(), c);
    }
  }
  EXPECT_TRUE(t.empty());
  EXPECT_EQ(taken, order);
}

HwConfig parse(const std::string& memory) {
  return parse_hw_config(
      parse_json_text(R"({"schema_version": 1, "memory": )" + memory + "}", "hw.json"), "hw.json");
}

std::string error_of(const std::string& memory) {
  try {
    parse(memory);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(MemsysConfig, DramKeysParseAndRoundTrip) {
  HwConfig c = parse(R"({"model": "dram", "preset": "hbm2", "channels": 4,
                         "max_outstanding_bursts": 32})");
  EXPECT_EQ(c.memory.model, MemoryModel::kDram);
  EXPECT_EQ(c.memory.preset, "hbm2");
  EXPECT_EQ(c.memory.channels, 4);
  EXPECT_EQ(c.memory.max_outstanding_bursts, 32);
  HwConfig again = parse_hw_config(to_json(c), "resolved");
  EXPECT_EQ(to_json(again), to_json(c));
  HwConfig hbm = load_hw_config("tpu-v1-hbm");
  EXPECT_EQ(to_json(parse_hw_config(to_json(hbm), "resolved")), to_json(hbm));
}

TEST(MemsysConfig, KeysOfTheOtherModelAndBadChannelsAreErrors) {
  EXPECT_NE(
      error_of(R"({"model": "dram"})").find("hw.json: /memory/preset: required key is missing"),
      std::string::npos)
      << error_of(R"({"model": "dram"})");
  const std::string latency = error_of(R"({"model": "dram", "preset": "hbm2", "latency_ns": 5})");
  EXPECT_NE(latency.find("/memory/latency_ns: only for memory.model \"simple\" (this is \"dram\")"),
            std::string::npos)
      << latency;
  const std::string preset = error_of(R"({"preset": "hbm2"})");
  EXPECT_NE(preset.find("/memory/preset: only for memory.model \"dram\""), std::string::npos)
      << preset;
  const std::string channels = error_of(R"({"model": "dram", "preset": "hbm2", "channels": 3})");
  EXPECT_NE(channels.find("/memory/channels: expected a power of two"), std::string::npos)
      << channels;
  const std::string model = error_of(R"({"model": "hbm"})");
  EXPECT_NE(model.find("/memory/model"), std::string::npos) << model;
}

// Transfers in flight per DMA queue: 4 unless written, for either memory model, round-tripped;
// 0 is an error naming the key.
TEST(MemsysConfig, MaxOutstandingTransfers) {
  EXPECT_EQ(parse(R"({"model": "dram", "preset": "hbm2"})").memory.max_outstanding_transfers, 4);
  const HwConfig c = parse(R"({"model": "simple", "max_outstanding_transfers": 1})");
  EXPECT_EQ(c.memory.max_outstanding_transfers, 1);
  EXPECT_EQ(parse_hw_config(to_json(c), "resolved").memory.max_outstanding_transfers, 1);
  EXPECT_EQ(load_hw_config("tpu-v4-like-core").memory.max_outstanding_transfers, 4);
  EXPECT_EQ(load_hw_config("tpu-v4-like-core").memory.max_outstanding_bursts, 1024);
  const std::string zero = error_of(R"({"model": "dram", "preset": "hbm2",
                                        "max_outstanding_transfers": 0})");
  EXPECT_NE(zero.find("hw.json: /memory/max_outstanding_transfers"), std::string::npos) << zero;
}

// The capacity a description never mentions follows its memory: the preset's, with `channels`
// applied (four of hbm2's 1 GiB channels), and 8 GiB for the simple model; a capacity above the
// preset's is refused only when written.
TEST(MemsysConfig, CapacityDefaultFollowsThePreset) {
  const HwConfig four = parse(R"({"model": "dram", "preset": "hbm2", "channels": 4})");
  ASSERT_TRUE(four.memory.dram.has_value());
  EXPECT_EQ(four.memory.dram->org.channels, 4);
  EXPECT_EQ(four.memory.capacity_bytes, uint64_t{4} << 30);
  EXPECT_EQ(four.memory.capacity_bytes, four.memory.dram->org.capacity_bytes());
  EXPECT_EQ(parse(R"({"model": "dram", "preset": "lpddr4"})").memory.capacity_bytes,
            dram::resolve_memory_config("lpddr4").org.capacity_bytes());
  EXPECT_EQ(parse(R"({"model": "simple"})").memory.capacity_bytes, uint64_t{8} << 30);
  const std::string too_big = error_of(
      R"({"model": "dram", "preset": "hbm2", "channels": 4, "capacity_bytes": 8589934592})");
  EXPECT_NE(too_big.find("hw.json: /memory/capacity_bytes: expected at most the 4294967296 bytes "
                         "of hbm2 x4, got 8589934592"),
            std::string::npos)
      << too_big;
}

// Every problem of a description at once, a bad memory preset among them.
TEST(MemsysConfig, BadPresetIsReportedWithTheOtherErrors) {
  try {
    parse_hw_config(parse_json_text(R"({"schema_version": 1, "clock_mhz": -1,
        "memory": {"model": "dram", "preset": "hbm9"}})",
                                    "hw.json"),
                    "hw.json");
    FAIL() << "expected UserErrors";
  } catch (const UserErrors& e) {
    ASSERT_EQ(e.messages().size(), 2u) << e.what();
    EXPECT_NE(e.messages()[0].find("hw.json: /clock_mhz: "), std::string::npos) << e.what();
    EXPECT_NE(e.messages()[1].find("hw.json: /memory/preset: 'hbm9': no such file and no such "
                                   "preset (presets: "),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace npusim
