#include "arch/compressed_weights.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <queue>
#include <utility>

#include "arch/activation.hpp"
#include "arch/fp8.hpp"
#include "support/error.hpp"

namespace npusim {

namespace {

bool is_zero(const uint8_t* e, uint32_t bytes) {
  for (uint32_t b = 0; b < bytes; ++b) {
    if (e[b] != 0) return false;
  }
  return true;
}

void put_index(std::vector<uint8_t>& out, uint32_t v, uint32_t bytes) {
  out.push_back(uint8_t(v & 0xff));
  if (bytes == 2) out.push_back(uint8_t(v >> 8));
}

}  // namespace

const char* to_string(WeightFormat f) {
  switch (f) {
    case WeightFormat::kDense:
      return "dense";
    case WeightFormat::kBitmap:
      return "bitmap";
    case WeightFormat::kCsr:
      return "csr";
    case WeightFormat::kInt4Groups:
      return "int4-groups";
    case WeightFormat::kHuffman:
      return "huffman";
    case WeightFormat::kFp8E4M3:
      return "fp8-e4m3";
    case WeightFormat::kFp8E5M2:
      return "fp8-e5m2";
    case WeightFormat::kInt4Bf16:
      return "int4-bf16";
  }
  return "?";
}

namespace {

std::vector<uint8_t> int4_groups(std::span<const uint8_t> dense, const WeightBoxShape& s,
                                 std::span<const uint8_t> scales) {
  NPUSIM_CHECK(s.element_bytes == 1 && s.row_elements % 2 == 0 && s.group_rows > 0 &&
                   s.first_row < s.group_rows &&
                   scales.size() == uint64_t(s.groups()) * s.row_elements,
               "int4-groups weight box: {} rows of {} elements of {} bytes, groups of {} from row "
               "{}, {} scale bytes",
               s.rows, s.row_elements, s.element_bytes, s.group_rows, s.first_row, scales.size());
  std::vector<uint8_t> out(scales.begin(), scales.end());
  out.reserve(scales.size() + s.dense_bytes() / 2);
  for (uint32_t r = 0; r < s.rows; ++r) {
    const uint8_t* scale =
        scales.data() + uint64_t((s.first_row + r) / s.group_rows) * s.row_elements;
    for (uint32_t j = 0; j < s.row_elements; j += 2) {
      int z[2];
      for (int h = 0; h < 2; ++h) {
        const int w = int8_t(dense[uint64_t(r) * s.row_elements + j + h]);
        const int q = scale[j + h];
        NPUSIM_CHECK(q > 0 && w % q == 0 && w / q >= -8 && w / q <= 7,
                     "int4-groups weight box: row {} column {}: {} is not scale {} x an int4", r,
                     j + h, w, q);
        z[h] = w / q;
      }
      out.push_back(uint8_t((uint8_t(z[0]) & 0x0f) | (uint8_t(z[1]) << 4)));
    }
  }
  return out;
}

uint16_t bf16_at(const uint8_t* p) { return uint16_t(p[0] | p[1] << 8); }

// The bytes of the scale of row r's group (compressed_weights.hpp) in a box's scale rows.
uint64_t scale_row(const WeightBoxShape& s, uint32_t r) {
  return uint64_t((s.first_row + r) / s.group_rows) * s.row_elements * s.element_bytes;
}

void check_int4_bf16_shape(const WeightBoxShape& s) {
  NPUSIM_CHECK(s.element_bytes == 2 && s.group_rows > 0 && s.first_row < s.group_rows,
               "int4-bf16 weight box: {} rows of {} elements of {} bytes, groups of {} from row {}",
               s.rows, s.row_elements, s.element_bytes, s.group_rows, s.first_row);
}

// W4A16 (compressed_weights.hpp): each element z x s rounded to bf16, stored as z; the z of
// element i (row-major) in nibble i.
std::vector<uint8_t> int4_bf16(std::span<const uint8_t> dense, const WeightBoxShape& s,
                               std::span<const uint8_t> scales) {
  check_int4_bf16_shape(s);
  NPUSIM_CHECK(scales.size() == uint64_t(s.groups()) * s.row_elements * 2,
               "int4-bf16 weight box: {} scale bytes for {} groups of {} columns", scales.size(),
               s.groups(), s.row_elements);
  std::vector<uint8_t> out(scales.begin(), scales.end());
  out.resize(int4_box_bytes(s), 0);
  uint8_t* z_bytes = out.data() + scales.size();
  for (uint32_t r = 0; r < s.rows; ++r) {
    const uint8_t* scale = scales.data() + scale_row(s, r);
    for (uint32_t j = 0; j < s.row_elements; ++j) {
      const uint64_t i = uint64_t(r) * s.row_elements + j;
      const uint16_t w = bf16_at(dense.data() + 2 * i), q = bf16_at(scale + 2 * j);
      // z x s rounded to bf16 is monotone in z and s / 64 from z x s at most (|z| <= 8), so the
      // z nearest w / s is the only candidate.
      const float sf = bf16_bits_to_float(q);
      const float zf = sf != 0.0f ? std::round(bf16_bits_to_float(w) / sf) : 0.0f;
      const int z = int(std::clamp(zf, -8.0f, 7.0f));
      NPUSIM_CHECK(int4_bf16_weight(z, q) == w,
                   "int4-bf16 weight box: row {} column {}: {} is not scale {} x an int4", r, j,
                   bf16_bits_to_float(w), sf);
      z_bytes[i / 2] |= uint8_t((uint8_t(z) & 0x0f) << (i % 2 * 4));
    }
  }
  return out;
}

void expand_int4_bf16(std::span<const uint8_t> in, const WeightBoxShape& s, uint8_t* dense) {
  check_int4_bf16_shape(s);
  const uint64_t scale_bytes = uint64_t(s.groups()) * s.row_elements * 2;
  NPUSIM_CHECK(in.size() >= int4_box_bytes(s), "int4-bf16 weight box: {} bytes, expected {}",
               in.size(), int4_box_bytes(s));
  for (uint32_t r = 0; r < s.rows; ++r) {
    const uint8_t* scale = in.data() + scale_row(s, r);
    for (uint32_t j = 0; j < s.row_elements; ++j) {
      const uint64_t i = uint64_t(r) * s.row_elements + j;
      const uint8_t nibble = uint8_t(in[scale_bytes + i / 2] >> (i % 2 * 4)) & 0x0f;
      const uint16_t w =
          int4_bf16_weight(int(int8_t(uint8_t(nibble << 4)) >> 4), bf16_at(scale + 2 * j));
      dense[2 * i] = uint8_t(w & 0xff);
      dense[2 * i + 1] = uint8_t(w >> 8);
    }
  }
}

Fp8Format fp8_of(WeightFormat f) {
  return f == WeightFormat::kFp8E4M3 ? Fp8Format::kE4M3 : Fp8Format::kE5M2;
}

bool is_fp8(WeightFormat f) { return f == WeightFormat::kFp8E4M3 || f == WeightFormat::kFp8E5M2; }

// Each bf16 element v x 2^-scale_exp as the byte of v (exact, or an internal error).
std::vector<uint8_t> fp8_box(std::span<const uint8_t> dense, const WeightBoxShape& s,
                             WeightFormat f) {
  NPUSIM_CHECK(s.element_bytes == 2, "fp8 weight box of {}-byte elements", s.element_bytes);
  const Fp8Format fp8 = fp8_of(f);
  const uint64_t n = uint64_t(s.rows) * s.row_elements;
  std::vector<uint8_t> out(n);
  for (uint64_t i = 0; i < n; ++i) {
    const uint16_t bits = uint16_t(dense[2 * i] | dense[2 * i + 1] << 8);
    const float w = bf16_bits_to_float(bits);
    out[i] = float_to_fp8(std::ldexp(w, s.scale_exp), fp8);
    NPUSIM_CHECK(std::ldexp(fp8_to_float(out[i], fp8), -s.scale_exp) == w,
                 "{} weight box: element {} ({}) is not an fp8 value x 2^{}", to_string(f), i, w,
                 -s.scale_exp);
  }
  return out;
}

// The Huffman format (compressed_weights.hpp): code lengths, canonical codes, the box.

using Lengths = std::array<uint8_t, 256>;

// Huffman code lengths of the byte values from their counts (0 for a value that does not occur;
// a lone value gets 1). Ties are broken by the order of creation, so the lengths depend on the
// counts only. A tree deeper than kHuffmanMaxBits is built again from the counts halved (rounded
// up, so every value that occurs keeps a count): all counts 1 give depth 8, so this ends.
Lengths huffman_lengths(std::array<uint64_t, 256> counts) {
  Lengths len{};
  int present = 0, lone = 0;
  for (int v = 0; v < 256; ++v) {
    if (counts[v] > 0) ++present, lone = v;
  }
  if (present == 0) return len;
  if (present == 1) {
    len[lone] = 1;
    return len;
  }
  for (;;) {
    using Node = std::pair<uint64_t, int>;  // (count, node): leaves 0..255, inner nodes after
    std::priority_queue<Node, std::vector<Node>, std::greater<>> queue;
    std::vector<int> parent(512, -1);
    for (int v = 0; v < 256; ++v) {
      if (counts[v] > 0) queue.push({counts[v], v});
    }
    int next = 256;
    while (queue.size() > 1) {
      const Node a = queue.top();
      queue.pop();
      const Node b = queue.top();
      queue.pop();
      parent[a.second] = parent[b.second] = next;
      queue.push({a.first + b.first, next++});
    }
    int deepest = 0;
    for (int v = 0; v < 256; ++v) {
      if (counts[v] == 0) continue;
      int depth = 0;
      for (int n = v; parent[n] >= 0; n = parent[n]) ++depth;
      len[v] = uint8_t(std::min(depth, 255));
      deepest = std::max(deepest, depth);
    }
    if (deepest <= kHuffmanMaxBits) return len;
    for (uint64_t& c : counts) c = (c + 1) / 2;
  }
}

// Canonical codes of `len` (compressed_weights.hpp). Checks the lengths describe a prefix code
// (Kraft's sum at most 1) and value 0 has none.
std::array<uint32_t, 256> canonical_codes(const Lengths& len) {
  std::array<uint32_t, kHuffmanMaxBits + 1> per_length{};
  uint64_t kraft = 0;  // in units of 2^-kHuffmanMaxBits
  for (int v = 0; v < 256; ++v) {
    NPUSIM_CHECK(len[v] <= kHuffmanMaxBits, "huffman weight box: value {} has a code of {} bits", v,
                 len[v]);
    if (len[v] == 0) continue;
    ++per_length[len[v]];
    kraft += uint64_t{1} << (kHuffmanMaxBits - len[v]);
  }
  NPUSIM_CHECK(len[0] == 0 && kraft <= (uint64_t{1} << kHuffmanMaxBits),
               "huffman weight box: the code lengths are not a prefix code");
  std::array<uint32_t, kHuffmanMaxBits + 1> next{};
  uint32_t code = 0;
  for (int bits = 1; bits <= kHuffmanMaxBits; ++bits) {
    code = (code + per_length[bits - 1]) << 1;
    next[bits] = code;
  }
  std::array<uint32_t, 256> codes{};
  for (int v = 0; v < 256; ++v) {
    if (len[v] > 0) codes[v] = next[len[v]]++;
  }
  return codes;
}

std::vector<uint8_t> huffman(std::span<const uint8_t> dense, const WeightBoxShape& s) {
  NPUSIM_CHECK(s.element_bytes == 1, "huffman weight box of {}-byte elements (int8 only)",
               s.element_bytes);
  std::array<uint64_t, 256> counts{};
  for (uint8_t b : dense) {
    if (b != 0) ++counts[b];
  }
  const Lengths len = huffman_lengths(counts);
  const std::array<uint32_t, 256> codes = canonical_codes(len);
  std::vector<uint8_t> out(kHuffmanTableBytes);
  for (uint32_t i = 0; i < kHuffmanTableBytes; ++i) {
    out[i] = uint8_t(len[2 * i] | len[2 * i + 1] << 4);
  }
  for (uint32_t r = 0; r < s.rows; ++r) {
    const uint8_t* row = dense.data() + uint64_t(r) * s.row_elements;
    const size_t bits = out.size();
    out.resize(bits + (s.row_elements + 7) / 8, 0);
    for (uint32_t j = 0; j < s.row_elements; ++j) {
      if (row[j] != 0) out[bits + j / 8] |= uint8_t(1u << (j % 8));
    }
    uint32_t acc = 0;  // bits not yet written, in its low `pending` bits
    int pending = 0;
    for (uint32_t j = 0; j < s.row_elements; ++j) {
      if (row[j] == 0) continue;
      acc = acc << len[row[j]] | codes[row[j]];
      pending += len[row[j]];
      while (pending >= 8) {
        pending -= 8;
        out.push_back(uint8_t(acc >> pending));
      }
      acc &= (1u << pending) - 1;
    }
    if (pending > 0) out.push_back(uint8_t(acc << (8 - pending)));
  }
  return out;
}

void expand_huffman(std::span<const uint8_t> in, const WeightBoxShape& s, uint8_t* dense) {
  NPUSIM_CHECK(s.element_bytes == 1 && in.size() >= kHuffmanTableBytes,
               "huffman weight box: {} bytes of {}-byte elements", in.size(), s.element_bytes);
  Lengths len{};
  for (uint32_t i = 0; i < kHuffmanTableBytes; ++i) {
    len[2 * i] = in[i] & 0x0f;
    len[2 * i + 1] = in[i] >> 4;
  }
  canonical_codes(len);  // checks the table
  // Decoding: per length, its first code, how many values have it and where they start in the
  // values sorted by (length, value).
  std::array<uint32_t, kHuffmanMaxBits + 1> first{}, count{}, start{};
  std::vector<uint8_t> sorted;
  uint32_t code = 0;
  for (int bits = 1; bits <= kHuffmanMaxBits; ++bits) {
    code <<= 1;
    first[bits] = code;
    start[bits] = uint32_t(sorted.size());
    for (int v = 0; v < 256; ++v) {
      if (len[v] == bits) sorted.push_back(uint8_t(v));
    }
    count[bits] = uint32_t(sorted.size()) - start[bits];
    code += count[bits];
  }
  std::memset(dense, 0, s.dense_bytes());
  size_t pos = kHuffmanTableBytes;
  for (uint32_t r = 0; r < s.rows; ++r) {
    const size_t bitmap = (s.row_elements + 7) / 8;
    NPUSIM_CHECK(pos + bitmap <= in.size(), "huffman weight box: row {} ends past byte {}", r,
                 in.size());
    const uint8_t* bits = in.data() + pos;
    pos += bitmap;
    int bit = 8;  // bits of in[pos - 1] not read yet (none before the row's first byte)
    auto next_bit = [&]() {
      if (bit == 8) {
        NPUSIM_CHECK(pos < in.size(), "huffman weight box: row {} ends past byte {}", r, in.size());
        ++pos;
        bit = 0;
      }
      return (in[pos - 1] >> (7 - bit++)) & 1u;
    };
    for (uint32_t j = 0; j < s.row_elements; ++j) {
      if ((bits[j / 8] >> (j % 8) & 1) == 0) continue;
      uint32_t c = 0;
      int l = 1;
      for (;; ++l) {
        NPUSIM_CHECK(l <= kHuffmanMaxBits, "huffman weight box: row {}: no code matches", r);
        c = c << 1 | next_bit();
        if (c - first[l] < count[l]) break;
      }
      dense[uint64_t(r) * s.row_elements + j] = sorted[start[l] + c - first[l]];
    }
  }
}
}  // namespace

uint16_t int4_bf16_weight(int z, uint16_t scale) {
  NPUSIM_CHECK(z >= -8 && z <= 7, "int4 value {}", z);
  return float_to_bf16_bits(float(z) * bf16_bits_to_float(scale));
}

std::vector<uint8_t> compress_weight_box(std::span<const uint8_t> dense, const WeightBoxShape& s,
                                         WeightFormat f, std::span<const uint8_t> group_scales) {
  NPUSIM_CHECK(dense.size() == s.dense_bytes(), "weight box of {} bytes, expected {}", dense.size(),
               s.dense_bytes());
  if (f == WeightFormat::kDense) return {dense.begin(), dense.end()};
  if (f == WeightFormat::kInt4Groups) return int4_groups(dense, s, group_scales);
  if (f == WeightFormat::kInt4Bf16) return int4_bf16(dense, s, group_scales);
  if (f == WeightFormat::kHuffman) return huffman(dense, s);
  if (is_fp8(f)) return fp8_box(dense, s, f);
  const uint32_t eb = s.element_bytes;
  const uint64_t row_bytes = uint64_t(s.row_elements) * eb;
  const uint32_t ib = csr_index_bytes(s.row_elements);
  std::vector<uint8_t> out;
  out.reserve(dense.size() / 2);
  std::vector<uint32_t> nz;
  for (uint32_t r = 0; r < s.rows; ++r) {
    const uint8_t* row = dense.data() + r * row_bytes;
    nz.clear();
    for (uint32_t j = 0; j < s.row_elements; ++j) {
      if (!is_zero(row + uint64_t(j) * eb, eb)) nz.push_back(j);
    }
    if (f == WeightFormat::kBitmap) {
      const size_t bits = out.size();
      out.resize(bits + (s.row_elements + 7) / 8, 0);
      for (uint32_t j : nz) out[bits + j / 8] |= uint8_t(1u << (j % 8));
    } else {
      put_index(out, uint32_t(nz.size()), ib);
      for (uint32_t j : nz) put_index(out, j, ib);
    }
    for (uint32_t j : nz) out.insert(out.end(), row + uint64_t(j) * eb, row + uint64_t(j + 1) * eb);
  }
  return out;
}

void expand_weight_box(std::span<const uint8_t> in, const WeightBoxShape& s, WeightFormat f,
                       uint8_t* dense) {
  const uint32_t eb = s.element_bytes;
  const uint64_t row_bytes = uint64_t(s.row_elements) * eb;
  if (f == WeightFormat::kDense) {
    NPUSIM_CHECK(in.size() >= s.dense_bytes(), "dense weight box: {} bytes, expected {}", in.size(),
                 s.dense_bytes());
    std::memcpy(dense, in.data(), s.dense_bytes());
    return;
  }
  if (is_fp8(f)) {
    const uint64_t n = uint64_t(s.rows) * s.row_elements;
    NPUSIM_CHECK(eb == 2 && in.size() >= n,
                 "{} weight box: {} bytes of {}-byte elements, expected {}", to_string(f),
                 in.size(), eb, n);
    for (uint64_t i = 0; i < n; ++i) {
      const uint16_t bits =
          float_to_bf16_bits(std::ldexp(fp8_to_float(in[i], fp8_of(f)), -s.scale_exp));
      dense[2 * i] = uint8_t(bits & 0xff);
      dense[2 * i + 1] = uint8_t(bits >> 8);
    }
    return;
  }
  if (f == WeightFormat::kInt4Groups) {
    const uint64_t scale_bytes = uint64_t(s.groups()) * s.row_elements;
    NPUSIM_CHECK(in.size() >= scale_bytes + s.dense_bytes() / 2,
                 "int4-groups weight box: {} bytes, expected {}", in.size(),
                 scale_bytes + s.dense_bytes() / 2);
    for (uint32_t r = 0; r < s.rows; ++r) {
      const uint8_t* scale =
          in.data() + uint64_t((s.first_row + r) / s.group_rows) * s.row_elements;
      const uint8_t* z = in.data() + scale_bytes + uint64_t(r) * s.row_elements / 2;
      for (uint32_t j = 0; j < s.row_elements; ++j) {
        const uint8_t b = z[j / 2];
        const int v = j % 2 == 0 ? int(int8_t(uint8_t(b << 4)) >> 4) : int(int8_t(b) >> 4);
        dense[uint64_t(r) * s.row_elements + j] = uint8_t(int8_t(v * scale[j]));
      }
    }
    return;
  }
  if (f == WeightFormat::kHuffman) {
    expand_huffman(in, s, dense);
    return;
  }
  if (f == WeightFormat::kInt4Bf16) {
    expand_int4_bf16(in, s, dense);
    return;
  }
  std::memset(dense, 0, s.dense_bytes());
  const uint32_t ib = csr_index_bytes(s.row_elements);
  size_t pos = 0;
  auto take_bytes = [&](size_t n) {
    NPUSIM_CHECK(pos + n <= in.size(), "{} weight box: ends at byte {}, {} more needed",
                 to_string(f), in.size(), pos + n - in.size());
    const uint8_t* p = in.data() + pos;
    pos += n;
    return p;
  };
  auto read_index = [&]() {
    const uint8_t* p = take_bytes(ib);
    return ib == 1 ? uint32_t(p[0]) : uint32_t(p[0]) | uint32_t(p[1]) << 8;
  };
  std::vector<uint32_t> cols;
  for (uint32_t r = 0; r < s.rows; ++r) {
    cols.clear();
    if (f == WeightFormat::kBitmap) {
      const uint8_t* bits = take_bytes((s.row_elements + 7) / 8);
      for (uint32_t j = 0; j < s.row_elements; ++j) {
        if (bits[j / 8] >> (j % 8) & 1) cols.push_back(j);
      }
    } else {
      const uint32_t count = read_index();
      NPUSIM_CHECK(count <= s.row_elements, "csr weight box: row {} has {} non-zeros of {}", r,
                   count, s.row_elements);
      for (uint32_t i = 0; i < count; ++i) {
        cols.push_back(read_index());
        NPUSIM_CHECK(cols.back() < s.row_elements && (i == 0 || cols[i - 1] < cols.back()),
                     "csr weight box: row {}: index {} out of order or range", r, cols.back());
      }
    }
    uint8_t* row = dense + r * row_bytes;
    for (uint32_t j : cols) std::memcpy(row + uint64_t(j) * eb, take_bytes(eb), eb);
  }
}

}  // namespace npusim
