#include "support/npy.hpp"

#include <fmt/format.h>

#include <array>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <optional>

#include "support/error.hpp"

namespace npusim {

static_assert(std::endian::native == std::endian::little,
              "npy.cpp copies little-endian file data straight into host values");

namespace {

constexpr std::array<uint8_t, 6> kMagic = {0x93, 'N', 'U', 'M', 'P', 'Y'};
constexpr size_t kAlign = 64;             // numpy's ARRAY_ALIGN
constexpr size_t kGrowthAxisDigits = 21;  // numpy's GROWTH_AXIS_MAX_DIGITS

struct DtypeInfo {
  const char* name;
  char kind;  // numpy's type character: b (bool), i, u, f
  size_t size;
};
constexpr std::array<DtypeInfo, 12> kDtypes = {{
    {"bool", 'b', 1},
    {"int8", 'i', 1},
    {"uint8", 'u', 1},
    {"int16", 'i', 2},
    {"uint16", 'u', 2},
    {"int32", 'i', 4},
    {"uint32", 'u', 4},
    {"int64", 'i', 8},
    {"uint64", 'u', 8},
    {"float16", 'f', 2},
    {"float32", 'f', 4},
    {"float64", 'f', 8},
}};

const DtypeInfo* find_dtype(const std::string& name) {
  for (const auto& d : kDtypes) {
    if (name == d.name) return &d;
  }
  return nullptr;
}

const DtypeInfo* find_dtype(char kind, size_t size) {
  for (const auto& d : kDtypes) {
    if (d.kind == kind && d.size == size) return &d;
  }
  return nullptr;
}

std::string shape_repr(const std::vector<int64_t>& shape) {
  if (shape.size() == 1) return fmt::format("({},)", shape[0]);
  return fmt::format("({})", fmt::join(shape, ", "));
}

// Product of the shape, or nullopt when it overflows 64 bits.
std::optional<uint64_t> checked_elements(const std::vector<int64_t>& shape) {
  uint64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return std::nullopt;
    auto ud = static_cast<uint64_t>(d);
    if (ud != 0 && n > std::numeric_limits<uint64_t>::max() / ud) return std::nullopt;
    n *= ud;
  }
  return n;
}

// The subset of Python literal syntax np.save writes in a header: a dict with string keys whose
// values are strings, True/False, or tuples of integers. Anything else is kept as raw text so
// that the caller can say which key holds what.
struct HeaderValue {
  enum class Kind { kString, kBool, kIntTuple, kOther };
  Kind kind = Kind::kOther;
  std::string text;  // the string's contents, or the raw literal
  bool boolean = false;
  std::vector<int64_t> ints;
};

class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& origin) : text_(text), origin_(origin) {}

  std::map<std::string, HeaderValue> parse_dict() {
    std::map<std::string, HeaderValue> entries;
    skip_space();
    expect('{', "the header to start with '{' (a Python dict literal)");
    while (true) {
      skip_space();
      if (peek() == '}') break;
      std::optional<std::string> key = string_literal();
      if (!key) fail(fmt::format("expected a quoted key at header byte {}", pos_));
      skip_space();
      expect(':', fmt::format("':' after key '{}'", *key));
      skip_space();
      HeaderValue value = parse_value();
      if (!entries.emplace(*key, std::move(value)).second) {
        fail(fmt::format("key '{}' appears twice", *key));
      }
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() != '}') fail(fmt::format("expected ',' or '}}' at header byte {}", pos_));
    }
    ++pos_;
    skip_space();
    if (pos_ != text_.size()) {
      fail(fmt::format("unexpected text after the dict at header byte {}", pos_));
    }
    return entries;
  }

  [[noreturn]] void fail(const std::string& detail) const {
    throw UserError(fmt::format("{}: malformed .npy header: {}", origin_, detail));
  }

 private:
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }

  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' ||
                                   text_[pos_] == '\t' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  void expect(char c, const std::string& what) {
    if (peek() != c) fail(fmt::format("expected {} at header byte {}", what, pos_));
    ++pos_;
  }

  std::optional<std::string> string_literal() {
    char quote = peek();
    if (quote != '\'' && quote != '"') return std::nullopt;
    size_t start = pos_;
    ++pos_;
    std::string out;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      if (text_[pos_] == '\\' && pos_ + 1 < text_.size()) ++pos_;
      out += text_[pos_++];
    }
    if (pos_ >= text_.size()) {
      fail(fmt::format("unterminated string starting at header byte {}", start));
    }
    ++pos_;
    return out;
  }

  std::optional<int64_t> integer_literal() {
    size_t start = pos_;
    if (peek() == '-') ++pos_;
    size_t digits = pos_;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
    if (pos_ == digits) {
      pos_ = start;
      return std::nullopt;
    }
    std::string number = text_.substr(start, pos_ - start);
    if (peek() == 'L') ++pos_;  // Python 2 long literals, as old numpy wrote them
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(number.c_str(), &end, 10);
    if (errno == ERANGE) fail(fmt::format("integer {} is out of range", number));
    return static_cast<int64_t>(v);
  }

  // Skips a balanced (...), [...] or {...} group, or a bare token, and returns its text.
  std::string raw_value() {
    size_t start = pos_;
    int depth = 0;
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == '\'' || c == '"') {
        string_literal();
        continue;
      }
      if (c == '(' || c == '[' || c == '{') ++depth;
      if (c == ')' || c == ']' || c == '}') {
        if (depth == 0) break;
        --depth;
      }
      if (c == ',' && depth == 0) break;
      ++pos_;
    }
    std::string raw = text_.substr(start, pos_ - start);
    while (!raw.empty() && raw.back() == ' ') raw.pop_back();
    return raw;
  }

  HeaderValue parse_value() {
    HeaderValue value;
    size_t start = pos_;
    if (auto s = string_literal()) {
      value.kind = HeaderValue::Kind::kString;
      value.text = *s;
      return value;
    }
    if (text_.compare(pos_, 4, "True") == 0 || text_.compare(pos_, 5, "False") == 0) {
      value.kind = HeaderValue::Kind::kBool;
      value.boolean = text_[pos_] == 'T';
      pos_ += value.boolean ? 4 : 5;
      value.text = value.boolean ? "True" : "False";
      return value;
    }
    if (peek() == '(') {
      ++pos_;
      bool ints_only = true;
      while (true) {
        skip_space();
        if (peek() == ')') break;
        size_t element = pos_;
        std::optional<int64_t> v = integer_literal();
        skip_space();
        if (v && (peek() == ',' || peek() == ')')) {
          value.ints.push_back(*v);
        } else {
          ints_only = false;  // e.g. 2.0 or 'a': kept as text for the caller's message
          pos_ = element;
          raw_value();
        }
        skip_space();
        if (peek() == ',') {
          ++pos_;
        } else if (peek() != ')') {
          fail(fmt::format("expected ',' or ')' at header byte {}", pos_));
        }
      }
      ++pos_;
      value.kind = ints_only ? HeaderValue::Kind::kIntTuple : HeaderValue::Kind::kOther;
      value.text = text_.substr(start, pos_ - start);
      return value;
    }
    value.text = raw_value();
    if (value.text.empty()) fail(fmt::format("expected a value at header byte {}", start));
    return value;
  }

  const std::string& text_;
  const std::string& origin_;
  size_t pos_ = 0;
};

