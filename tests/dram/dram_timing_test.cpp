// Timing gates in the Ramulator 2 style: for each JEDEC constraint, the second command is refused
// one cycle before the bound and accepted at it, with the bound computed from the preset's own
// parameters. Every gate runs on every preset of configs/memory.
#include "models/dram/dram_timing.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "support/error.hpp"
#include "tests/dram/dram_test_util.hpp"

namespace npusim::dram {
namespace {

using testing::preset;

class DramTimingGate : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    cfg_ = preset(GetParam().c_str());
    t_ = cfg_.timing;
  }
  ChannelTiming make() const { return ChannelTiming(cfg_.org, cfg_.timing); }
  // A bank in another bank group of the same pseudo-channel (or the same group if there is one).
  uint32_t other_group_bank(const ChannelTiming& ch) const {
    return ch.flat_bank(0, cfg_.org.bank_groups > 1 ? 1 : 0, cfg_.org.bank_groups > 1 ? 0 : 1);
  }
  // Refused at t - 1, accepted at t.
  static void expect_gate(const ChannelTiming& ch, Command cmd, uint32_t bank, uint32_t row,
                          uint64_t t, const char* what) {
    EXPECT_FALSE(ch.can_issue(cmd, bank, row, t - 1)) << what << ": legal at t-1 = " << t - 1;
    EXPECT_TRUE(ch.can_issue(cmd, bank, row, t)) << what << ": refused at t = " << t;
  }

  MemoryConfig cfg_;
  DramTiming t_;
};

constexpr uint64_t kT0 = 1000;  // far from cycle 0, so no earlier bound interferes

TEST_P(DramTimingGate, ActToReadIsRcdRead) {
  ChannelTiming ch = make();
  ch.issue(Command::kAct, 0, 7, kT0);
  expect_gate(ch, Command::kRead, 0, 7, kT0 + t_.rcd_read, "tRCDRD");
}

TEST_P(DramTimingGate, ActToWriteIsRcdWrite) {
  ChannelTiming ch = make();
  ch.issue(Command::kAct, 0, 7, kT0);
  expect_gate(ch, Command::kWrite, 0, 7, kT0 + t_.rcd_write, "tRCDWR");
}

TEST_P(DramTimingGate, ActToPreIsRas) {
  ChannelTiming ch = make();
  ch.issue(Command::kAct, 0, 7, kT0);
  expect_gate(ch, Command::kPre, 0, 7, kT0 + t_.ras, "tRAS");
}

TEST_P(DramTimingGate, PreToActIsRp) {
  ChannelTiming ch = make();
  ch.issue(Command::kAct, 0, 7, kT0);
  ch.issue(Command::kPre, 0, 7, kT0 + 2 * t_.rc);
  expect_gate(ch, Command::kAct, 0, 8, kT0 + 2 * t_.rc + t_.rp, "tRP");
}

TEST_P(DramTimingGate, ActToActSameBankIsRc) {
  // Lengthen tRC beyond tRAS + tRP so that tRC, not tRP, is the binding constraint.
  cfg_.timing.rc = t_.ras + t_.rp + 5;
  ChannelTiming ch = make();
  ch.issue(Command::kAct, 0, 7, kT0);
  ch.issue(Command::kPre, 0, 7, kT0 + t_.ras);
  expect_gate(ch, Command::kAct, 0, 8, kT0 + cfg_.timing.rc, "tRC");
}

TEST_P(DramTimingGate, ActToActOtherGroupIsRrdS) {
  ChannelTiming ch = make();
  ch.issue(Command::kAct, 0, 7, kT0);
  expect_gate(ch, Command::kAct, other_group_bank(ch), 7,
              kT0 + std::max(t_.rrd_s, t_.act_command_cycles), "tRRD_S");
}

TEST_P(DramTimingGate, ActToActSameGroupIsRrdL) {
  ChannelTiming ch = make();
  ch.issue(Command::kAct, 0, 7, kT0);
  expect_gate(ch, Command::kAct, ch.flat_bank(0, 0, 1), 7,
              kT0 + std::max(t_.rrd_l, t_.act_command_cycles), "tRRD_L");
}

