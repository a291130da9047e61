// .npy files: round trips of every dtype, files numpy wrote (read back with the values numpy put
// in them), files npusim wrote (loaded by numpy, and byte-identical to np.save), and the message
// for every kind of bad file.
#include "support/npy.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "support/error.hpp"

namespace npusim {
namespace {

namespace fs = std::filesystem;

// A fresh directory per test, removed afterwards.
class NpyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           fmt::format("npusim-npy-{}-{}-{}", ::getpid(), info->test_suite_name(), info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // Runs a Python script with Debian's numpy; argv[1] is the test directory.
  void run_python(const std::string& script) const {
    std::string file = path("script.py");
    std::ofstream(file) << script;
    std::string cmd =
        fmt::format("{} {} {} 2>{}", NPUSIM_NUMPY_PYTHON, file, dir_.string(), path("python.err"));
    int status = std::system(cmd.c_str());
    std::ifstream err_file(path("python.err"));
    std::string err((std::istreambuf_iterator<char>(err_file)), std::istreambuf_iterator<char>());
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << NPUSIM_NUMPY_PYTHON << " failed (python3-numpy is installed by scripts/setup.sh):\n"
        << err;
  }

  void write_bytes(const std::string& name, const std::vector<uint8_t>& bytes) const {
    std::ofstream out(path(name), std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
  }

  std::vector<uint8_t> read_bytes(const std::string& name) const {
    std::ifstream in(path(name), std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }

  // The UserError message read_npy gives for a file with these bytes.
  std::string error_for(const std::vector<uint8_t>& bytes) const {
    write_bytes("bad.npy", bytes);
    try {
      read_npy(path("bad.npy"));
    } catch (const UserError& e) {
      return e.what();
    }
    return "(no error)";
  }

  std::string error_for_numpy_file(const std::string& name) const {
    try {
      read_npy(path(name));
    } catch (const UserError& e) {
      return e.what();
    }
    return "(no error)";
  }

  fs::path dir_;
};

template <typename T>
std::vector<uint8_t> bytes_of(const std::vector<T>& values) {
  std::vector<uint8_t> out(values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(out.data(), values.data(), out.size());
  return out;
}

// A file with the given header text, padded the way numpy pads it, and data bytes.
std::vector<uint8_t> npy_file(const std::string& header_dict, const std::vector<uint8_t>& data,
                              int major = 1, int minor = 0) {
  size_t length_bytes = major == 1 ? 2 : 4;
  std::string header = header_dict;
  size_t unpadded = 8 + length_bytes + header.size() + 1;
  header.append(64 - unpadded % 64, ' ');
  header += '\n';
  std::vector<uint8_t> out = {
      0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<uint8_t>(major), static_cast<uint8_t>(minor)};
  for (size_t i = 0; i < length_bytes; ++i) out.push_back((header.size() >> (8 * i)) & 0xff);
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

// The values tests/npy's Python scripts put in <dtype>.npy (shape (2, 3, 4)): a signed pattern
// s(i) = (37 i mod 200) - 100, an unsigned one u(i) = 37 i mod 200, scaled past the range of the
// next narrower type so that a reader with the wrong width would fail.
int64_t signed_pattern(int i) { return (37 * i) % 200 - 100; }
uint64_t unsigned_pattern(int i) { return (37 * i) % 200; }

template <typename T>
std::vector<T> signed_values(int64_t scale) {
  std::vector<T> v;
  for (int i = 0; i < 24; ++i) v.push_back(static_cast<T>(signed_pattern(i) * scale));
  return v;
}
template <typename T>
std::vector<T> unsigned_values(uint64_t scale) {
  std::vector<T> v;
  for (int i = 0; i < 24; ++i) v.push_back(static_cast<T>(unsigned_pattern(i) * scale));
  return v;
}
template <typename T>
std::vector<T> float_values() {
  std::vector<T> v;
  for (int i = 0; i < 24; ++i) v.push_back(static_cast<T>((i - 11.5) * 0.25));
  return v;
}
// float16 bit patterns of (i - 11.5) * 0.25, i = 0..23: every value is exact in binary16.
std::vector<uint16_t> half_values() {
  std::vector<uint16_t> v;
  for (int i = 0; i < 24; ++i) {
    double x = (i - 11.5) * 0.25;
    uint16_t sign = x < 0 ? 0x8000 : 0;
    double m = std::fabs(x);
    int e = 0;
    double frac = std::frexp(m, &e);  // m = frac * 2^e, frac in [0.5, 1)
    // binary16: m = (1 + f/1024) * 2^(E - 15), E = e - 1 + 15.
    auto exponent = static_cast<uint16_t>(e - 1 + 15);
    auto fraction = static_cast<uint16_t>((frac * 2 - 1) * 1024);
    v.push_back(sign | static_cast<uint16_t>(exponent << 10) | fraction);
  }
  return v;
}

struct DtypeCase {
  std::string dtype;
  std::vector<uint8_t> data;  // 24 elements
};

std::vector<DtypeCase> dtype_cases() {
  std::vector<uint8_t> bools;
  for (int i = 0; i < 24; ++i) bools.push_back(i % 3 == 0 ? 1 : 0);
  return {
      {"bool", bools},
      {"int8", bytes_of(signed_values<int8_t>(1))},
      {"uint8", bytes_of(unsigned_values<uint8_t>(1))},
      {"int16", bytes_of(signed_values<int16_t>(300))},
      {"uint16", bytes_of(unsigned_values<uint16_t>(300))},
      {"int32", bytes_of(signed_values<int32_t>(10'000'000))},
      {"uint32", bytes_of(unsigned_values<uint32_t>(20'000'000))},
      {"int64", bytes_of(signed_values<int64_t>(1'000'000'000'000))},
      {"uint64", bytes_of(unsigned_values<uint64_t>(10'000'000'000'000'000ull))},
      {"float16", bytes_of(half_values())},
      {"float32", bytes_of(float_values<float>())},
      {"float64", bytes_of(float_values<double>())},
  };
}

// The same arrays, built by numpy.
const char* kWriteDtypesScript = R"(
import sys, numpy as np
d = sys.argv[1]
i = np.arange(24, dtype=np.int64)
s = (37 * i) % 200 - 100
u = (37 * i) % 200
arrays = {
    'bool': i % 3 == 0,
    'int8': s.astype(np.int8), 'uint8': u.astype(np.uint8),
    'int16': (s * 300).astype(np.int16), 'uint16': (u * 300).astype(np.uint16),
    'int32': (s * 10**7).astype(np.int32), 'uint32': (u * 2 * 10**7).astype(np.uint32),
    'int64': s * 10**12, 'uint64': u.astype(np.uint64) * np.uint64(10**16),
    'float16': ((i - 11.5) * 0.25).astype(np.float16),
    'float32': ((i - 11.5) * 0.25).astype(np.float32),
    'float64': (i - 11.5) * 0.25,
}
for name, a in arrays.items():
    assert a.dtype == np.dtype(name), name
    np.save(f'{d}/{name}.npy', a.reshape(2, 3, 4))
)";

TEST_F(NpyTest, NpyRoundTripEveryDtype) {
  for (const auto& c : dtype_cases()) {
    SCOPED_TRACE(c.dtype);
    NpyArray a{c.dtype, {2, 3, 4}, c.data};
    write_npy(path(c.dtype + ".npy"), a);
    NpyArray b = read_npy(path(c.dtype + ".npy"));
    EXPECT_EQ(b.dtype, c.dtype);
    EXPECT_EQ(b.shape, (std::vector<int64_t>{2, 3, 4}));
    EXPECT_EQ(b.data, c.data);
    EXPECT_EQ(b.elements(), 24u);
  }
}

TEST_F(NpyTest, NpyRoundTripShapesIncludingZeroDAndEmpty) {
  std::vector<std::vector<int64_t>> shapes = {{}, {1}, {7}, {0}, {0, 3}, {2, 1, 3, 1, 2}};
  for (const auto& shape : shapes) {
    NpyArray a{"int16", shape, {}};
    for (uint64_t i = 0; i < a.elements(); ++i) {
      a.data.push_back(static_cast<uint8_t>(i * 3));
      a.data.push_back(static_cast<uint8_t>(0x80 | i));
    }
    write_npy(path("a.npy"), a);
    NpyArray b = read_npy(path("a.npy"));
    EXPECT_EQ(b.shape, shape);
    EXPECT_EQ(b.data, a.data);
  }
}

// np.save switches to a 2.0 header (4-byte length) when the header needs more than 65535 bytes;
// only a shape with thousands of dimensions makes one ("1, " is 3 bytes per dimension).
TEST_F(NpyTest, NpyWriterUsesVersion2ForHeadersOver64KiB) {
  NpyArray a{"uint8", std::vector<int64_t>(30000, 1), {42}};
  std::vector<uint8_t> bytes = serialize_npy(a);
  ASSERT_GT(bytes.size(), 12u);
  EXPECT_EQ(bytes[6], 2);
  EXPECT_EQ(bytes.size() % 64, 1u);  // preamble and header padded to 64 bytes, then one element
  NpyArray b = parse_npy(bytes, "big-header.npy");
  EXPECT_EQ(b.shape, a.shape);
  EXPECT_EQ(b.data, a.data);
  a.shape.resize(100);  // 300 bytes of shape: a 1.0 header
  EXPECT_EQ(serialize_npy(a)[6], 1);
}

TEST_F(NpyTest, NpyTypedWritersStoreTheirDtype) {
  write_npy_int8(path("i8.npy"), {2, 2}, {-128, -1, 0, 127});
  write_npy_uint8(path("u8.npy"), {3}, {0, 128, 255});
  write_npy_int32(path("i32.npy"), {2}, {std::numeric_limits<int32_t>::min(), 7});
  write_npy_int64(path("i64.npy"), {1}, {std::numeric_limits<int64_t>::max()});
  write_npy_float32(path("f32.npy"), {}, {-0.375f});
  write_npy_float64(path("f64.npy"), {1, 2}, {1e300, -2.5});

  NpyArray i8 = read_npy(path("i8.npy"));
  EXPECT_EQ(i8.dtype, "int8");
  EXPECT_EQ(npy_to_int8(i8, "i8"), (std::vector<int8_t>{-128, -1, 0, 127}));
  NpyArray u8 = read_npy(path("u8.npy"));
  EXPECT_EQ(u8.dtype, "uint8");
  EXPECT_EQ(u8.data, (std::vector<uint8_t>{0, 128, 255}));
  NpyArray i32 = read_npy(path("i32.npy"));
  EXPECT_EQ(i32.dtype, "int32");
  EXPECT_EQ(i32.data, bytes_of(std::vector<int32_t>{std::numeric_limits<int32_t>::min(), 7}));
  NpyArray i64 = read_npy(path("i64.npy"));
  EXPECT_EQ(i64.dtype, "int64");
  EXPECT_EQ(i64.data, bytes_of(std::vector<int64_t>{std::numeric_limits<int64_t>::max()}));
  NpyArray f32 = read_npy(path("f32.npy"));
  EXPECT_EQ(f32.dtype, "float32");
  EXPECT_TRUE(f32.shape.empty());
  EXPECT_EQ(npy_to_float32(f32, "f32"), (std::vector<float>{-0.375f}));
  NpyArray f64 = read_npy(path("f64.npy"));
  EXPECT_EQ(f64.dtype, "float64");
  EXPECT_EQ(f64.data, bytes_of(std::vector<double>{1e300, -2.5}));
}

TEST_F(NpyTest, NpyReadsEveryDtypeNumpyWrote) {
  run_python(kWriteDtypesScript);
  for (const auto& c : dtype_cases()) {
    SCOPED_TRACE(c.dtype);
    NpyArray a = read_npy(path(c.dtype + ".npy"));
    EXPECT_EQ(a.dtype, c.dtype);
    EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3, 4}));
    EXPECT_EQ(a.data, c.data);
  }
}

TEST_F(NpyTest, NpyWritesTheSameBytesAsNpSave) {
  run_python(kWriteDtypesScript);
  for (const auto& c : dtype_cases()) {
    SCOPED_TRACE(c.dtype);
    EXPECT_EQ(serialize_npy(NpyArray{c.dtype, {2, 3, 4}, c.data}), read_bytes(c.dtype + ".npy"));
  }
  run_python(R"(
import sys, numpy as np
d = sys.argv[1]
np.save(d + '/zero_d.npy', np.float32(-0.375))
np.save(d + '/one_d.npy', np.arange(5, dtype=np.int8))
np.save(d + '/long_axis.npy', np.zeros((123456789, 0), dtype=np.uint8))
)");
  EXPECT_EQ(serialize_npy(NpyArray{"float32", {}, bytes_of(std::vector<float>{-0.375f})}),
            read_bytes("zero_d.npy"));
  EXPECT_EQ(serialize_npy(NpyArray{"int8", {5}, {0, 1, 2, 3, 4}}), read_bytes("one_d.npy"));
  EXPECT_EQ(serialize_npy(NpyArray{"uint8", {123456789, 0}, {}}), read_bytes("long_axis.npy"));
}

TEST_F(NpyTest, NpyNumpyLoadsWhatNpusimWrote) {
  for (const auto& c : dtype_cases()) {
    write_npy(path("ours_" + c.dtype + ".npy"), NpyArray{c.dtype, {2, 3, 4}, c.data});
  }
  write_npy_float32(path("ours_zero_d.npy"), {}, {2.5f});
  run_python(std::string(kWriteDtypesScript) + R"(
for name, a in arrays.items():
    b = np.load(f'{d}/ours_{name}.npy')
    assert b.dtype == a.dtype and b.shape == (2, 3, 4), name
    assert (b == a.reshape(2, 3, 4)).all(), name
z = np.load(d + '/ours_zero_d.npy')
assert z.shape == () and z.dtype == np.float32 and z == 2.5
)");
}

TEST_F(NpyTest, NpyReadsNumpyShapesAndHeaderVersions) {
  run_python(R"(
import sys, numpy as np
d = sys.argv[1]
np.save(d + '/zero_d.npy', np.float64(-2.5))
np.save(d + '/one_d.npy', np.arange(7, dtype=np.int32) - 3)
# An NCHW image batch: values 0.5 k - 30 for flat index k.
np.save(d + '/four_d.npy', (np.arange(2 * 3 * 4 * 5, dtype=np.float32) * 0.5 - 30).reshape(2, 3, 4, 5))
# A C-order copy of a transposed view: the file holds the transposed element order.
np.save(d + '/transposed_copy.npy', np.ascontiguousarray(np.arange(6, dtype=np.int8).reshape(2, 3).T))
for version in [(2, 0), (3, 0)]:
    with open(d + '/v%d.npy' % version[0], 'wb') as f:
        np.lib.format.write_array(f, np.arange(-4, 8, dtype=np.int16).reshape(3, 4), version=version)
np.save(d + '/empty.npy', np.zeros((0, 3), dtype=np.float32))
)");
  NpyArray zero_d = read_npy(path("zero_d.npy"));
  EXPECT_EQ(zero_d.dtype, "float64");
  EXPECT_TRUE(zero_d.shape.empty());
  EXPECT_EQ(zero_d.elements(), 1u);
  EXPECT_EQ(npy_to_float32(zero_d, "z"), (std::vector<float>{-2.5f}));

  NpyArray one_d = read_npy(path("one_d.npy"));
  EXPECT_EQ(one_d.shape, (std::vector<int64_t>{7}));
  EXPECT_EQ(one_d.data, bytes_of(std::vector<int32_t>{-3, -2, -1, 0, 1, 2, 3}));
  EXPECT_EQ(npy_to_int8(one_d, "o"), (std::vector<int8_t>{-3, -2, -1, 0, 1, 2, 3}));

  NpyArray four_d = read_npy(path("four_d.npy"));
  EXPECT_EQ(four_d.shape, (std::vector<int64_t>{2, 3, 4, 5}));
  std::vector<float> values = npy_to_float32(four_d, "f");
  ASSERT_EQ(values.size(), 120u);
  for (size_t k = 0; k < values.size(); ++k) EXPECT_EQ(values[k], 0.5f * k - 30) << k;

  NpyArray transposed = read_npy(path("transposed_copy.npy"));
  EXPECT_EQ(transposed.shape, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(transposed.data, (std::vector<uint8_t>{0, 3, 1, 4, 2, 5}));

  std::vector<int16_t> expected;
  for (int v = -4; v < 8; ++v) expected.push_back(static_cast<int16_t>(v));
  for (const char* name : {"v2.npy", "v3.npy"}) {
    SCOPED_TRACE(name);
    std::vector<uint8_t> raw = read_bytes(name);
    ASSERT_GE(raw.size(), 8u);
    EXPECT_EQ(raw[6], name[1] - '0');  // numpy really wrote that version
    NpyArray a = read_npy(path(name));
    EXPECT_EQ(a.dtype, "int16");
    EXPECT_EQ(a.shape, (std::vector<int64_t>{3, 4}));
    EXPECT_EQ(a.data, bytes_of(expected));
  }

  NpyArray empty = read_npy(path("empty.npy"));
  EXPECT_EQ(empty.shape, (std::vector<int64_t>{0, 3}));
  EXPECT_TRUE(empty.data.empty());
}

TEST_F(NpyTest, NpyRejectsWhatNumpyWritesButNpusimDoesNotRead) {
  run_python(R"(
import sys, numpy as np
d = sys.argv[1]
np.save(d + '/fortran.npy', np.arange(6, dtype=np.int8).reshape(2, 3).T)
np.save(d + '/big_endian.npy', np.arange(3, dtype='>i4'))
np.save(d + '/complex.npy', np.zeros(2, dtype=np.complex64))
np.save(d + '/structured.npy', np.zeros(2, dtype=[('x', '<i4'), ('y', '<f4')]))
np.save(d + '/strings.npy', np.array(['ab', 'c']))
)");
  EXPECT_EQ(error_for_numpy_file("fortran.npy"),
            path("fortran.npy") +
                ": fortran_order is True: npusim reads C-order arrays only (save "
                "np.ascontiguousarray(a))");
  EXPECT_EQ(error_for_numpy_file("big_endian.npy"),
            path("big_endian.npy") +
                ": big-endian data (descr '>i4'): npusim reads little-endian arrays only (convert "
                "with a.astype(a.dtype.newbyteorder('<')))");
  std::string supported =
      "bool, int8, uint8, int16, uint16, int32, uint32, int64, uint64, float16, float32, float64";
  EXPECT_EQ(error_for_numpy_file("complex.npy"),
            path("complex.npy") + ": unsupported dtype '<c8' (npusim reads " + supported + ")");
  EXPECT_EQ(error_for_numpy_file("strings.npy"),
            path("strings.npy") + ": unsupported dtype '<U2' (npusim reads " + supported + ")");
  EXPECT_EQ(error_for_numpy_file("structured.npy"),
            path("structured.npy") +
                ": unsupported dtype: structured arrays (descr [('x', '<i4'), ('y', '<f4')]) are "
                "not supported");
}

TEST_F(NpyTest, NpyBadFileMessages) {
  const std::string f = path("bad.npy");
  const std::string good = "{'descr': '<i2', 'fortran_order': False, 'shape': (2,), }";
  const std::vector<uint8_t> four_bytes = {1, 0, 2, 0};

  EXPECT_EQ(error_for(npy_file(good, four_bytes)), "(no error)");  // the baseline is valid

  std::vector<uint8_t> text = {'x', ',', 'y', '\n', '1', ',', '2', '\n'};
  EXPECT_EQ(error_for(text),
            f + ": not an .npy file (it does not start with the magic \\x93NUMPY)");
  EXPECT_EQ(error_for({}), f + ": not an .npy file (it does not start with the magic \\x93NUMPY)");
  EXPECT_EQ(error_for({0x93, 'N', 'U', 'M', 'P', 'Y', 1}),
            f + ": truncated .npy file: it ends inside the version");
  EXPECT_EQ(error_for(npy_file(good, four_bytes, 4, 0)),
            f + ": unsupported .npy format version 4.0 (npusim reads 1.0, 2.0 and 3.0)");
  EXPECT_EQ(error_for(npy_file(good, four_bytes, 1, 1)),
            f + ": unsupported .npy format version 1.1 (npusim reads 1.0, 2.0 and 3.0)");
  EXPECT_EQ(error_for({0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0, 64, 0}),
            f + ": truncated .npy file: it ends inside the header length");
  std::vector<uint8_t> cut = npy_file(good, {});
  cut.resize(40);
  EXPECT_EQ(error_for(cut), f + ": truncated .npy file: the header is 118 bytes long but the file "
                                "has 30 after the preamble");

  const std::string malformed = f + ": malformed .npy header: ";
  EXPECT_EQ(error_for(npy_file("{'descr': '<i2', 'shape': (2,), }", four_bytes)),
            malformed + "missing key 'fortran_order'");
  EXPECT_EQ(error_for(npy_file("{'fortran_order': False, 'shape': (2,), }", four_bytes)),
            malformed + "missing key 'descr'");
  EXPECT_EQ(error_for(npy_file("{'descr': '<i2', 'fortran_order': False}", four_bytes)),
            malformed + "missing key 'shape'");
  EXPECT_EQ(
      error_for(npy_file("{'descr': '<i2', 'fortran_order': False, 'shape': [2], }", four_bytes)),
      malformed + "key 'shape': expected a tuple of non-negative integers, got [2]");
  EXPECT_EQ(
      error_for(npy_file("{'descr': '<i2', 'fortran_order': False, 'shape': (-2,), }", four_bytes)),
      malformed + "key 'shape': expected a tuple of non-negative integers, got (-2,)");
  EXPECT_EQ(error_for(npy_file("{'descr': '<i2', 'fortran_order': False, 'shape': (2.0,), }",
                               four_bytes)),
            malformed + "key 'shape': expected a tuple of non-negative integers, got (2.0,)");
  EXPECT_EQ(
      error_for(npy_file("{'descr': '<i2', 'fortran_order': 0, 'shape': (2,), }", four_bytes)),
      malformed + "key 'fortran_order': expected True or False, got 0");
  EXPECT_EQ(
      error_for(npy_file("{'descr': 3, 'fortran_order': False, 'shape': (2,), }", four_bytes)),
      malformed + "key 'descr': expected a string such as '<f4', got 3");
  EXPECT_EQ(
      error_for(npy_file("{'descr': '<i2', 'fortran_order': False, 'shape': (2,), 'extra': 1, }",
                         four_bytes)),
      malformed +
          "unexpected key 'extra' (the header has exactly 'descr', 'fortran_order' and "
          "'shape')");
  EXPECT_EQ(
      error_for(npy_file(
          "{'descr': '<i2', 'descr': '<i2', 'fortran_order': False, 'shape': (2,), }", four_bytes)),
      malformed + "key 'descr' appears twice");
  EXPECT_EQ(error_for(npy_file("descr='<i2'", four_bytes)),
            malformed +
                "expected the header to start with '{' (a Python dict literal) at header "
                "byte 0");
  EXPECT_EQ(error_for(npy_file("{'descr': '<i2' 'fortran_order': False}", four_bytes)),
            malformed + "expected ',' or '}' at header byte 16");
  EXPECT_EQ(error_for(npy_file("{'descr: '<i2', }", four_bytes)),
            malformed + "expected ':' after key 'descr: ' at header byte 10");
  EXPECT_EQ(error_for(npy_file("{'descr': '<i2', 'fortran_order': False, 'shape': (2,), } x",
                               four_bytes)),
            malformed + "unexpected text after the dict at header byte 58");

  EXPECT_EQ(
      error_for(npy_file("{'descr': '<i2', 'fortran_order': True, 'shape': (2,), }", four_bytes)),
      f + ": fortran_order is True: npusim reads C-order arrays only (save "
          "np.ascontiguousarray(a))");
  EXPECT_EQ(
      error_for(npy_file("{'descr': '>f8', 'fortran_order': False, 'shape': (2,), }", four_bytes)),
      f + ": big-endian data (descr '>f8'): npusim reads little-endian arrays only (convert "
          "with a.astype(a.dtype.newbyteorder('<')))");
  EXPECT_EQ(
      error_for(npy_file("{'descr': '<i2', 'fortran_order': False, 'shape': (3,), }", four_bytes)),
      f + ": data is shorter than the shape says: shape (3,) of int16 needs 6 bytes, the "
          "file has 4");
  EXPECT_EQ(
      error_for(npy_file("{'descr': '<i2', 'fortran_order': False, 'shape': (1,), }", four_bytes)),
      f + ": data is longer than the shape says: shape (1,) of int16 needs 2 bytes, the "
          "file has 4");
  EXPECT_EQ(error_for(npy_file(
                "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }",
                four_bytes)),
            f + ": shape (4294967296, 4294967296) is too large");
  EXPECT_EQ(
      error_for(npy_file("{'descr': '<O', 'fortran_order': False, 'shape': (2,), }", four_bytes)),
      f + ": unsupported dtype '<O' (npusim reads bool, int8, uint8, int16, uint16, int32, "
          "uint32, int64, uint64, float16, float32, float64)");

  try {
    read_npy(path("missing.npy"));
    ADD_FAILURE() << "no error for a missing file";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), path("missing.npy") + ": cannot open file");
  }
}

// Every proper prefix of a valid file is a UserError (never a crash, never a shorter array).
TEST_F(NpyTest, NpyEveryTruncationIsAUserError) {
  std::vector<uint8_t> whole =
      serialize_npy(NpyArray{"int16", {2, 3}, bytes_of(std::vector<int16_t>{1, 2, 3, 4, 5, 6})});
  ASSERT_EQ(whole.size(), 128u + 12u);  // the header with its growth room pads to 128 bytes
  for (size_t n = 0; n < whole.size(); ++n) {
    std::vector<uint8_t> prefix(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_THROW(parse_npy(prefix, "cut.npy"), UserError) << n << " bytes";
  }
}

// Any single corrupted header byte either still parses or is a UserError; run under
// NPUSIM_SANITIZE this also checks the parser never reads out of bounds.
TEST_F(NpyTest, NpyCorruptedHeaderBytesAreUserErrorsOrStillValid) {
  std::vector<uint8_t> whole = serialize_npy(NpyArray{"float32", {3}, std::vector<uint8_t>(12)});
  const std::vector<uint8_t> replacements = {0,   '\'', '"', '(', ')', ',', ':', '{',
                                             '}', '-',  '9', 'L', 'T', ' ', 0xff};
  int rejected = 0;
  for (size_t i = 0; i + 12 < whole.size(); ++i) {  // every byte before the 12 data bytes
    for (uint8_t r : replacements) {
      std::vector<uint8_t> bytes = whole;
      bytes[i] = r;
      try {
        NpyArray a = parse_npy(bytes, "corrupt.npy");
        EXPECT_EQ(a.data.size(), a.elements() * npy_item_size(a.dtype));
      } catch (const UserError&) {
        ++rejected;
      }
    }
  }
  EXPECT_GT(rejected, 0);
}

TEST_F(NpyTest, NpyHeaderVariantsNumpyAccepts) {
  // Double quotes, no trailing comma, other key order, Python 2 long literals, no byte order.
  NpyArray a = parse_npy(
      npy_file("{\"shape\": (2L,), \"fortran_order\": False, \"descr\": 'i2'}", {5, 0, 0xfb, 0xff}),
      "x.npy");
  EXPECT_EQ(a.dtype, "int16");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2}));
  EXPECT_EQ(npy_to_int8(a, "x.npy"), (std::vector<int8_t>{5, -5}));
  NpyArray b = parse_npy(
      npy_file("{'descr': '|b1', 'fortran_order': False, 'shape': (3, ), }", {1, 0, 1}), "y.npy");
  EXPECT_EQ(b.dtype, "bool");
  EXPECT_EQ(npy_to_float32(b, "y.npy"), (std::vector<float>{1, 0, 1}));
}

template <typename T>
NpyArray array_of(const std::string& dtype, const std::vector<T>& values) {
  return NpyArray{dtype, {static_cast<int64_t>(values.size())}, bytes_of(values)};
}

TEST_F(NpyTest, NpyConvertsEveryDtype) {
  // To int8, from every integer dtype: the patterns unscaled fit (signed in [-100, 99],
  // unsigned in [0, 199] reduced below 128).
  std::vector<int8_t> expected_signed, expected_unsigned;
  for (int i = 0; i < 24; ++i) {
    expected_signed.push_back(static_cast<int8_t>(signed_pattern(i)));
    expected_unsigned.push_back(static_cast<int8_t>(unsigned_pattern(i) % 128));
  }
  auto unsigned_fitting = [](auto zero) {
    std::vector<decltype(zero)> v;
    for (int i = 0; i < 24; ++i)
      v.push_back(static_cast<decltype(zero)>(unsigned_pattern(i) % 128));
    return v;
  };
  EXPECT_EQ(npy_to_int8(array_of("int8", signed_values<int8_t>(1)), "a"), expected_signed);
  EXPECT_EQ(npy_to_int8(array_of("int16", signed_values<int16_t>(1)), "a"), expected_signed);
  EXPECT_EQ(npy_to_int8(array_of("int32", signed_values<int32_t>(1)), "a"), expected_signed);
  EXPECT_EQ(npy_to_int8(array_of("int64", signed_values<int64_t>(1)), "a"), expected_signed);
  EXPECT_EQ(npy_to_int8(array_of("uint8", unsigned_fitting(uint8_t{0})), "a"), expected_unsigned);
  EXPECT_EQ(npy_to_int8(array_of("uint16", unsigned_fitting(uint16_t{0})), "a"), expected_unsigned);
  EXPECT_EQ(npy_to_int8(array_of("uint32", unsigned_fitting(uint32_t{0})), "a"), expected_unsigned);
  EXPECT_EQ(npy_to_int8(array_of("uint64", unsigned_fitting(uint64_t{0})), "a"), expected_unsigned);
  EXPECT_EQ(npy_to_int8(array_of("float64", std::vector<double>{-128.0, -0.0, 127.0}), "a"),
            (std::vector<int8_t>{-128, 0, 127}));
  EXPECT_EQ(npy_to_int8(array_of("float16", std::vector<uint16_t>{0xd800, 0x57f0}), "a"),
            (std::vector<int8_t>{-128, 127}));  // binary16 -128 and 127
  EXPECT_EQ(npy_to_int8(NpyArray{"bool", {3}, {1, 0, 1}}, "a"), (std::vector<int8_t>{1, 0, 1}));

  // Every float value (i - 11.5) * 0.25 is exact in float16/32/64.
  for (const char* dtype : {"float16", "float32", "float64"}) {
    SCOPED_TRACE(dtype);
    for (const auto& c : dtype_cases()) {
      if (c.dtype != dtype) continue;
      std::vector<float> v = npy_to_float32(NpyArray{c.dtype, {24}, c.data}, "a.npy");
      for (int i = 0; i < 24; ++i) EXPECT_EQ(v[i], static_cast<float>((i - 11.5) * 0.25)) << i;
    }
  }
  std::vector<float> ints =
      npy_to_float32(NpyArray{"int32", {24}, bytes_of(signed_values<int32_t>(10'000'000))}, "a");
  for (int i = 0; i < 24; ++i) {
    EXPECT_EQ(ints[i], static_cast<float>(signed_pattern(i) * 10'000'000)) << i;
  }
  std::vector<uint16_t> specials = {0x7c00, 0xfc00, 0x0001, 0x8000};  // inf, -inf, 2^-24, -0
  std::vector<float> halves = npy_to_float32(NpyArray{"float16", {4}, bytes_of(specials)}, "h");
  EXPECT_EQ(halves[0], std::numeric_limits<float>::infinity());
  EXPECT_EQ(halves[1], -std::numeric_limits<float>::infinity());
  EXPECT_EQ(halves[2], std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::signbit(halves[3]) && halves[3] == 0.0f);
}

TEST_F(NpyTest, NpyConversionErrorsNameTheElement) {
  auto float_error = [](const NpyArray& a) -> std::string {
    try {
      npy_to_float32(a, "x.npy");
    } catch (const UserError& e) {
      return e.what();
    }
    return "(no error)";
  };
  auto int8_error = [](const NpyArray& a) -> std::string {
    try {
      npy_to_int8(a, "x.npy");
    } catch (const UserError& e) {
      return e.what();
    }
    return "(no error)";
  };
  // 2^24 is exact in float32, 2^24 + 1 is not.
  EXPECT_EQ(float_error(NpyArray{"int32", {2}, bytes_of(std::vector<int32_t>{16777216, 16777217})}),
            "x.npy: element 1 (16777217) of the int32 array is not exactly representable as "
            "float32");
  EXPECT_EQ(float_error(
                NpyArray{"uint64", {1}, bytes_of(std::vector<uint64_t>{18446744073709551615ull})}),
            "x.npy: element 0 (18446744073709551615) of the uint64 array is not exactly "
            "representable as float32");
  EXPECT_EQ(
      float_error(NpyArray{"int64", {1}, bytes_of(std::vector<int64_t>{9223372036854775807ll})}),
      "x.npy: element 0 (9223372036854775807) of the int64 array is not exactly "
      "representable as float32");
  EXPECT_EQ(float_error(NpyArray{"float64", {3}, bytes_of(std::vector<double>{1.0, 2.0, -1e39})}),
            "x.npy: element 2 (-1e+39) of the float64 array is outside float32's range");
  EXPECT_EQ(
      float_error(NpyArray{
          "float64", {1}, bytes_of(std::vector<double>{std::numeric_limits<double>::infinity()})}),
      "(no error)");

  EXPECT_EQ(int8_error(NpyArray{"int16", {2}, bytes_of(std::vector<int16_t>{-128, -129})}),
            "x.npy: element 1 (-129) of the int16 array does not fit int8 (an integer in [-128, "
            "127])");
  EXPECT_EQ(int8_error(NpyArray{"uint8", {2}, {127, 128}}),
            "x.npy: element 1 (128) of the uint8 array does not fit int8 (an integer in [-128, "
            "127])");
  EXPECT_EQ(int8_error(NpyArray{"float32", {2}, bytes_of(std::vector<float>{-128.0f, 1.5f})}),
            "x.npy: element 1 (1.5) of the float32 array does not fit int8 (an integer in [-128, "
            "127])");
  EXPECT_EQ(
      int8_error(NpyArray{
          "float64", {1}, bytes_of(std::vector<double>{std::numeric_limits<double>::quiet_NaN()})}),
      "x.npy: element 0 (nan) of the float64 array does not fit int8 (an integer in [-128, "
      "127])");
}

TEST_F(NpyTest, NpyWritingAnInconsistentArrayIsABug) {
  EXPECT_THROW(write_npy(path("x.npy"), NpyArray{"int32", {3}, {0, 0, 0, 0}}), InternalError);
  EXPECT_THROW(write_npy(path("x.npy"), NpyArray{"complex64", {1}, {0, 0, 0, 0, 0, 0, 0, 0}}),
               InternalError);
  EXPECT_THROW(write_npy(path("no-such-dir/x.npy"), NpyArray{"int8", {1}, {0}}), UserError);
}

}  // namespace
}  // namespace npusim