// Maps a numpy descr ('<f4', '|i1', '<u2', ...) to a dtype name.
std::string dtype_of_descr(const std::string& descr, const std::string& origin) {
  auto unsupported = [&]() {
    return UserError(fmt::format("{}: unsupported dtype '{}' (npusim reads {})", origin, descr,
                                 npy_supported_dtypes()));
  };
  if (descr.size() < 2) throw unsupported();
  char order = descr[0];
  std::string code = descr.substr(1);
  if (order != '<' && order != '>' && order != '|' && order != '=') {
    order = '=';  // np.dtype also accepts codes without a byte-order character
    code = descr;
  }
  if (code == "?") code = "b1";
  if (code.size() != 2 || code[1] < '1' || code[1] > '8') throw unsupported();
  const DtypeInfo* info = find_dtype(code[0], static_cast<size_t>(code[1] - '0'));
  if (info == nullptr) throw unsupported();
  if (order == '>' && info->size > 1) {
    throw UserError(
        fmt::format("{}: big-endian data (descr '{}'): npusim reads little-endian arrays only "
                    "(convert with a.astype(a.dtype.newbyteorder('<')))",
                    origin, descr));
  }
  // '=' is the writer's native order; numpy itself always writes '<', '>' or '|'.
  return info->name;
}

template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

float half_to_float(uint16_t h) {
  uint32_t sign = (h >> 15) & 1u, exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  float magnitude;
  if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa), -24);
  } else if (exponent == 31) {
    magnitude = mantissa == 0 ? std::numeric_limits<float>::infinity()
                              : std::numeric_limits<float>::quiet_NaN();
  } else {
    magnitude = std::ldexp(static_cast<float>(mantissa | 0x400u), static_cast<int>(exponent) - 25);
  }
  return sign ? -magnitude : magnitude;
}