TEST_P(DramTimingGate, FifthActWaitsForFaw) {
  if (cfg_.org.banks_per_pseudo_channel() < 5) GTEST_SKIP() << "fewer than five banks";
  ChannelTiming ch = make();
  // Four ACTs as fast as tRRD allows, each in the next bank group where there are several.
  uint64_t t = kT0;
  std::vector<uint32_t> banks;
  for (uint32_t i = 0; i < 5; ++i) {
    banks.push_back(
        ch.flat_bank(0, i % uint32_t(cfg_.org.bank_groups), i / uint32_t(cfg_.org.bank_groups)));
  }
  for (int i = 0; i < 4; ++i) {
    t = std::max(t, ch.earliest(Command::kAct, banks[size_t(i)]));
    ch.issue(Command::kAct, banks[size_t(i)], 1, t);
  }
  const uint64_t faw_bound = kT0 + uint64_t(t_.faw);
  const uint64_t other_bounds = t + uint64_t(std::max({t_.rrd_s, t_.rrd_l, t_.act_command_cycles}));
  if (other_bounds >= faw_bound) GTEST_SKIP() << "tRRD alone spaces five ACTs beyond tFAW";
  expect_gate(ch, Command::kAct, banks[4], 1, faw_bound, "tFAW");
}

TEST_P(DramTimingGate, ReadToReadOtherGroupIsCcdS) {
  ChannelTiming ch = make();
  const uint32_t b2 = other_group_bank(ch);
  ch.issue(Command::kAct, 0, 7, kT0);
  ch.issue(Command::kAct, b2, 7, kT0 + 100);
  ch.issue(Command::kRead, 0, 7, kT0 + 200);
  expect_gate(ch, Command::kRead, b2, 7, kT0 + 200 + t_.read_to_read_s(), "tCCD_S");
}

TEST_P(DramTimingGate, ReadToReadSameGroupIsCcdL) {
  ChannelTiming ch = make();
  ch.issue(Command::kAct, 0, 7, kT0);
  ch.issue(Command::kRead, 0, 7, kT0 + 200);
  expect_gate(ch, Command::kRead, 0, 7, kT0 + 200 + t_.read_to_read_l(), "tCCD_L");
}

TEST_P(DramTimingGate, WriteToWriteSameGroupIsCcdL) {
  ChannelTiming ch = make();
  ch.issue(Command::kAct, 0, 7, kT0);
  ch.issue(Command::kWrite, 0, 7, kT0 + 200);
  expect_gate(ch, Command::kWrite, 0, 7, kT0 + 200 + t_.read_to_read_l(), "tCCD_L (write)");
}

TEST_P(DramTimingGate, WriteToWriteOtherGroupIsCcdS) {
  ChannelTiming ch = make();
  const uint32_t b2 = other_group_bank(ch);
  ch.issue(Command::kAct, 0, 7, kT0);
  ch.issue(Command::kAct, b2, 7, kT0 + 100);
  ch.issue(Command::kWrite, 0, 7, kT0 + 200);
  expect_gate(ch, Command::kWrite, b2, 7, kT0 + 200 + t_.read_to_read_s(), "tCCD_S (write)");
}

TEST_P(DramTimingGate, ReadToWriteIsBusTurnaround) {
  ChannelTiming ch = make();
  ch.issue(Command::kAct, 0, 7, kT0);
  ch.issue(Command::kRead, 0, 7, kT0 + 200);
  // tCL + BL/2 - tCWL + tRTRS: the write's data may follow the read's only after the turnaround.
  expect_gate(ch, Command::kWrite, 0, 7, kT0 + 200 + (t_.cl + t_.burst_cycles - t_.cwl + t_.rtrs),
              "RD->WR");
}

TEST_P(DramTimingGate, WriteToReadOtherGroupIsWtrS) {
  ChannelTiming ch = make();
  const uint32_t b2 = other_group_bank(ch);
  ch.issue(Command::kAct, 0, 7, kT0);
  ch.issue(Command::kAct, b2, 7, kT0 + 100);
  ch.issue(Command::kWrite, 0, 7, kT0 + 200);
  expect_gate(ch, Command::kRead, b2, 7, kT0 + 200 + (t_.cwl + t_.burst_cycles + t_.wtr_s),
              "tWTR_S");
}

TEST_P(DramTimingGate, WriteToReadSameGroupIsWtrL) {
  ChannelTiming ch = make();
  ch.issue(Command::kAct, 0, 7, kT0);
  ch.issue(Command::kWrite, 0, 7, kT0 + 200);
  expect_gate(ch, Command::kRead, 0, 7, kT0 + 200 + (t_.cwl + t_.burst_cycles + t_.wtr_l),
              "tWTR_L");
}

TEST_P(DramTimingGate, ReadToPreIsRtp) {
  ChannelTiming ch = make();
  ch.issue(Command::kAct, 0, 7, kT0);
  ch.issue(Command::kRead, 0, 7, kT0 + 200);  // long after tRAS
  expect_gate(ch, Command::kPre, 0, 7, kT0 + 200 + t_.rtp, "tRTP");
}

