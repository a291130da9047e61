// Shared helpers for the systolic-array tests: random operands, a tile runner that drives the
// fast and pe fidelities side by side, naive reference products.
#pragma once

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "models/systolic/array_model.hpp"
#include "models/systolic/number_formats.hpp"

namespace npusim::systolic::testing {

enum class Elem { kInt8, kBf16, kFp16 };

inline const char* elem_name(Elem e) {
  return e == Elem::kInt8 ? "int8" : e == Elem::kBf16 ? "bf16" : "fp16";
}

// fp32 -> fp16 bits for test data (values chosen inside fp16's normal range, truncated).
inline uint16_t float_to_fp16_truncate(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const int exponent = static_cast<int>((bits >> 23) & 0xff) - 127 + 15;
  if (exponent <= 0) return static_cast<uint16_t>(sign);
  if (exponent >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
  return static_cast<uint16_t>(sign | (exponent << 10) | ((bits >> 13) & 0x3ffu));
}

// A random 16-bit float: sign, a spread of exponents, sometimes zero, negative zero, a
// subnormal (fp16) or a tiny/huge bf16 whose products leave fp32's normal range.
inline uint16_t random_half16(std::mt19937& rng, Elem e) {
  const int pick = static_cast<int>(rng() % 64);
  if (pick == 0) return 0;
  if (pick == 1) return 0x8000;
  if (e == Elem::kFp16) {
    if (pick == 2) return static_cast<uint16_t>(1 + rng() % 0x3ff);  // subnormal
    const float magnitude =
        std::ldexp(1.0f + (rng() % 1024) / 1024.0f, static_cast<int>(rng() % 16) - 8);
    return float_to_fp16_truncate(rng() % 2 ? -magnitude : magnitude);
  }
  int exponent = static_cast<int>(rng() % 24) - 12;
  if (pick == 2) exponent = -70 - static_cast<int>(rng() % 10);  // products underflow
  if (pick == 3) exponent = 60 + static_cast<int>(rng() % 8);    // products overflow
  const float magnitude = std::ldexp(1.0f + (rng() % 65536) / 65536.0f, exponent);
  return float_to_bf16(rng() % 2 ? -magnitude : magnitude);
}

// One tile's operands and accumulator (initialised with random values, row-major, padded
// leading dimensions to exercise lda/ldw/ldacc).
struct TileBuffers {
  TileShape shape;
  Elem elem = Elem::kInt8;
  bool accumulate = false;
  int lda = 0, ldw = 0, ldacc = 0;
  std::vector<int8_t> a8, w8;
  std::vector<uint16_t> a16, w16;
  std::vector<int32_t> acc_int;
  std::vector<float> acc_float;

  static TileBuffers random(std::mt19937& rng, const TileShape& shape, Elem elem) {
    TileBuffers b;
    b.shape = shape;
    b.elem = elem;
    b.accumulate = rng() % 2 == 0;
    b.lda = shape.k + static_cast<int>(rng() % 3);
    b.ldw = shape.n + static_cast<int>(rng() % 3);
    b.ldacc = shape.n + static_cast<int>(rng() % 3);
    const size_t a_size = static_cast<size_t>(shape.m) * b.lda;
    const size_t w_size = static_cast<size_t>(shape.k) * b.ldw;
    const size_t acc_size = static_cast<size_t>(shape.m) * b.ldacc;
    if (elem == Elem::kInt8) {
      b.a8.resize(a_size);
      b.w8.resize(w_size);
      for (auto& x : b.a8) x = static_cast<int8_t>(rng());
      for (auto& x : b.w8) x = static_cast<int8_t>(rng());
      b.acc_int.resize(acc_size);
      for (auto& x : b.acc_int) x = static_cast<int32_t>(rng());
    } else {
      b.a16.resize(a_size);
      b.w16.resize(w_size);
      for (auto& x : b.a16) x = random_half16(rng, elem);
      for (auto& x : b.w16) x = random_half16(rng, elem);
      b.acc_float.resize(acc_size);
      for (auto& x : b.acc_float) x = std::ldexp(static_cast<float>(rng() % 2001) - 1000.0f, -4);
    }
    return b;
  }

  TileTiming run(ArrayModel& model, uint64_t issue_cycle) {
    if (elem == Elem::kInt8) {
      return model.execute_int8(
          shape, {a8.data(), lda, w8.data(), ldw, acc_int.data(), ldacc, accumulate}, issue_cycle);
    }
    const Half16TileOperands op{a16.data(),       lda,   w16.data(), ldw,
                                acc_float.data(), ldacc, accumulate};
    return elem == Elem::kBf16 ? model.execute_bf16(shape, op, issue_cycle)
                               : model.execute_fp16(shape, op, issue_cycle);
  }

  // Bitwise equality of the accumulators (fp32 compared as bit patterns; any two NaNs are equal,
  // their payloads are not specified).
  bool same_results(const TileBuffers& other) const {
    if (elem == Elem::kInt8) return acc_int == other.acc_int;
    if (acc_float.size() != other.acc_float.size()) return false;
    for (size_t i = 0; i < acc_float.size(); ++i) {
      const float x = acc_float[i], y = other.acc_float[i];
      if (std::isnan(x) && std::isnan(y)) continue;
      if (std::bit_cast<uint32_t>(x) != std::bit_cast<uint32_t>(y)) return false;
    }
    return true;
  }
};

inline void expect_same_timing(const TileTiming& fast, const TileTiming& pe) {
  EXPECT_EQ(fast.start_cycle, pe.start_cycle);
  EXPECT_EQ(fast.done_cycle, pe.done_cycle);
  EXPECT_EQ(fast.next_issue_cycle, pe.next_issue_cycle);
  EXPECT_EQ(fast.busy_cycles, pe.busy_cycles);
}

// The issue cycle of the tile after one timed `t`: mostly back to back, sometimes a few cycles
// later, now and then a long gap.
inline uint64_t next_issue_cycle(std::mt19937& rng, const TileTiming& t) {
  const int gap = static_cast<int>(rng() % 16);
  return t.next_issue_cycle + (gap < 10 ? 0 : gap < 15 ? rng() % 8 : 50 + rng() % 100);
}

// The statistics two fidelities of one unit must agree on after the same `tiles` tiles (the
// stationary rows aside: the caller checks those).
inline void expect_same_counts(const ArrayStats& f, const ArrayStats& p, int tiles) {
  EXPECT_EQ(f.tiles, static_cast<uint64_t>(tiles));
  EXPECT_EQ(f.tiles, p.tiles);
  EXPECT_EQ(f.macs, p.macs);
  EXPECT_EQ(f.int8_macs + f.bf16_macs + f.fp16_macs, f.macs);
  EXPECT_EQ(f.int8_macs, p.int8_macs);
  EXPECT_EQ(f.bf16_macs, p.bf16_macs);
  EXPECT_EQ(f.fp16_macs, p.fp16_macs);
  EXPECT_EQ(f.accumulator_writes, p.accumulator_writes);
  EXPECT_EQ(f.accumulator_reads, p.accumulator_reads);
  EXPECT_EQ(f.busy_cycles, p.busy_cycles);
  EXPECT_EQ(f.last_done_cycle, p.last_done_cycle);
}

// A cube unit of M0 x K0 x N0 blocks (ArrayParams keeps K0 in rows, N0 in cols).
inline ArrayParams cube_params(int m0, int k0, int n0) {
  ArrayParams p;
  p.kind = MatrixUnitKind::kCube;
  p.rows = k0;
  p.cols = n0;
  p.block_m = m0;
  return p;
}

}  // namespace npusim::systolic::testing
