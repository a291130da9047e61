#include "arch/compressed_weights.hpp"

#include <cstring>

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

}  // namespace

std::vector<uint8_t> compress_weight_box(std::span<const uint8_t> dense, const WeightBoxShape& s,
                                         WeightFormat f, std::span<const uint8_t> group_scales) {
  NPUSIM_CHECK(dense.size() == s.dense_bytes(), "weight box of {} bytes, expected {}", dense.size(),
               s.dense_bytes());
  if (f == WeightFormat::kDense) return {dense.begin(), dense.end()};
  if (f == WeightFormat::kInt4Groups) return int4_groups(dense, s, group_scales);
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