TEST_P(DramTimingGate, WriteToPreIsWriteRecovery) {
  ChannelTiming ch = make();
  ch.issue(Command::kAct, 0, 7, kT0);
  ch.issue(Command::kWrite, 0, 7, kT0 + 200);
  expect_gate(ch, Command::kPre, 0, 7, kT0 + 200 + (t_.cwl + t_.burst_cycles + t_.wr), "tWR");
}

TEST_P(DramTimingGate, ReadAutoPrechargeToActIsRtpPlusRp) {
  ChannelTiming ch = make();
  ch.issue(Command::kAct, 0, 7, kT0);
  const uint64_t rd = kT0 + t_.rcd_read;
  ch.issue(Command::kReadAp, 0, 7, rd);
  EXPECT_FALSE(ch.is_open(0));
  // The implied precharge happens when both tRAS (from the ACT) and tRTP (from the RD) allow.
  const uint64_t pre = std::max<uint64_t>(kT0 + t_.ras, rd + t_.rtp);
  expect_gate(ch, Command::kAct, 0, 9, std::max<uint64_t>(pre + t_.rp, kT0 + t_.rc), "RDA->ACT");
}

TEST_P(DramTimingGate, WriteAutoPrechargeToActIsWriteRecoveryPlusRp) {
  ChannelTiming ch = make();
  ch.issue(Command::kAct, 0, 7, kT0);
  const uint64_t wr = kT0 + t_.rcd_write;
  ch.issue(Command::kWriteAp, 0, 7, wr);
  const uint64_t pre = std::max<uint64_t>(kT0 + t_.ras, wr + t_.cwl + t_.burst_cycles + t_.wr);
  expect_gate(ch, Command::kAct, 0, 9, std::max<uint64_t>(pre + t_.rp, kT0 + t_.rc), "WRA->ACT");
}

TEST_P(DramTimingGate, PreToRefIsRp) {
  ChannelTiming ch = make();
  ch.issue(Command::kAct, 0, 7, kT0);
  ch.issue(Command::kPre, 0, 7, kT0 + 100);
  expect_gate(ch, Command::kRefresh, 0, 0, kT0 + 100 + t_.rp, "PRE->REF");
}

TEST_P(DramTimingGate, RefNeedsEveryBankClosed) {
  ChannelTiming ch = make();
  ch.issue(Command::kAct, 1, 7, kT0);
  EXPECT_FALSE(ch.can_issue(Command::kRefresh, 0, 0, kT0 + 10000));
  ch.issue(Command::kPre, 1, 7, kT0 + 1000);
  EXPECT_TRUE(ch.can_issue(Command::kRefresh, 0, 0, kT0 + 1000 + t_.rp));
}

TEST_P(DramTimingGate, RefToActIsRfc) {
  ChannelTiming ch = make();
  ch.issue(Command::kRefresh, 0, 0, kT0);
  expect_gate(ch, Command::kAct, 3, 1, kT0 + t_.rfc, "tRFC");
  expect_gate(ch, Command::kRefresh, 0, 0, kT0 + t_.rfc, "REF->REF");
}

// Per-bank refresh: REFpb needs only its own bank closed, holds that bank for tRFCpb and is an
// ACT to the pseudo-channel's tRRD and tFAW bounds (presets without rfc_pb get one here).
TEST_P(DramTimingGate, RefPbHoldsItsBankForRfcPb) {
  if (cfg_.timing.rfc_pb == 0) cfg_.timing.rfc_pb = 2 * t_.rp;
  const uint64_t rfc_pb = uint64_t(cfg_.timing.rfc_pb);
  ChannelTiming ch = make();
  const uint32_t b2 = other_group_bank(ch);
  ch.issue(Command::kAct, 0, 7, kT0);
  ch.issue(Command::kAct, b2, 7, kT0 + 100);
  EXPECT_FALSE(ch.can_issue(Command::kRefreshBank, 0, 0, kT0 + 10000));  // its bank is open
  ch.issue(Command::kPre, 0, 7, kT0 + 1000);
  expect_gate(ch, Command::kRefreshBank, 0, 0, kT0 + 1000 + t_.rp, "PRE->REFpb");
  const uint64_t t = kT0 + 2000;
  ch.issue(Command::kRefreshBank, 0, 0, t);  // another bank (b2) stays open meanwhile
  expect_gate(ch, Command::kAct, 0, 3, t + rfc_pb, "REFpb->ACT same bank");
  expect_gate(ch, Command::kRefreshBank, 0, 0, t + rfc_pb, "REFpb->REFpb same bank");
  const uint32_t b3 = ch.flat_bank(0, cfg_.org.bank_groups > 1 ? 1 : 0, 2);
  expect_gate(ch, Command::kAct, b3, 3, t + std::max<uint64_t>(t_.rrd_s, t_.row_command_cycles),
              "REFpb->ACT other group");
  EXPECT_TRUE(ch.can_issue(Command::kRead, b2, 7, t + t_.rrd_s));  // b2's row still serves
}

