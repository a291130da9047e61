// NumPy .npy files: the format np.save writes and np.load reads (format versions 1.0, 2.0 and 3.0).
//
// A file is the magic "\x93NUMPY", a version (major, minor byte), a little-endian header length
// (2 bytes in 1.0, 4 bytes in 2.0 and 3.0), a header that is a Python dict literal
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded with spaces and '\n', then
// the raw elements. Spec: numpy/lib/format.py (NEP 1).
//
// Contract: read_npy accepts little-endian (or byte-order-free) numeric arrays in C order and
// rejects everything else with a UserError naming the file and what is wrong. write_npy writes a
// 1.0 header (2.0 when the header needs more than 65535 bytes) padded to 64 bytes, as np.save does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace npusim {

struct NpyArray {
  // "bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16",
  // "float32", "float64".
  std::string dtype;
  std::vector<int64_t> shape;  // empty: a 0-d array (one element)
  std::vector<uint8_t> data;   // the elements, little-endian, C (row-major) order

  uint64_t elements() const;  // product of the shape (1 for 0-d)
};

// Bytes per element of a dtype name above; 0 for a name that is not one of them.
size_t npy_item_size(const std::string& dtype);
// The supported dtype names, comma-separated (for messages).
std::string npy_supported_dtypes();

// Throws UserError "path: what is wrong".
NpyArray read_npy(const std::string& path);
// Parses an .npy file already in memory; `origin` names it in messages.
NpyArray parse_npy(const std::vector<uint8_t>& bytes, const std::string& origin);

// Throws UserError when the file cannot be written; an array whose data size does not match
// its shape and dtype is a bug in the caller (InternalError).
void write_npy(const std::string& path, const NpyArray& array);
std::vector<uint8_t> serialize_npy(const NpyArray& array);

// Typed helpers: data.size() must equal the product of the shape.
void write_npy_int8(const std::string& path, const std::vector<int64_t>& shape,
                    const std::vector<int8_t>& data);
void write_npy_uint8(const std::string& path, const std::vector<int64_t>& shape,
                     const std::vector<uint8_t>& data);
void write_npy_int32(const std::string& path, const std::vector<int64_t>& shape,
                     const std::vector<int32_t>& data);
void write_npy_int64(const std::string& path, const std::vector<int64_t>& shape,
                     const std::vector<int64_t>& data);
void write_npy_float32(const std::string& path, const std::vector<int64_t>& shape,
                       const std::vector<float>& data);
void write_npy_float64(const std::string& path, const std::vector<int64_t>& shape,
                       const std::vector<double>& data);

// Element conversions from any supported dtype. `origin` (usually the file name) starts every
// message. A value that does not fit is a UserError naming its flat index and value:
//   to float32: integers must be exactly representable (|v| <= 2^24 always is), float64 values
//     must be within float32's finite range (they are rounded to nearest); NaN and inf pass.
//   to int8: every value must be an integer in [-128, 127] (floats must have no fraction).
std::vector<float> npy_to_float32(const NpyArray& array, const std::string& origin);
std::vector<int8_t> npy_to_int8(const NpyArray& array, const std::string& origin);
// Element i of an int32 or int64 array (token ids); other dtypes are an internal error.
int64_t npy_integer_at(const NpyArray& array, uint64_t i);

}  // namespace npusim
