// Physical address -> (channel, pseudo-channel, bank group, bank, row, column) by bit fields.
//
// The spec lists fields from the most to the least significant bit with two letters each, as
// DRAMsim3's `address_mapping` does: "rorabgbachco" = row | pseudo-channel | bank group | bank |
// channel | column | byte offset. "ra" (DRAMsim3's rank) and "pc" both name the pseudo-channel.
// A field may be split: a letter pair followed by a number takes that many of the field's bits,
// lowest first as the spec is read from its end ("roco3babgraco2" puts the column's low 2 bits
// lowest and its next 3 bits above the bank); an unnumbered token takes the rest. After a ':'
// come XOR rules "target^source<bit>" separated by commas: target ^= source >> bit (masked to the
// target's width), as Ramulator 2's MOP4CLXOR mapping does ("ra^co0,bg^co1,ba^co3"). A field
// with a single value (one channel, say) may be left out. The low
// log2(access_bytes) bits are the offset inside one burst; the row wraps modulo the row count.
//
// Contract: map() is a pure function of the address; every address maps to a valid location,
// and two addresses in different bursts below the capacity map to different locations
// (unmap(map(a)) == a without its offset bits).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "arch/dram/dram_config.hpp"

namespace npusim::dram {

struct DramAddress {
  uint32_t channel = 0;
  uint32_t pseudo_channel = 0;
  uint32_t bank_group = 0;
  uint32_t bank = 0;  // within its bank group
  uint32_t row = 0;
  uint32_t column = 0;
};

class AddressMapper {
 public:
  // `org` must come from a validated MemoryConfig and `spec` must pass check_spec(spec, org).
  AddressMapper(const DramOrganization& org, const std::string& spec);

  DramAddress map(uint64_t addr) const {
    if (!simple_) return map_fields(addr);
    // Inline: the memory decodes every burst.
    DramAddress a;
    a.row = uint32_t((addr >> shift_[kRow]) & mask_[kRow]);
    a.channel = uint32_t((addr >> shift_[kChannel]) & mask_[kChannel]);
    a.pseudo_channel = uint32_t((addr >> shift_[kPseudoChannel]) & mask_[kPseudoChannel]);
    a.bank_group = uint32_t((addr >> shift_[kBankGroup]) & mask_[kBankGroup]);
    a.bank = uint32_t((addr >> shift_[kBank]) & mask_[kBank]);
    a.column = uint32_t((addr >> shift_[kColumn]) & mask_[kColumn]);
    return a;
  }
  // The inverse of map() for the burst's first byte (tests and pattern generators use it).
  uint64_t unmap(const DramAddress& a) const;

  // An empty string when `spec` is a valid mapping for `org`, otherwise what is wrong with it.
  static std::string check_spec(const std::string& spec, const DramOrganization& org);

 private:
  enum Field { kRow, kChannel, kPseudoChannel, kBankGroup, kBank, kColumn, kFieldCount };
  struct Segment {
    uint32_t addr_shift;
    uint32_t bits;
    uint32_t field_shift;
  };
  struct XorRule {
    int target, source;
    uint32_t source_bit;
  };
  uint64_t extract(int field, uint64_t addr) const;
  // map() for split fields or XOR rules.
  DramAddress map_fields(uint64_t addr) const;
  // Parses and validates; fills the members when `self` is not null.
  static std::string parse(const std::string& spec, const DramOrganization& org,
                           AddressMapper* self);

  std::array<std::vector<Segment>, kFieldCount> segments_;
  std::array<uint64_t, kFieldCount> mask_{};
  std::vector<XorRule> xor_;
  // Single-segment fields without XOR (every stock preset): one shift and mask each.
  bool simple_ = true;
  std::array<uint32_t, kFieldCount> shift_{};
};

}  // namespace npusim::dram
