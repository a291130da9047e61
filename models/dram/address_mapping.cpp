#include "models/dram/address_mapping.hpp"

#include <fmt/format.h>

#include <bit>

#include "support/error.hpp"

namespace npusim::dram {

namespace {

// Returns the field index of a two-letter token, or -1.
int field_of(const std::string& token) {
  if (token == "ro") return 0;
  if (token == "ch") return 1;
  if (token == "ra" || token == "pc") return 2;
  if (token == "bg") return 3;
  if (token == "ba") return 4;
  if (token == "co") return 5;
  return -1;
}

uint32_t log2_exact(uint64_t x) { return static_cast<uint32_t>(std::countr_zero(x)); }

}  // namespace

std::string AddressMapper::check_spec(const std::string& spec) {
  if (spec.size() != 12) {
    return fmt::format(
        "expected six two-letter fields (ro, ch, ra or pc, bg, ba, co) from the most to the "
        "least significant bit, like \"rorabgbachco\", got \"{}\"",
        spec);
  }
  std::array<int, kFieldCount> seen{};
  for (size_t i = 0; i < spec.size(); i += 2) {
    int f = field_of(spec.substr(i, 2));
    if (f < 0) {
      return fmt::format("unknown field \"{}\" in \"{}\": expected ro, ch, ra, pc, bg, ba or co",
                         spec.substr(i, 2), spec);
    }
    if (seen[f]++ > 0) {
      return fmt::format("field \"{}\" appears twice in \"{}\"", spec.substr(i, 2), spec);
    }
  }
  return "";
}

AddressMapper::AddressMapper(const DramOrganization& org, const std::string& spec)
    : rows_(uint64_t(org.rows)) {
  NPUSIM_CHECK(check_spec(spec).empty(), "address mapping \"{}\": {}", spec, check_spec(spec));
  std::array<uint64_t, kFieldCount> counts{};
  counts[kRow] = uint64_t(org.rows);
  counts[kChannel] = uint64_t(org.channels);
  counts[kPseudoChannel] = uint64_t(org.pseudo_channels);
  counts[kBankGroup] = uint64_t(org.bank_groups);
  counts[kBank] = uint64_t(org.banks_per_group);
  counts[kColumn] = uint64_t(org.columns);
  uint32_t shift = log2_exact(uint64_t(org.access_bytes()));
  // Walk from the least significant field (the end of the spec) upwards.
  for (int i = int(spec.size()) - 2; i >= 0; i -= 2) {
    int f = field_of(spec.substr(size_t(i), 2));
    shift_[f] = shift;
    mask_[f] = counts[f] - 1;
    shift += log2_exact(counts[f]);
  }
}

DramAddress AddressMapper::map(uint64_t addr) const {
  DramAddress a;
  a.row = static_cast<uint32_t>((addr >> shift_[kRow]) & mask_[kRow]);
  a.channel = static_cast<uint32_t>((addr >> shift_[kChannel]) & mask_[kChannel]);
  a.pseudo_channel =
      static_cast<uint32_t>((addr >> shift_[kPseudoChannel]) & mask_[kPseudoChannel]);
  a.bank_group = static_cast<uint32_t>((addr >> shift_[kBankGroup]) & mask_[kBankGroup]);
  a.bank = static_cast<uint32_t>((addr >> shift_[kBank]) & mask_[kBank]);
  a.column = static_cast<uint32_t>((addr >> shift_[kColumn]) & mask_[kColumn]);
  return a;
}

uint64_t AddressMapper::unmap(const DramAddress& a) const {
  return (uint64_t(a.row % rows_) << shift_[kRow]) | (uint64_t(a.channel) << shift_[kChannel]) |
         (uint64_t(a.pseudo_channel) << shift_[kPseudoChannel]) |
         (uint64_t(a.bank_group) << shift_[kBankGroup]) | (uint64_t(a.bank) << shift_[kBank]) |
         (uint64_t(a.column) << shift_[kColumn]);
}

}  // namespace npusim::dram
