// Blocked matrix products for the `fast` fidelity (see gemm_kernels.hpp).
#include "models/systolic/gemm_kernels.hpp"

#include <algorithm>

#include "models/systolic/number_formats.hpp"

namespace npusim::systolic {

namespace {

constexpr int kKAlign = 16;  // packed rows padded with zeros to a multiple of this many elements

int round_up(int value, int to) { return (value + to - 1) / to * to; }

// Two rows of `a` against four packed columns of `w`: eight independent dot products that share
// their loads; each is a reduction the vectoriser maps onto 16-bit multiply-add instructions.
void dot_2x4(const int16_t* a0, const int16_t* a1, const int16_t* w0, int kp, int ldw,
             int32_t out[2][4]) {
  const int16_t* w1 = w0 + ldw;
  const int16_t* w2 = w1 + ldw;
  const int16_t* w3 = w2 + ldw;
  int32_t s00 = 0, s01 = 0, s02 = 0, s03 = 0, s10 = 0, s11 = 0, s12 = 0, s13 = 0;
  for (int k = 0; k < kp; ++k) {
    const int32_t x0 = a0[k], x1 = a1[k];
    s00 += x0 * w0[k];
    s01 += x0 * w1[k];
    s02 += x0 * w2[k];
    s03 += x0 * w3[k];
    s10 += x1 * w0[k];
    s11 += x1 * w1[k];
    s12 += x1 * w2[k];
    s13 += x1 * w3[k];
  }
  out[0][0] = s00, out[0][1] = s01, out[0][2] = s02, out[0][3] = s03;
  out[1][0] = s10, out[1][1] = s11, out[1][2] = s12, out[1][3] = s13;
}

int32_t dot_1x1(const int16_t* a, const int16_t* w, int kp) {
  int32_t sum = 0;
  for (int k = 0; k < kp; ++k) sum += static_cast<int32_t>(a[k]) * w[k];
  return sum;
}

// Wrap-around int32 addition (the accumulator's arithmetic) without signed-overflow UB.
int32_t add_wrap(int32_t x, int32_t y) {
  return static_cast<int32_t>(static_cast<uint32_t>(x) + static_cast<uint32_t>(y));
}

}  // namespace

void Int8Gemm::run(const TileShape& tile, const Int8TileOperands& op) {
  // The dot products are int32: 2^16 products of at most 2^14 each cannot overflow. Longer
  // reductions (os tiles stream any K) go in chunks; wrap-around sums are the same in any order.
  constexpr int kMaxChunk = 1 << 16;
  if (tile.k > kMaxChunk) {
    for (int k0 = 0; k0 < tile.k; k0 += kMaxChunk) {
      Int8TileOperands chunk = op;
      chunk.a = op.a + k0;
      chunk.w = op.w + static_cast<ptrdiff_t>(k0) * op.ldw;
      chunk.accumulate = op.accumulate || k0 > 0;
      run({tile.m, std::min(kMaxChunk, tile.k - k0), tile.n}, chunk);
    }
    return;
  }
  const int m_count = tile.m, k_count = tile.k, n_count = tile.n;
  const int kp = round_up(std::max(k_count, 1), kKAlign);
  // Each column of w packed once per tile, transposed: w_packed_[n * kp + k].
  w_packed_.assign(static_cast<size_t>(n_count) * kp, 0);
  for (int k = 0; k < k_count; ++k) {
    const int8_t* w_row = op.w + static_cast<ptrdiff_t>(k) * op.ldw;
    for (int n = 0; n < n_count; ++n) w_packed_[static_cast<size_t>(n) * kp + k] = w_row[n];
  }
  // Rows of a are packed in blocks so that the packed block stays in L1/L2 while all of w
  // streams past it.
  constexpr int kMBlock = 32;
  a_packed_.assign(static_cast<size_t>(kMBlock) * kp, 0);
  sums_.resize(static_cast<size_t>(kMBlock) * n_count);
  for (int m0 = 0; m0 < m_count; m0 += kMBlock) {
    const int mb = std::min(kMBlock, m_count - m0);
    for (int i = 0; i < mb; ++i) {
      const int8_t* a_row = op.a + static_cast<ptrdiff_t>(m0 + i) * op.lda;
      int16_t* dst = &a_packed_[static_cast<size_t>(i) * kp];
      for (int k = 0; k < k_count; ++k) dst[k] = a_row[k];
    }
    int i = 0;
    for (; i + 2 <= mb; i += 2) {
      const int16_t* a0 = &a_packed_[static_cast<size_t>(i) * kp];
      const int16_t* a1 = a0 + kp;
      int n = 0;
      for (; n + 4 <= n_count; n += 4) {
        int32_t out[2][4];
        dot_2x4(a0, a1, &w_packed_[static_cast<size_t>(n) * kp], kp, kp, out);
        for (int j = 0; j < 4; ++j) {
          sums_[static_cast<size_t>(i) * n_count + n + j] = out[0][j];
          sums_[static_cast<size_t>(i + 1) * n_count + n + j] = out[1][j];
        }
      }
      for (; n < n_count; ++n) {
        const int16_t* wc = &w_packed_[static_cast<size_t>(n) * kp];
        sums_[static_cast<size_t>(i) * n_count + n] = dot_1x1(a0, wc, kp);
        sums_[static_cast<size_t>(i + 1) * n_count + n] = dot_1x1(a1, wc, kp);
      }
    }
    for (; i < mb; ++i) {
      const int16_t* a0 = &a_packed_[static_cast<size_t>(i) * kp];
      for (int n = 0; n < n_count; ++n) {
        sums_[static_cast<size_t>(i) * n_count + n] =
            dot_1x1(a0, &w_packed_[static_cast<size_t>(n) * kp], kp);
      }
    }
    for (int r = 0; r < mb; ++r) {
      int32_t* acc_row = op.acc + static_cast<ptrdiff_t>(m0 + r) * op.ldacc;
      const int32_t* sum_row = &sums_[static_cast<size_t>(r) * n_count];
      if (op.accumulate) {
        for (int n = 0; n < n_count; ++n) acc_row[n] = add_wrap(acc_row[n], sum_row[n]);
      } else {
        std::copy(sum_row, sum_row + n_count, acc_row);
      }
    }
  }
}

void Half16Gemm::run(Half16Format format, const TileShape& tile, const Half16TileOperands& op) {
  const int m_count = tile.m, k_count = tile.k, n_count = tile.n;
  w_float_.resize(static_cast<size_t>(k_count) * n_count);
  for (int k = 0; k < k_count; ++k) {
    const uint16_t* w_row = op.w + static_cast<ptrdiff_t>(k) * op.ldw;
    for (int n = 0; n < n_count; ++n) {
      w_float_[static_cast<size_t>(k) * n_count + n] = half16_to_float(format, w_row[n]);
    }
  }
  a_row_.resize(k_count);
  sums_.resize(n_count);
  for (int m = 0; m < m_count; ++m) {
    const uint16_t* a_src = op.a + static_cast<ptrdiff_t>(m) * op.lda;
    for (int k = 0; k < k_count; ++k) a_row_[k] = half16_to_float(format, a_src[k]);
    float* sums = sums_.data();
    std::fill(sums, sums + n_count, 0.0f);
    if (tile.sparse) {
      // The sparse array adds no product of a zero weight (sparsity.hpp): a zero weight leaves
      // the sum as it is even where the activation is infinite or NaN.
      for (int k = 0; k < k_count; ++k) {
        const float x = a_row_[k];
        const float* w_row = &w_float_[static_cast<size_t>(k) * n_count];
        for (int n = 0; n < n_count; ++n) {
          const float sum = sums[n] + half16_product(x, w_row[n]);
          sums[n] = w_row[n] == 0.0f ? sums[n] : sum;
        }
      }
    } else {
      for (int k = 0; k < k_count; ++k) {
        const float x = a_row_[k];
        const float* w_row = &w_float_[static_cast<size_t>(k) * n_count];
        for (int n = 0; n < n_count; ++n) sums[n] = sums[n] + half16_product(x, w_row[n]);
      }
    }
    float* acc_row = op.acc + static_cast<ptrdiff_t>(m) * op.ldacc;
    if (op.accumulate) {
      for (int n = 0; n < n_count; ++n) acc_row[n] = acc_row[n] + sums[n];
    } else {
      std::copy(sums, sums + n_count, acc_row);
    }
  }
}

}  // namespace npusim::systolic
