// Compressed weight boxes off chip (--compress-weights, docs/compression.md): the formats the
// compiler stores a box of weights in and the DMA's decompressor expands, and their exact sizes.
//
// A box is `rows` rows of `row_elements` elements of `element_bytes` bytes (the dense box the
// weight buffer receives, row-major); an element is zero when all its bytes are. Each format
// stores the rows one after another, so a decompressor can stream them:
// - bitmap: per row, ceil(row_elements / 8) bytes of presence bits (element j: bit j % 8 of byte
//   j / 8), then the row's non-zero elements in order;
// - CSR-like: per row, its non-zero count, then each non-zero's column index, then the non-zero
//   elements in order; counts and indices take 1 byte when row_elements <= 255, else 2 (little
//   endian).
// - int4 groups (--weight-group, int8 boxes only): the box's elements are z x s, z a signed 4-bit
//   value and s the integer scale (1 to 255) of the element's group of `group_rows` consecutive
//   rows and its column; the box's first row is row `first_row` of its group. Stored: the scales of
//   every group the box touches (a row of row_elements bytes per group, in order), then the z, two
//   to a byte (lower nibble first), row-major; row_elements is even.
// - int4-bf16 (W4A16: --dtype bf16 --weight-dtype int4, bf16 boxes only): each element is
//   int4_bf16_weight(z, s), z a signed 4-bit value and s the bf16 scale of the element's group of
//   `group_rows` consecutive rows and its column (per-channel scales: one group of all the layer's
//   rows); the box's first row is row `first_row` of its group. Stored: the scales of every group
//   the box touches (a row of row_elements bf16 values per group, in order, each 2 bytes, little
//   endian), then the z, two to a byte (lower nibble first) in row-major order over the whole box,
//   an odd last one alone in its byte. The decompressor writes z x s rounded to bf16.
// - Huffman (--compress-weights huffman, int8 boxes only): the non-zeros entropy-coded, the third
//   stage of Deep Compression (Han et al., ICLR 2016). First the box's code: the length in bits
//   (0 to 15; 0: the value does not occur) of the canonical Huffman code of each of the 256 byte
//   values, two to a byte (value 2i in the lower nibble of byte i), 128 bytes; value 0 has none.
//   Then per row: the row's presence bits as in the bitmap format, then the codes of its non-zeros
//   in order, most significant bit first, the row padded to a whole byte. Canonical codes: the
//   values sorted by (length, value) take consecutive codes, each length's first code the
//   previous length's last plus one, shifted left by the difference in length.
// - fp8 (--dtype fp8-e4m3 / fp8-e5m2, bf16 boxes only): each bf16 element, an fp8 value v x
//   2^-scale_exp, as the byte of v in the format (arch/fp8.hpp): half the dense bytes; the
//   decompressor widens each byte back to the bf16 element, exactly.
// Bitmap costs 1 bit per weight plus the non-zeros: the smaller one down to a density of about
// 1/8 (int8) or 1/16 (bf16); CSR costs an index per non-zero and wins below that. Huffman saves
// on the non-zeros what their distribution allows (about 1 bit of 8 for magnitude-pruned
// Gaussian-like weights).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace npusim {

enum class WeightFormat : uint8_t {
  kDense,
  kBitmap,
  kCsr,
  kInt4Groups,
  kHuffman,
  kFp8E4M3,
  kFp8E5M2,
  kInt4Bf16
};
const char* to_string(WeightFormat f);

struct WeightBoxShape {
  uint32_t rows = 0;
  uint32_t row_elements = 0;
  uint32_t element_bytes = 1;
  uint32_t group_rows = 0, first_row = 0;  // kInt4Groups and kInt4Bf16 only
  int32_t scale_exp = 0;                   // kFp8E4M3 / kFp8E5M2 only
  uint64_t dense_bytes() const { return uint64_t{rows} * row_elements * element_bytes; }
  // kInt4Groups and kInt4Bf16: the groups the box's rows touch.
  uint32_t groups() const {
    return group_rows == 0 ? 0 : (first_row + rows + group_rows - 1) / group_rows;
  }
};

// Bytes of the Huffman format's code table at the start of a box.
inline constexpr uint32_t kHuffmanTableBytes = 128;
// The longest Huffman code (the table holds 4-bit lengths).
inline constexpr int kHuffmanMaxBits = 15;

// The bytes of a kInt4Groups or kInt4Bf16 box before padding: a scale of element_bytes bytes per
// group touched and column, then half a byte per element (rounded up).
inline uint64_t int4_box_bytes(const WeightBoxShape& s) {
  return uint64_t{s.groups()} * s.row_elements * s.element_bytes +
         (uint64_t{s.rows} * s.row_elements + 1) / 2;
}

// W4A16's dequantized weight (bf16 bits) of int4 value z under the bf16 scale `scale` (bits): the
// product, exact in fp32 (a 4-bit integer times 8 significant bits), rounded to bf16 to the
// nearest, ties to even, as the decompressor's multiplier writes it.
uint16_t int4_bf16_weight(int z, uint16_t scale);

// Bytes of a CSR-like count or index for rows of `row_elements` elements.
inline uint32_t csr_index_bytes(uint32_t row_elements) { return row_elements <= 255 ? 1 : 2; }

// The box `dense` (shape.dense_bytes() bytes) in format f; kDense returns it unchanged.
// kInt4Groups takes the scales of the groups the box touches, shape.groups() rows of
// row_elements; each element must be its scale times a value in [-8, 7]. kInt4Bf16 likewise, the
// scales as bf16 (2 bytes each), each element int4_bf16_weight(z, its scale), z in [-8, 7].
std::vector<uint8_t> compress_weight_box(std::span<const uint8_t> dense,
                                         const WeightBoxShape& shape, WeightFormat f,
                                         std::span<const uint8_t> group_scales = {});
// The dense box back from compress_weight_box's bytes (at least as many as it produced; more are
// ignored); writes shape.dense_bytes() bytes to `dense`. Malformed input (a count past the row,
// an index out of order, too few bytes) is an internal error.
void expand_weight_box(std::span<const uint8_t> compressed, const WeightBoxShape& shape,
                       WeightFormat f, uint8_t* dense);

}  // namespace npusim