// Calls f(index, value) for every element, the value as the widest type of its kind.
template <typename OnInt, typename OnUint, typename OnFloat>
void visit_elements(const NpyArray& array, OnInt on_int, OnUint on_uint, OnFloat on_float) {
  const DtypeInfo* info = find_dtype(array.dtype);
  NPUSIM_CHECK(info != nullptr, "NpyArray has unknown dtype '{}'", array.dtype);
  uint64_t n = array.elements();
  NPUSIM_CHECK(array.data.size() == n * info->size, "NpyArray of {} {} holds {} bytes", n,
               array.dtype, array.data.size());
  const uint8_t* p = array.data.data();
  for (uint64_t i = 0; i < n; ++i, p += info->size) {
    const std::string& t = array.dtype;
    if (t == "bool")
      on_uint(i, static_cast<uint64_t>(*p != 0));
    else if (t == "int8")
      on_int(i, load<int8_t>(p));
    else if (t == "uint8")
      on_uint(i, load<uint8_t>(p));
    else if (t == "int16")
      on_int(i, load<int16_t>(p));
    else if (t == "uint16")
      on_uint(i, load<uint16_t>(p));
    else if (t == "int32")
      on_int(i, load<int32_t>(p));
    else if (t == "uint32")
      on_uint(i, load<uint32_t>(p));
    else if (t == "int64")
      on_int(i, load<int64_t>(p));
    else if (t == "uint64")
      on_uint(i, load<uint64_t>(p));
    else if (t == "float16")
      on_float(i, static_cast<double>(half_to_float(load<uint16_t>(p))));
    else if (t == "float32")
      on_float(i, static_cast<double>(load<float>(p)));
    else
      on_float(i, load<double>(p));
  }
}

template <typename T>
void write_typed(const std::string& path, const char* dtype, const std::vector<int64_t>& shape,
                 const std::vector<T>& data) {
  NpyArray array;
  array.dtype = dtype;
  array.shape = shape;
  array.data.resize(data.size() * sizeof(T));
  if (!data.empty()) std::memcpy(array.data.data(), data.data(), array.data.size());
  write_npy(path, array);
}

}  // namespace

uint64_t NpyArray::elements() const {
  auto n = checked_elements(shape);
  NPUSIM_CHECK(n.has_value(), "NpyArray shape {} is negative or overflows", shape_repr(shape));
  return *n;
}

size_t npy_item_size(const std::string& dtype) {
  const DtypeInfo* info = find_dtype(dtype);
  return info == nullptr ? 0 : info->size;
}