TEST_P(DramTimingGate, BankStateGatesCommands) {
  ChannelTiming ch = make();
  EXPECT_FALSE(ch.can_issue(Command::kRead, 0, 7, kT0));  // closed bank
  EXPECT_FALSE(ch.can_issue(Command::kPre, 0, 7, kT0));
  ch.issue(Command::kAct, 0, 7, kT0);
  EXPECT_FALSE(ch.can_issue(Command::kAct, 0, 8, kT0 + 10000));   // already open
  EXPECT_FALSE(ch.can_issue(Command::kRead, 0, 8, kT0 + 10000));  // another row
  EXPECT_TRUE(ch.can_issue(Command::kRead, 0, 7, kT0 + 10000));
}

TEST_P(DramTimingGate, CommandBusOccupancy) {
  ChannelTiming ch = make();
  const uint32_t b2 = other_group_bank(ch);
  ch.issue(Command::kAct, 0, 7, kT0);
  ch.issue(Command::kAct, b2, 7, kT0 + 100);
  ch.issue(Command::kAct, ch.flat_bank(0, 0, 2), 7, kT0 + 200);
  // A column command in the same cycle as a row command: allowed only on a dual command bus.
  const uint64_t t = kT0 + 400;
  ch.issue(Command::kPre, ch.flat_bank(0, 0, 2), 7, t);
  EXPECT_EQ(ch.can_issue(Command::kRead, 0, 7, t), t_.dual_command_bus);
  if (!t_.dual_command_bus) {
    expect_gate(ch, Command::kRead, 0, 7, t + t_.row_command_cycles, "shared bus after PRE");
  }
  // Two row commands: the second waits for the first's bus cycles.
  expect_gate(ch, Command::kPre, b2, 7, t + t_.row_command_cycles, "row bus after PRE");
}

TEST_P(DramTimingGate, IllegalIssueIsAnInternalError) {
  ChannelTiming ch = make();
  ch.issue(Command::kAct, 0, 7, kT0);
  EXPECT_THROW(ch.issue(Command::kRead, 0, 7, kT0 + t_.rcd_read - 1), InternalError);
  EXPECT_THROW(ch.issue(Command::kRead, 0, 8, kT0 + 1000), InternalError);
}

INSTANTIATE_TEST_SUITE_P(Presets, DramTimingGate,
                         ::testing::Values("hbm2", "hbm2-2400", "hbm2e", "hbm3", "ddr3", "lpddr4"));

// Pseudo-channels share the command bus but not the data bus or the tFAW window.
TEST(DramPseudoChannel, OnlyTheCommandBusIsShared) {
  MemoryConfig cfg = preset("hbm3");
  ASSERT_EQ(cfg.org.pseudo_channels, 2);
  const DramTiming& t = cfg.timing;
  ChannelTiming ch(cfg.org, cfg.timing);
  const uint32_t a = ch.flat_bank(0, 0, 0), b = ch.flat_bank(1, 0, 0);
  ch.issue(Command::kAct, a, 3, kT0);
  // The other pseudo-channel's ACT waits only for the row bus (a 2-cycle ACT), not for tRRD.
  EXPECT_FALSE(ch.can_issue(Command::kAct, b, 3, kT0 + t.act_command_cycles - 1));
  EXPECT_TRUE(ch.can_issue(Command::kAct, b, 3, kT0 + t.act_command_cycles));
  ch.issue(Command::kAct, b, 3, kT0 + 100);
  ch.issue(Command::kRead, a, 3, kT0 + 200);
  // A read on the other pseudo-channel needs only the next column-bus cycle.
  EXPECT_FALSE(ch.can_issue(Command::kRead, b, 3, kT0 + 200));
  EXPECT_TRUE(ch.can_issue(Command::kRead, b, 3, kT0 + 200 + t.column_command_cycles));
  // And a REF of pseudo-channel 1 does not block ACTs of pseudo-channel 0.
  ChannelTiming ch2(cfg.org, cfg.timing);
  ch2.issue(Command::kRefresh, b, 0, kT0);
  EXPECT_TRUE(ch2.can_issue(Command::kAct, a, 1, kT0 + 1));
  EXPECT_FALSE(ch2.can_issue(Command::kAct, ch2.flat_bank(1, 2, 1), 1, kT0 + t.rfc - 1));
}

}  // namespace
}  // namespace npusim::dram
