// The JEDEC command timing of one DRAM channel: bank state (open row) and, for every command,
// the earliest cycle each scope (bank, bank group, pseudo-channel, command bus) allows it.
//
// Timing rule: a command issued at cycle t pushes the earliest legal cycle of later commands to
// t + d, for each (earlier command, later command, scope) pair below; a command is legal at
// cycle c when c >= every earliest-cycle bound of its scopes and the bank state permits it.
//   same bank:        ACT->ACT tRC, ACT->PRE tRAS, ACT->RD tRCDRD, ACT->WR tRCDWR, PRE->ACT tRP,
//                     RD->PRE tRTP, WR->PRE tCWL+BL/2+tWR, RDA/WRA->ACT (implied PRE) + tRP
//   same bank group:  ACT->ACT tRRD_L, RD->RD and WR->WR max(tCCD_L, BL/2),
//                     WR->RD tCWL+BL/2+tWTR_L
//   same pseudo-ch.:  ACT->ACT tRRD_S and at most 4 ACTs in any tFAW window, RD->RD and WR->WR
//                     max(tCCD_S, BL/2), RD->WR tCL+BL/2-tCWL+tRTRS, WR->RD tCWL+BL/2+tWTR_S,
//                     PRE->REF tRP, REF->ACT and REF->REF tRFC; REF needs every bank closed
//   per-bank refresh: REFpb needs its bank closed and counts as an ACT for every bound it
//                     meets and sets (tRP after the bank's PRE, tRC, tRRD_S/L, tFAW, the row
//                     bus); the bank takes no ACT or REFpb for tRFCpb after it
//   command bus:      a row command (ACT, PRE, REF) and a column command (RD, WR) per cycle on a
//                     dual bus, one command on a shared bus; each holds its bus for its cycles.
// Pseudo-channels have their own data buses, so column commands of different pseudo-channels
// only meet on the command bus.
//
// Contract: earliest() never returns a cycle at which issue() would refuse the command for
// timing reasons; issue() of a command that is not legal is an internal error.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "arch/dram/dram_config.hpp"

namespace npusim::dram {

enum class Command : uint8_t {
  kAct,
  kPre,
  kRead,
  kWrite,
  kReadAp,
  kWriteAp,
  kRefresh,
  kRefreshBank
};
inline constexpr int kCommandKinds = 8;
const char* command_name(Command c);
inline bool is_column(Command c) {
  return c == Command::kRead || c == Command::kWrite || c == Command::kReadAp ||
         c == Command::kWriteAp;
}

class ChannelTiming {
 public:
  ChannelTiming(const DramOrganization& org, const DramTiming& timing);

  // Banks are numbered (pseudo_channel, bank_group, bank) row-major within the channel.
  // Counts are powers of two (the config guarantees it), so these are shifts, not divisions.
  uint32_t flat_bank(uint32_t pseudo_channel, uint32_t bank_group, uint32_t bank) const {
    return (((pseudo_channel << group_bits_) | bank_group) << bank_bits_) | bank;
  }
  uint32_t pseudo_channel_of(uint32_t flat) const { return flat >> (group_bits_ + bank_bits_); }
  uint32_t group_index_of(uint32_t flat) const { return flat >> bank_bits_; }