std::string npy_supported_dtypes() {
  std::vector<std::string> names;
  for (const auto& d : kDtypes) names.emplace_back(d.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

NpyArray parse_npy(const std::vector<uint8_t>& bytes, const std::string& origin) {
  if (bytes.size() < kMagic.size() || !std::equal(kMagic.begin(), kMagic.end(), bytes.begin())) {
    throw UserError(
        fmt::format("{}: not an .npy file (it does not start with the magic \\x93NUMPY)", origin));
  }
  if (bytes.size() < 8) {
    throw UserError(fmt::format("{}: truncated .npy file: it ends inside the version", origin));
  }
  int major = bytes[6], minor = bytes[7];
  if (major < 1 || major > 3 || minor != 0) {
    throw UserError(
        fmt::format("{}: unsupported .npy format version {}.{} (npusim reads 1.0, 2.0 and 3.0)",
                    origin, major, minor));
  }
  size_t length_bytes = major == 1 ? 2 : 4;
  size_t preamble = 8 + length_bytes;
  if (bytes.size() < preamble) {
    throw UserError(
        fmt::format("{}: truncated .npy file: it ends inside the header length", origin));
  }
  uint64_t header_length = 0;
  for (size_t i = 0; i < length_bytes; ++i) {
    header_length |= static_cast<uint64_t>(bytes[8 + i]) << (8 * i);
  }
  if (header_length > bytes.size() - preamble) {
    throw UserError(fmt::format(
        "{}: truncated .npy file: the header is {} bytes long but the file has {} after the "
        "preamble",
        origin, header_length, bytes.size() - preamble));
  }
  std::string header(reinterpret_cast<const char*>(bytes.data() + preamble), header_length);

  HeaderParser parser(header, origin);
  std::map<std::string, HeaderValue> entries = parser.parse_dict();
  for (const auto& [key, value] : entries) {
    if (key != "descr" && key != "fortran_order" && key != "shape") {
      parser.fail(fmt::format(
          "unexpected key '{}' (the header has exactly 'descr', 'fortran_order' and 'shape')",
          key));
    }
  }
  for (const char* key : {"descr", "fortran_order", "shape"}) {
    if (!entries.count(key)) parser.fail(fmt::format("missing key '{}'", key));
  }
  const HeaderValue& descr = entries["descr"];
  const HeaderValue& fortran = entries["fortran_order"];
  const HeaderValue& shape = entries["shape"];
  if (descr.kind != HeaderValue::Kind::kString) {
    if (descr.text.starts_with("[")) {
      throw UserError(
          fmt::format("{}: unsupported dtype: structured arrays (descr {}) are not supported",
                      origin, descr.text));
    }
    parser.fail(fmt::format("key 'descr': expected a string such as '<f4', got {}", descr.text));
  }
  if (fortran.kind != HeaderValue::Kind::kBool) {
    parser.fail(fmt::format("key 'fortran_order': expected True or False, got {}", fortran.text));
  }
  bool shape_ok = shape.kind == HeaderValue::Kind::kIntTuple;
  for (int64_t d : shape.ints) shape_ok = shape_ok && d >= 0;
  if (!shape_ok) {
    parser.fail(
        fmt::format("key 'shape': expected a tuple of non-negative integers, got {}", shape.text));
  }

  NpyArray array;
  array.dtype = dtype_of_descr(descr.text, origin);
  if (fortran.boolean) {
    throw UserError(
        fmt::format("{}: fortran_order is True: npusim reads C-order arrays only (save "
                    "np.ascontiguousarray(a))",
                    origin));
  }
  array.shape = shape.ints;
  size_t item = npy_item_size(array.dtype);
  auto elements = checked_elements(array.shape);
  uint64_t available = bytes.size() - preamble - header_length;
  if (!elements || (item != 0 && *elements > std::numeric_limits<uint64_t>::max() / item)) {
    throw UserError(fmt::format("{}: shape {} is too large", origin, shape_repr(array.shape)));
  }
  uint64_t needed = *elements * item;
  if (available < needed) {
    throw UserError(fmt::format(
        "{}: data is shorter than the shape says: shape {} of {} needs {} bytes, the file has {}",
        origin, shape_repr(array.shape), array.dtype, needed, available));
  }
  if (available > needed) {
    throw UserError(fmt::format(
        "{}: data is longer than the shape says: shape {} of {} needs {} bytes, the file has {}",
        origin, shape_repr(array.shape), array.dtype, needed, available));
  }
  auto begin = bytes.begin() + static_cast<std::ptrdiff_t>(preamble + header_length);
  array.data.assign(begin, bytes.end());
  return array;
}

NpyArray read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(fmt::format("{}: cannot open file", path));
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  if (in.bad()) throw UserError(fmt::format("{}: read error", path));
  return parse_npy(bytes, path);
}

std::vector<uint8_t> serialize_npy(const NpyArray& array) {
  const DtypeInfo* info = find_dtype(array.dtype);
  NPUSIM_CHECK(info != nullptr, "write_npy: unknown dtype '{}' (known: {})", array.dtype,
               npy_supported_dtypes());
  uint64_t n = array.elements();
  NPUSIM_CHECK(array.data.size() == n * info->size,
               "write_npy: shape {} of {} needs {} bytes, the array holds {}",
               shape_repr(array.shape), array.dtype, n * info->size, array.data.size());

  // Byte-identical to np.save: keys sorted, spare room for the first axis to grow, then spaces
  // and '\n' up to a multiple of 64 bytes.
  char order = info->size == 1 ? '|' : '<';
  std::string header = fmt::format("{{'descr': '{}{}{}', 'fortran_order': False, 'shape': {}, }}",
                                   order, info->kind, info->size, shape_repr(array.shape));
  if (!array.shape.empty()) {
    header.append(kGrowthAxisDigits - std::to_string(array.shape[0]).size(), ' ');
  }
  int major = 1;
  size_t length_bytes = 2;
  size_t unpadded = kMagic.size() + 2 + length_bytes + header.size() + 1;
  size_t padding = kAlign - unpadded % kAlign;
  if (header.size() + 1 + padding > 0xffff) {
    major = 2;
    length_bytes = 4;
    unpadded = kMagic.size() + 2 + length_bytes + header.size() + 1;
    padding = kAlign - unpadded % kAlign;
  }
  header.append(padding, ' ');
  header += '\n';

  std::vector<uint8_t> out(kMagic.begin(), kMagic.end());
  out.push_back(static_cast<uint8_t>(major));
  out.push_back(0);
  for (size_t i = 0; i < length_bytes; ++i) {
    out.push_back(static_cast<uint8_t>((header.size() >> (8 * i)) & 0xff));
  }
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), array.data.begin(), array.data.end());
  return out;
}

