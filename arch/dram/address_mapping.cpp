#include "arch/dram/address_mapping.hpp"

#include <fmt/format.h>

#include <bit>
#include <cctype>

#include "support/error.hpp"

namespace npusim::dram {

namespace {

constexpr const char* kFieldNames[] = {"ro", "ch", "pc", "bg", "ba", "co"};

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

struct Token {
  int field;
  int bits;  // -1: the rest of the field
  std::string text;
};

}  // namespace

std::string AddressMapper::parse(const std::string& spec, const DramOrganization& org,
                                 AddressMapper* self) {
  const std::string grammar =
      "expected fields ro, ch, ra or pc, bg, ba, co from the most to the least significant bit, "
      "each optionally followed by a bit count, then optionally ':' and XOR rules like "
      "\"ra^co0\" (e.g. \"rorabgbachco\" or \"roco3babgraco2:ra^co0,bg^co1,ba^co3\")";
  const size_t colon = spec.find(':');
  const std::string fields = spec.substr(0, colon);
  std::vector<Token> tokens;
  for (size_t i = 0; i < fields.size();) {
    if (i + 2 > fields.size()) return fmt::format("{}, got \"{}\"", grammar, spec);
    const std::string name = fields.substr(i, 2);
    const int f = field_of(name);
    if (f < 0) {
      return fmt::format("unknown field \"{}\" in \"{}\": expected ro, ch, ra, pc, bg, ba or co",
                         name, spec);
    }
    i += 2;
    int bits = -1;
    size_t start = i;
    while (i < fields.size() && std::isdigit(static_cast<unsigned char>(fields[i]))) ++i;
    if (i > start) bits = std::stoi(fields.substr(start, std::min<size_t>(i - start, 3)));
    tokens.push_back({f, bits, fields.substr(start - 2, i - start + 2)});
  }
  std::array<uint64_t, kFieldCount> counts = {
      uint64_t(org.rows),        uint64_t(org.channels),        uint64_t(org.pseudo_channels),
      uint64_t(org.bank_groups), uint64_t(org.banks_per_group), uint64_t(org.columns)};
  std::array<int, kFieldCount> counted{}, uncounted{}, appearances{};
  for (const Token& t : tokens) {
    ++appearances[size_t(t.field)];
    if (t.bits < 0) {
      if (uncounted[size_t(t.field)]++ > 0) {
        return fmt::format("field \"{}\" appears twice in \"{}\"", t.text, spec);
      }
    } else {
      counted[size_t(t.field)] += t.bits;
    }
  }
  for (int f = 0; f < kFieldCount; ++f) {
    const int width = int(log2_exact(counts[size_t(f)]));
    if (appearances[size_t(f)] == 0 && width > 0) {
      return fmt::format("field \"{}\" is missing in \"{}\": {}", kFieldNames[f], spec, grammar);
    }
    if (counted[size_t(f)] > width || (uncounted[size_t(f)] == 0 && counted[size_t(f)] != width)) {
      return fmt::format("\"{}\" gives field \"{}\" {} bits, but it has {} ({} values)", spec,
                         kFieldNames[f], counted[size_t(f)], width, counts[size_t(f)]);
    }
  }
  std::vector<XorRule> rules;
  if (colon != std::string::npos) {
    std::string rest = spec.substr(colon + 1);
    size_t pos = 0;
    while (pos <= rest.size()) {
      const size_t comma = rest.find(',', pos);
      const std::string rule =
          rest.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      const bool shaped = rule.size() >= 6 && rule[2] == '^' &&
                          std::isdigit(static_cast<unsigned char>(rule[5])) && rule.size() <= 8;
      const int target = shaped ? field_of(rule.substr(0, 2)) : -1;
      const int source = shaped ? field_of(rule.substr(3, 2)) : -1;
      bool digits = shaped;
      for (size_t k = 5; shaped && k < rule.size(); ++k) {
        digits = digits && std::isdigit(static_cast<unsigned char>(rule[k]));
      }
      if (target < 0 || source < 0 || !digits || target == source) {
        return fmt::format(
            "bad XOR rule \"{}\" in \"{}\": expected \"<target>^<source><bit>\" with two "
            "different fields, like \"ra^co0\"",
            rule, spec);
      }
      rules.push_back({target, source, uint32_t(std::stoi(rule.substr(5)))});
      if (comma == std::string::npos) break;
      pos = comma + 1;
    }
    for (const XorRule& r : rules) {
      for (const XorRule& o : rules) {
        if (r.source == o.target) {
          return fmt::format("XOR rules in \"{}\" use field \"{}\" both as a source and a target",
                             spec, kFieldNames[r.source]);
        }
      }
    }
  }
  if (self == nullptr) return "";

  // Lay the segments out from the least significant bit upwards.
  uint32_t shift = log2_exact(uint64_t(org.access_bytes()));
  std::array<uint32_t, kFieldCount> field_shift{};
  for (auto it = tokens.rbegin(); it != tokens.rend(); ++it) {
    const size_t f = size_t(it->field);
    const uint32_t width = log2_exact(counts[f]);
    const uint32_t bits = it->bits >= 0 ? uint32_t(it->bits) : width - uint32_t(counted[f]);
    self->segments_[f].push_back({shift, bits, field_shift[f]});
    field_shift[f] += bits;
    shift += bits;
  }
  for (size_t f = 0; f < kFieldCount; ++f) {
    if (self->segments_[f].empty()) self->segments_[f].push_back({0, 0, 0});  // one value only
    self->mask_[f] = counts[f] - 1;
    if (self->segments_[f].size() != 1) self->simple_ = false;
    self->shift_[f] = self->segments_[f].front().addr_shift;
  }
  self->xor_ = rules;
  if (!rules.empty()) self->simple_ = false;
  return "";
}

std::string AddressMapper::check_spec(const std::string& spec, const DramOrganization& org) {
  return parse(spec, org, nullptr);
}

AddressMapper::AddressMapper(const DramOrganization& org, const std::string& spec) {
  const std::string why = parse(spec, org, this);
  NPUSIM_CHECK(why.empty(), "address mapping \"{}\": {}", spec, why);
}

uint64_t AddressMapper::extract(int field, uint64_t addr) const {
  uint64_t v = 0;
  for (const Segment& s : segments_[size_t(field)]) {
    v |= ((addr >> s.addr_shift) & ((uint64_t{1} << s.bits) - 1)) << s.field_shift;
  }
  return v & mask_[size_t(field)];
}

DramAddress AddressMapper::map_fields(uint64_t addr) const {
  std::array<uint64_t, kFieldCount> v;
  for (int f = 0; f < kFieldCount; ++f) v[size_t(f)] = extract(f, addr);
  for (const XorRule& r : xor_) {
    v[size_t(r.target)] ^= (v[size_t(r.source)] >> r.source_bit) & mask_[size_t(r.target)];
  }
  DramAddress a;
  a.row = uint32_t(v[kRow]);
  a.channel = uint32_t(v[kChannel]);
  a.pseudo_channel = uint32_t(v[kPseudoChannel]);
  a.bank_group = uint32_t(v[kBankGroup]);
  a.bank = uint32_t(v[kBank]);
  a.column = uint32_t(v[kColumn]);
  return a;
}

uint64_t AddressMapper::unmap(const DramAddress& a) const {
  std::array<uint64_t, kFieldCount> v = {a.row,        a.channel, a.pseudo_channel,
                                         a.bank_group, a.bank,    a.column};
  for (size_t f = 0; f < kFieldCount; ++f) v[f] &= mask_[f];
  // Sources are never targets, so undoing each XOR needs only the stored source values.
  for (const XorRule& r : xor_) {
    v[size_t(r.target)] ^= (v[size_t(r.source)] >> r.source_bit) & mask_[size_t(r.target)];
  }
  uint64_t addr = 0;
  for (size_t f = 0; f < kFieldCount; ++f) {
    for (const Segment& s : segments_[f]) {
      addr |= ((v[f] >> s.field_shift) & ((uint64_t{1} << s.bits) - 1)) << s.addr_shift;
    }
  }
  return addr;
}

}  // namespace npusim::dram
