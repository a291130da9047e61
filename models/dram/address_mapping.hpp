// Physical address -> (channel, pseudo-channel, bank group, bank, row, column) by bit fields.
//
// The spec lists the fields from the most to the least significant bit with two letters each,
// as DRAMsim3's `address_mapping` does: "rorabgbachco" = row | pseudo-channel | bank group |
// bank | channel | column | byte offset. "ra" (DRAMsim3's rank) and "pc" both name the
// pseudo-channel. The low log2(access_bytes) bits are the offset inside one burst. Each field
// is log2(count) bits wide; the row takes what is left and wraps modulo the row count.
//
// Contract: map() is a pure function of the address; every address maps to a valid location,
// and two addresses in different bursts below capacity_bytes() map to different locations.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "models/dram/dram_config.hpp"

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
  // `org` must come from a validated MemoryConfig, `spec` must pass check_spec().
  AddressMapper(const DramOrganization& org, const std::string& spec);

  DramAddress map(uint64_t addr) const;
  // The inverse of map() for the burst's first byte (tests and pattern generators use it).
  uint64_t unmap(const DramAddress& a) const;

  // An empty string when `spec` is a valid mapping, otherwise what is wrong with it.
  static std::string check_spec(const std::string& spec);

 private:
  enum Field { kRow, kChannel, kPseudoChannel, kBankGroup, kBank, kColumn, kFieldCount };
  std::array<uint32_t, kFieldCount> shift_{};
  std::array<uint64_t, kFieldCount> mask_{};
  uint64_t rows_ = 1;
};

}  // namespace npusim::dram
