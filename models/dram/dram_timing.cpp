#include "models/dram/dram_timing.hpp"

#include <algorithm>
#include <bit>

#include "support/error.hpp"

namespace npusim::dram {

const char* command_name(Command c) {
  switch (c) {
    case Command::kAct:
      return "ACT";
    case Command::kPre:
      return "PRE";
    case Command::kRead:
      return "RD";
    case Command::kWrite:
      return "WR";
    case Command::kReadAp:
      return "RDA";
    case Command::kWriteAp:
      return "WRA";
    case Command::kRefresh:
      return "REF";
    case Command::kRefreshBank:
      return "REFpb";
  }
  return "?";
}

ChannelTiming::ChannelTiming(const DramOrganization& org, const DramTiming& timing)
    : t_(timing),
      bank_groups_(org.bank_groups),
      banks_per_group_(org.banks_per_group),
      banks_per_pc_(org.banks_per_pseudo_channel()),
      group_bits_(uint32_t(std::countr_zero(uint32_t(org.bank_groups)))),
      bank_bits_(uint32_t(std::countr_zero(uint32_t(org.banks_per_group)))),
      banks_(size_t(org.banks_per_channel())),
      groups_(size_t(org.pseudo_channels * org.bank_groups)),
      pcs_(size_t(org.pseudo_channels)) {
  const int column_bus = timing.dual_command_bus ? 1 : 0;
  bus_of_class_ = {0, 0, column_bus, column_bus};
}

void ChannelTiming::occupy_bus(bool column, uint64_t until) {
  bus_free_[column && t_.dual_command_bus ? 1 : 0] = until;
}

void ChannelTiming::close_bank(uint32_t flat) {
  BankState& b = banks_[flat];
  b.open = false;
  b.accesses = 0;
  --pcs_[pseudo_channel_of(flat)].open_banks;
  --open_banks_;
}

void ChannelTiming::issue(Command cmd, uint32_t flat, uint32_t row, uint64_t t) {
  NPUSIM_CHECK(state_allows(cmd, flat, row), "dram: {} to bank {} row {} at cycle {}: bank is {}",
               command_name(cmd), flat, row, t,
               banks_[flat].open ? "open at another row or already open" : "closed");
  NPUSIM_CHECK(earliest(cmd, flat) <= t,
               "dram: {} to bank {} at cycle {} violates timing (legal from cycle {})",
               command_name(cmd), flat, t, earliest(cmd, flat));
  enum { kA = 0, kP = 1, kR = 2, kW = 3 };
  BankState& b = banks_[flat];
  GroupState& g = groups_[group_index_of(flat)];
  PcState& p = pcs_[pseudo_channel_of(flat)];
  auto raise = [](uint64_t& bound, uint64_t value) { bound = std::max(bound, value); };
  auto refresh_act_bound = [&]() { p.next[kA] = std::max(p.next_rrd, p.faw[size_t(p.faw_pos)]); };
  // RDA / WRA: the device precharges by itself as soon as tRTP (tWR) and tRAS allow.
  auto auto_precharge = [&] {
    const uint64_t pre = b.next[kP];
    close_bank(flat);
    raise(b.next[kA], pre + t_.rp);
    raise(p.next_ref, pre + t_.rp);
  };
  // The tRRD_S / tRRD_L / tFAW bounds an ACT or a REFpb sets for the pseudo-channel.
  auto act_window = [&] {
    raise(g.next[kA], t + t_.rrd_l);
    raise(p.next_rrd, t + t_.rrd_s);
    if (t_.faw > 0) {
      p.faw[size_t(p.faw_pos)] = t + t_.faw;
      p.faw_pos = (p.faw_pos + 1) & 3;
    }
    refresh_act_bound();
  };
  switch (cmd) {
    case Command::kAct:
      b.open = true;
      b.row = row;
      b.accesses = 0;
      ++p.open_banks;
      ++open_banks_;
      raise(b.next[kA], t + t_.rc);
      raise(b.next[kP], t + t_.ras);
      raise(b.next[kR], t + t_.rcd_read);
      raise(b.next[kW], t + t_.rcd_write);
      act_window();
      occupy_bus(false, t + t_.act_command_cycles);
      break;
    case Command::kPre:
      close_bank(flat);
      raise(b.next[kA], t + t_.rp);
      raise(p.next_ref, t + t_.rp);
      occupy_bus(false, t + t_.row_command_cycles);
      break;
    case Command::kRead:
    case Command::kReadAp:
      ++b.accesses;
      raise(b.next[kP], t + t_.rtp);
      raise(g.next[kR], t + t_.read_to_read_l());
      raise(p.next[kR], t + t_.read_to_read_s());
      raise(p.next[kW], t + t_.read_to_write());
      if (cmd == Command::kReadAp) auto_precharge();
      occupy_bus(true, t + t_.column_command_cycles);
      break;
    case Command::kWrite:
    case Command::kWriteAp:
      ++b.accesses;
      raise(b.next[kP], t + t_.write_to_precharge());
      raise(g.next[kW], t + t_.read_to_read_l());  // tCCD_L between writes, as between reads
      raise(g.next[kR], t + t_.write_to_read_l());
      raise(p.next[kW], t + t_.read_to_read_s());
      raise(p.next[kR], t + t_.write_to_read_s());
      if (cmd == Command::kWriteAp) auto_precharge();
      occupy_bus(true, t + t_.column_command_cycles);
      break;
    case Command::kRefresh:
      raise(p.next_rrd, t + t_.rfc);
      refresh_act_bound();
      raise(p.next_ref, t + t_.rfc);
      occupy_bus(false, t + t_.row_command_cycles);
      break;
    case Command::kRefreshBank:
      raise(b.next[kA], t + t_.rfc_pb);
      act_window();
      occupy_bus(false, t + t_.row_command_cycles);
      break;
  }
}

}  // namespace npusim::dram