  // Commands fall in four timing classes: ACT (and REFpb), PRE, read (RD/RDA), write (WR/WRA);
  // REF is tracked per pseudo-channel on its own.
  static int timing_class(Command c) {
    switch (c) {
      case Command::kAct:
      case Command::kRefreshBank:
        return 0;
      case Command::kPre:
        return 1;
      case Command::kRead:
      case Command::kReadAp:
        return 2;
      case Command::kWrite:
      case Command::kWriteAp:
        return 3;
      case Command::kRefresh:
        return 1;
    }
    return 0;
  }
  // Bounds of a class from the bank itself: these change only when a command goes to that bank.
  uint64_t bank_bound(int cls, uint32_t flat) const { return banks_[flat].next[cls]; }
  // Bounds of a class shared with other banks: bank group, pseudo-channel (tRRD, tFAW, tCCD,
  // turnarounds, tRFC) and command bus.
  uint64_t shared_bound(int cls, uint32_t flat) const {
    const uint64_t g = groups_[group_index_of(flat)].next[cls];
    const uint64_t p = pcs_[pseudo_channel_of(flat)].next[cls];
    const uint64_t bus = bus_free_[bus_of_class_[cls]];
    const uint64_t x = g > p ? g : p;
    return x > bus ? x : bus;
  }
  // Earliest cycle at which `cmd` satisfies every timing constraint (bank state not checked).
  // For kRefresh `flat` may be any bank of the pseudo-channel to refresh.
  uint64_t earliest(Command cmd, uint32_t flat) const {
    if (cmd == Command::kRefresh) {
      const uint64_t r = pcs_[pseudo_channel_of(flat)].next_ref;
      return r > bus_free_[0] ? r : bus_free_[0];
    }
    const int cls = timing_class(cmd);
    const uint64_t b = bank_bound(cls, flat);
    const uint64_t s = shared_bound(cls, flat);
    return b > s ? b : s;
  }

  // Whether the bank state permits `cmd` for `row` (ACT, REFpb: bank closed; PRE: open; column:
  // open at `row`; REF: every bank of the pseudo-channel closed).
  bool state_allows(Command cmd, uint32_t flat, uint32_t row) const {
    const BankState& b = banks_[flat];
    switch (cmd) {
      case Command::kAct:
      case Command::kRefreshBank:
        return !b.open;
      case Command::kPre:
        return b.open;
      case Command::kRead:
      case Command::kWrite:
      case Command::kReadAp:
      case Command::kWriteAp:
        return b.open && b.row == row;
      case Command::kRefresh:
        return pcs_[pseudo_channel_of(flat)].open_banks == 0;
    }
    return false;
  }
  bool can_issue(Command cmd, uint32_t flat, uint32_t row, uint64_t cycle) const {
    return state_allows(cmd, flat, row) && earliest(cmd, flat) <= cycle;
  }
  // Issues `cmd`; an illegal command is an internal error.
  void issue(Command cmd, uint32_t flat, uint32_t row, uint64_t cycle);

  bool is_open(uint32_t flat) const { return banks_[flat].open; }
  uint32_t open_row(uint32_t flat) const { return banks_[flat].row; }
  // Column commands already served by the open row since its ACT (0 right after the ACT).
  uint32_t row_accesses(uint32_t flat) const { return banks_[flat].accesses; }
  int open_banks_in_pseudo_channel(uint32_t pc) const { return pcs_[pc].open_banks; }
  int open_banks() const { return open_banks_; }
  int banks() const { return int(banks_.size()); }
  int banks_per_pseudo_channel() const { return banks_per_pc_; }
  const DramTiming& timing() const { return t_; }

 private:
  // next[class]: earliest cycle of ACT, PRE, read, write at this scope (0 where none applies).
  struct BankState {
    std::array<uint64_t, 4> next{};
    uint32_t row = 0;
    uint32_t accesses = 0;
    bool open = false;
  };
  struct GroupState {
    std::array<uint64_t, 4> next{};
  };
  struct PcState {
    std::array<uint64_t, 4> next{};  // next[0] includes the tFAW window
    uint64_t next_rrd = 0;           // tRRD_S and tRFC alone, without the window
    uint64_t next_ref = 0;
    // Each of the last four ACTs' cycle + tFAW, oldest at faw_pos.
    std::array<uint64_t, 4> faw{};
    int faw_pos = 0;
    int open_banks = 0;
  };

  void occupy_bus(bool column, uint64_t until);
  void close_bank(uint32_t flat);

  DramTiming t_;
  int bank_groups_, banks_per_group_, banks_per_pc_;
  uint32_t group_bits_, bank_bits_;
  std::vector<BankState> banks_;
  std::vector<GroupState> groups_;
  std::vector<PcState> pcs_;
  // [0] row bus (the only one when the command bus is shared), [1] column bus.
  std::array<uint64_t, 2> bus_free_{};
  std::array<int, 4> bus_of_class_{};
  int open_banks_ = 0;
};

}  // namespace npusim::dram