void write_npy(const std::string& path, const NpyArray& array) {
  std::vector<uint8_t> bytes = serialize_npy(array);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw UserError(fmt::format("{}: cannot open file for writing", path));
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) throw UserError(fmt::format("{}: write error", path));
}

void write_npy_int8(const std::string& path, const std::vector<int64_t>& shape,
                    const std::vector<int8_t>& data) {
  write_typed(path, "int8", shape, data);
}
void write_npy_uint8(const std::string& path, const std::vector<int64_t>& shape,
                     const std::vector<uint8_t>& data) {
  write_typed(path, "uint8", shape, data);
}
void write_npy_int32(const std::string& path, const std::vector<int64_t>& shape,
                     const std::vector<int32_t>& data) {
  write_typed(path, "int32", shape, data);
}
void write_npy_int64(const std::string& path, const std::vector<int64_t>& shape,
                     const std::vector<int64_t>& data) {
  write_typed(path, "int64", shape, data);
}
void write_npy_float32(const std::string& path, const std::vector<int64_t>& shape,
                       const std::vector<float>& data) {
  write_typed(path, "float32", shape, data);
}
void write_npy_float64(const std::string& path, const std::vector<int64_t>& shape,
                       const std::vector<double>& data) {
  write_typed(path, "float64", shape, data);
}

std::vector<float> npy_to_float32(const NpyArray& array, const std::string& origin) {
  std::vector<float> out;
  out.reserve(array.elements());
  auto not_exact = [&](uint64_t i, const std::string& value) {
    return UserError(
        fmt::format("{}: element {} ({}) of the {} array is not exactly representable as float32",
                    origin, i, value, array.dtype));
  };
  visit_elements(
      array,
      [&](uint64_t i, int64_t v) {
        auto f = static_cast<float>(v);
        // 2^63 is a float but not an int64: compare in double range first.
        if (static_cast<double>(f) >= 9223372036854775808.0 || static_cast<int64_t>(f) != v) {
          throw not_exact(i, std::to_string(v));
        }
        out.push_back(f);
      },
      [&](uint64_t i, uint64_t v) {
        auto f = static_cast<float>(v);
        if (static_cast<double>(f) >= 18446744073709551616.0 || static_cast<uint64_t>(f) != v) {
          throw not_exact(i, std::to_string(v));
        }
        out.push_back(f);
      },
      [&](uint64_t i, double v) {
        if (std::isfinite(v) && std::fabs(v) > std::numeric_limits<float>::max()) {
          throw UserError(
              fmt::format("{}: element {} ({:g}) of the {} array is outside float32's range",
                          origin, i, v, array.dtype));
        }
        out.push_back(static_cast<float>(v));
      });
  return out;
}

int64_t npy_integer_at(const NpyArray& a, uint64_t i) {
  NPUSIM_CHECK(a.dtype == "int32" || a.dtype == "int64", "npy_integer_at: a {} array", a.dtype);
  if (a.dtype == "int32") {
    int32_t w;
    std::memcpy(&w, &a.data[i * 4], 4);
    return w;
  }
  int64_t v;
  std::memcpy(&v, &a.data[i * 8], 8);
  return v;
}

std::vector<int8_t> npy_to_int8(const NpyArray& array, const std::string& origin) {
  std::vector<int8_t> out;
  out.reserve(array.elements());
  auto out_of_range = [&](uint64_t i, const std::string& value) {
    return UserError(fmt::format(
        "{}: element {} ({}) of the {} array does not fit int8 (an integer in [-128, 127])", origin,
        i, value, array.dtype));
  };
  visit_elements(
      array,
      [&](uint64_t i, int64_t v) {
        if (v < -128 || v > 127) throw out_of_range(i, std::to_string(v));
        out.push_back(static_cast<int8_t>(v));
      },
      [&](uint64_t i, uint64_t v) {
        if (v > 127) throw out_of_range(i, std::to_string(v));
        out.push_back(static_cast<int8_t>(v));
      },
      [&](uint64_t i, double v) {
        if (!(v >= -128.0 && v <= 127.0) || v != std::trunc(v)) {
          throw out_of_range(i, fmt::format("{:g}", v));
        }
        out.push_back(static_cast<int8_t>(v));
      });
  return out;
}

}  // namespace npusim
