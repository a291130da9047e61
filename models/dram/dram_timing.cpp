#include "models/dram/dram_timing.hpp"

#include <algorithm>

#include "support/error.hpp"

namespace npusim::dram {

const char* command_name(Command c) {
  switch (c) {
    case Command::kAct: return "ACT";
    case Command::kPre: return "PRE";
    case Command::kRead: return "RD";
    case Command::kWrite: return "WR";
    case Command::kReadAp: return "RDA";
    case Command::kWriteAp: return "WRA";
    case Command::kRefresh: return "REF";
  }
  return "?";
}

ChannelTiming::ChannelTiming(const DramOrganization& org, const DramTiming& timing)
    : t_(timing),
      bank_groups_(org.bank_groups),
      banks_per_group_(org.banks_per_group),
      banks_per_pc_(org.banks_per_pseudo_channel()),
      banks_(size_t(org.banks_per_channel())),
      groups_(size_t(org.pseudo_channels * org.bank_groups)),
      pcs_(size_t(org.pseudo_channels)) {}

bool ChannelTiming::state_allows(Command cmd, uint32_t flat, uint32_t row) const {
  const BankState& b = banks_[flat];
  switch (cmd) {
    case Command::kAct: return !b.open;
    case Command::kPre: return b.open;
    case Command::kRead:
    case Command::kWrite:
    case Command::kReadAp:
    case Command::kWriteAp: return b.open && b.row == row;
    case Command::kRefresh: return pcs_[pseudo_channel_of(flat)].open_banks == 0;
  }
  return false;
}

void ChannelTiming::occupy_bus(bool column, uint64_t until) {
  if (column && t_.dual_command_bus) {
    col_bus_free_ = until;
  } else {
    row_bus_free_ = until;
  }
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
  NPUSIM_CHECK(earliest(cmd, flat) <= t, "dram: {} to bank {} at cycle {} violates timing (legal "
               "from cycle {})", command_name(cmd), flat, t, earliest(cmd, flat));
  BankState& b = banks_[flat];
  PcState& p = pcs_[pseudo_channel_of(flat)];
  auto raise = [](uint64_t& bound, uint64_t value) { bound = std::max(bound, value); };
  switch (cmd) {
    case Command::kAct: {
      GroupState& g = groups_[group_index_of(flat)];
      b.open = true;
      b.row = row;
      b.accesses = 0;
      ++p.open_banks;
      ++open_banks_;
      raise(b.next_act, t + t_.rc);
      raise(b.next_pre, t + t_.ras);
      raise(b.next_read, t + t_.rcd_read);
      raise(b.next_write, t + t_.rcd_write);
      raise(g.next_act, t + t_.rrd_l);
      raise(p.next_act, t + t_.rrd_s);
      if (t_.faw > 0) {
        p.faw[p.faw_pos] = t + t_.faw;
        p.faw_pos = (p.faw_pos + 1) & 3;
      }
      occupy_bus(false, t + t_.act_command_cycles);
      break;
    }
    case Command::kPre:
      close_bank(flat);
      raise(b.next_act, t + t_.rp);
      raise(p.next_ref, t + t_.rp);
      occupy_bus(false, t + t_.row_command_cycles);
      break;
    case Command::kRead:
    case Command::kReadAp: {
      GroupState& g = groups_[group_index_of(flat)];
      ++b.accesses;
      raise(b.next_pre, t + t_.rtp);
      raise(g.next_read, t + t_.read_to_read_l());
      raise(p.next_read, t + t_.read_to_read_s());
      raise(p.next_write, t + t_.read_to_write());
      if (cmd == Command::kReadAp) {
        // The device precharges by itself as soon as tRTP and tRAS allow.
        uint64_t pre = b.next_pre;
        close_bank(flat);
        raise(b.next_act, pre + t_.rp);
        raise(p.next_ref, pre + t_.rp);
      }
      occupy_bus(true, t + t_.column_command_cycles);
      break;
    }
    case Command::kWrite:
    case Command::kWriteAp: {
      GroupState& g = groups_[group_index_of(flat)];
      ++b.accesses;
      raise(b.next_pre, t + t_.write_to_precharge());
      raise(g.next_write, t + t_.read_to_read_l());
      raise(g.next_read, t + t_.write_to_read_l());
      raise(p.next_write, t + t_.read_to_read_s());
      raise(p.next_read, t + t_.write_to_read_s());
      if (cmd == Command::kWriteAp) {
        uint64_t pre = b.next_pre;
        close_bank(flat);
        raise(b.next_act, pre + t_.rp);
        raise(p.next_ref, pre + t_.rp);
      }
      occupy_bus(true, t + t_.column_command_cycles);
      break;
    }
    case Command::kRefresh:
      raise(p.next_act, t + t_.rfc);
      raise(p.next_ref, t + t_.rfc);
      occupy_bus(false, t + t_.row_command_cycles);
      break;
  }
}

}  // namespace npusim::dram
