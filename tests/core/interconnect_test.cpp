// The interconnect (models/interconnect_timing.hpp, models/interconnect.hpp) and the COPY
// instruction: hop counts and paths of both topologies; a copy's cycles from the link parameters
// (hops x hop_latency_cycles + ceil(bytes / link_bytes_per_cycle)); two copies that share a link
// wait for each other and two on disjoint links do not; the bytes land in the destination core's
// unified buffer; and the hazard checker reports a read of the destination that does not wait for
// the copy. The SystemC tests elaborate one chip each (one test per process).
#include <gtest/gtest.h>

#include <map>

#include "models/hazard_checker.hpp"
#include "models/interconnect_timing.hpp"
#include "models/soc.hpp"
#include "tests/memsys/soc_run.hpp"

namespace npusim {
namespace {

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

InterconnectConfig link(Topology topology, int bytes_per_cycle, int hop_cycles) {
  InterconnectConfig c;
  c.topology = topology;
  c.link_bytes_per_cycle = bytes_per_cycle;
  c.hop_latency_cycles = hop_cycles;
  return c;
}

TEST(InterconnectTiming, RingTakesTheShorterDirection) {
  const InterconnectTiming ring(link(Topology::kRing, 32, 3), 6);
  EXPECT_EQ(ring.links(), 12);
  EXPECT_EQ(ring.hops(0, 1), 1);
  EXPECT_EQ(ring.hops(0, 3), 3);  // a tie: clockwise
  EXPECT_EQ(ring.hops(0, 5), 1);  // counter-clockwise over the wrap
  EXPECT_EQ(ring.path(0, 3), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(ring.path(0, 5), (std::vector<int>{6}));      // link 6 + 0: 0 -> 5
  EXPECT_EQ(ring.path(4, 2), (std::vector<int>{10, 9}));  // 4 -> 3 -> 2
  const InterconnectTiming xbar(link(Topology::kCrossbar, 32, 3), 6);
  EXPECT_EQ(xbar.links(), 6);
  EXPECT_EQ(xbar.hops(0, 3), 1);
  EXPECT_EQ(xbar.path(4, 2), (std::vector<int>{2}));  // the output port of core 2
}

TEST(InterconnectTiming, OneCopyFollowsTheFormulaAndASharedLinkWaits) {
  const InterconnectConfig c = link(Topology::kRing, 64, 4);
  InterconnectTiming ring(c, 4);
  // 1000 B over 2 hops at cycle 10: links free, start 10, end 10 + 2 x 4 + ceil(1000 / 64).
  const uint64_t occupancy = ceil_div(1000, 64);
  CopyWindow a = ring.transfer(10, 0, 2, 1000);
  EXPECT_EQ(a.start, 10u);
  EXPECT_EQ(a.end, 10 + 2 * 4 + occupancy);
  // 1 -> 2 shares link 1 (1 -> 2), held until 10 + occupancy: it waits until then.
  CopyWindow b = ring.transfer(11, 1, 2, 640);
  EXPECT_EQ(b.start, 10 + occupancy);
  EXPECT_EQ(b.end, 10 + occupancy + 1 * 4 + ceil_div(640, 64));
  // 3 -> 0 (link 3) shares no link with them: no wait.
  CopyWindow d = ring.transfer(11, 3, 0, 64);
  EXPECT_EQ(d.start, 11u);
  EXPECT_EQ(d.end, 11u + 4 + 1);
  EXPECT_EQ(ring.wait_cycles(), 10 + occupancy - 11);
  EXPECT_EQ(ring.busy_cycles(), 2 * occupancy + ceil_div(640, 64) + 1);
  EXPECT_EQ(ring.bytes(), 1000u + 640 + 64);
  // Crossbar: copies to different cores never wait, copies to one core share its port.
  InterconnectTiming xbar(link(Topology::kCrossbar, 64, 4), 4);
  EXPECT_EQ(xbar.transfer(0, 0, 1, 128).end, 4u + 2);
  EXPECT_EQ(xbar.transfer(0, 2, 3, 128).end, 4u + 2);
  EXPECT_EQ(xbar.transfer(0, 2, 1, 128).start, 2u);
}

Instruction copy(uint32_t id, int from, int to, uint64_t src, uint64_t dst, uint64_t bytes) {
  Instruction i;
  i.id = id;
  i.core = from;
  i.unit = UnitKind::kLink;
  i.op = CopyOp{to, src, dst, bytes};
  return i;
}

// out[0, n) = lut(in[0, n)) on core `core`'s vector unit.
Instruction lut(uint32_t id, int core, uint64_t in, uint64_t out, uint64_t n) {
  Instruction i;
  i.id = id;
  i.core = core;
  i.unit = UnitKind::kVector;
  LutOp op;
  op.in_ub_addr = in;
  op.out_ub_addr = out;
  op.elements = n;
  i.op = op;
  return i;
}

Program program_of(std::vector<Instruction> instrs, int cores) {
  Program p;
  p.cores = cores;
  p.instructions = std::move(instrs);
  LayerRecord layer;
  layer.name = "layer";
  layer.op = "test";
  layer.end_instruction = uint32_t(p.instructions.size());
  p.layers.push_back(layer);
  p.luts.push_back(std::vector<int8_t>(256));
  for (int v = 0; v < 256; ++v) p.luts[0][size_t(v)] = int8_t(v ^ 0x5a);
  p.dram_bytes = 4096;
  return p;
}

HwConfig chip(int cores, Topology topology) {
  HwConfig hw;
  hw.cores = cores;
  hw.interconnect = link(topology, 48, 5);
  hw.unified_buffer = {1 << 20, 4};
  hw.accumulators = {1 << 16, 2};
  return hw;
}

std::vector<Window> windows_of(const Soc& soc) {
  std::vector<Window> w;
  for (const auto& t : soc.scoreboard.timings()) w.push_back({t.start_cycle, t.end_cycle});
  return w;
}

// Core 0 computes 1000 bytes, copies them to core 1 (one hop), where a LUT waits for the copy.
// The copy starts when the LUT of core 0 completes and ends 1 x 5 + ceil(1000 / 48) cycles later;
// core 1's LUT sees core 0's values.
TEST(InterconnectSoc, CopyTakesTheLinkCyclesAndMovesTheBytes) {
  const HwConfig hw = chip(2, Topology::kRing);
  Instruction consume = lut(2, 1, 4096, 8192, 1000);
  consume.deps = {1};
  Instruction send = copy(1, 0, 1, 0, 4096, 1000);
  send.deps = {0};
  Program p = program_of({lut(0, 0, 0x10000, 0, 1000), send, consume}, 2);
  Soc soc("soc", hw, p, systolic::Fidelity::kFast);
  uint8_t* in = soc.cores[0]->buffers.bytes(BufferId::kUnified, 0x10000, 1000, UINT32_MAX);
  for (int i = 0; i < 1000; ++i) in[i] = uint8_t(i * 13 + 1);
  run(soc);
  const auto& t = soc.scoreboard.timings();
  EXPECT_EQ(t[1].start_cycle, t[0].end_cycle);
  EXPECT_EQ(t[1].end_cycle, t[0].end_cycle + 5 + ceil_div(1000, 48));
  EXPECT_EQ(t[2].start_cycle, t[1].end_cycle);
  EXPECT_FALSE(find_hazard(p, windows_of(soc)));
  const uint8_t* sent = soc.cores[0]->buffers.bytes(BufferId::kUnified, 0, 1000, UINT32_MAX);
  const uint8_t* got = soc.cores[1]->buffers.bytes(BufferId::kUnified, 4096, 1000, UINT32_MAX);
  const uint8_t* out = soc.cores[1]->buffers.bytes(BufferId::kUnified, 8192, 1000, UINT32_MAX);
  // Core 0's LUT maps in[i] to sent[i]; core 1 applies the same table to what arrived.
  std::map<uint8_t, uint8_t> table;
  for (int i = 0; i < 1000; ++i) table[in[i]] = sent[i];
  int checked = 0;
  for (int i = 0; i < 1000; ++i) {
    ASSERT_EQ(got[i], sent[i]) << i;
    if (auto it = table.find(got[i]); it != table.end()) {
      ASSERT_EQ(out[i], it->second) << i;
      ++checked;
    }
  }
  EXPECT_GT(checked, 100);
  EXPECT_EQ(soc.interconnect->timing().bytes(), 1000u);
  EXPECT_EQ(soc.cores[0]->link_queue->bytes_sent(), 1000u);
  EXPECT_EQ(soc.cores[0]->link_queue->stats().busy_cycles, 5 + ceil_div(1000, 48));
}

// On a 4-core ring, cores 0 and 1 both copy to core 2 at cycle 0: 0 -> 1 -> 2 and 1 -> 2 share
// link 1 -> 2. Core 0's copy (bound first, so served first) holds it for ceil(960 / 48) = 20
// cycles; core 1's starts then. Core 3's copy to core 0 (link 3 -> 0) does not wait.
TEST(InterconnectSoc, CopiesSharingALinkContend) {
  const HwConfig hw = chip(4, Topology::kRing);
  Program p = program_of(
      {copy(0, 0, 2, 0, 0, 960), copy(1, 1, 2, 0, 4096, 480), copy(2, 3, 0, 0, 8192, 96)}, 4);
  Soc soc("soc", hw, p, systolic::Fidelity::kFast);
  run(soc);
  const auto& t = soc.scoreboard.timings();
  EXPECT_EQ(t[0].start_cycle, 0u);
  EXPECT_EQ(t[0].end_cycle, 2 * 5 + 20u);
  EXPECT_EQ(t[1].end_cycle, 20 + 1 * 5 + 10u);  // waited 20 cycles for the shared link
  EXPECT_EQ(t[2].end_cycle, 1 * 5 + 2u);
  EXPECT_EQ(soc.interconnect->timing().wait_cycles(), 20u);
  EXPECT_EQ(soc.interconnect->timing().busy_cycles(), 2 * 20 + 10 + 2u);
}

// Core 1 reads the copy's destination without a dependency on the copy: the checker reports the
// read-after-write on core 1's unified buffer, naming both instructions. Core 0 overwriting the
// copy's source while the copy reads it is a write-after-read on core 0's buffer.
TEST(InterconnectSoc, ReadingTheDestinationBeforeTheCopyIsAHazard) {
  const HwConfig hw = chip(2, Topology::kCrossbar);
  Program p = program_of({copy(0, 0, 1, 0, 4096, 4800), lut(1, 1, 4096, 0, 64)}, 2);
  Soc soc("soc", hw, p, systolic::Fidelity::kFast);
  run(soc);
  const auto hazard = find_hazard(p, windows_of(soc));
  ASSERT_TRUE(hazard);
  EXPECT_EQ(hazard->kind, "RAW");
  EXPECT_EQ(hazard->earlier, 0u);
  EXPECT_EQ(hazard->later, 1u);
  EXPECT_NE(hazard->message.find("COPY on core0 link"), std::string::npos) << hazard->message;
  // The same program on hand-made windows, the LUT after the copy: no hazard. And core 0's LUT
  // writing the source while the copy reads it: WAR.
  EXPECT_FALSE(find_hazard(p, {{0, 105}, {105, 120}}));
  Program war = program_of({copy(0, 0, 1, 0, 4096, 4800), lut(1, 0, 8192, 0, 64)}, 2);
  const auto h2 = find_hazard(war, {{0, 105}, {10, 20}});
  ASSERT_TRUE(h2);
  EXPECT_EQ(h2->kind, "WAR");
}

}  // namespace
}  // namespace npusim
