// N:M structured sparsity on a weight-stationary systolic array (matrix_unit.sparsity "N:M",
// docs/systolic_array.md "Sparse tiles"), as NVIDIA's sparse tensor cores do it for 2:4 (A100
// whitepaper, 2020: "Fine-Grained Structured Sparsity") and as VEGETA (Jeong et al., HPCA 2023)
// builds it into a systolic array.
//
// A sparse tile's K rows of weights fall into groups of M consecutive rows (from the tile's first
// row; the last group may be shorter), and each column holds at most N non-zeros per group. The
// array keeps only N weight slots per group: a tile of K rows occupies
//     Kc = (K / M) * N + min(N, K mod M)
// stationary rows, so one array of R rows covers R / N * M rows of K, and the tile loads and
// streams as a dense tile of Kc rows would (timing_rules.hpp with K = Kc). Each slot holds a
// weight and its index within its group (ceil(log2 M) bits of metadata); a row of PEs receives
// the M activations of its group and each PE selects its own with an M:1 multiplexer. A slot left
// empty (a group with fewer than N non-zeros) adds nothing. The compression happens on the way
// from the weight buffer into the array (slots filled with the group's non-zeros in k order).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "models/systolic/array_model.hpp"

namespace npusim::systolic {

// Kc: stationary rows of a sparse tile of `k` rows on an n_keep:m_group array.
int sparse_rows(int k, int n_keep, int m_group);

// The stationary slots of one sparse tile: for slot row r and column q, the row of the tile's K
// that the weight comes from (source[r * n + q]), or -1 for an empty slot.
struct SparseSlots {
  int rows = 0;  // Kc
  std::vector<int32_t> source;
};

[[noreturn, gnu::cold]] void fail_group(const TileShape& tile, int n, int k0, int n_keep,
                                        int m_group);

// The slots of a sparse tile's weights w (K x N, row-major, ldw); `is_zero(k, n)` says whether
// weight (k, n) is zero. A column with more than N non-zeros in a group is an internal error (the
// compiler marks a tile sparse only when its weights have the structure).
template <class IsZero>
SparseSlots sparse_slots(const ArrayParams& params, const TileShape& tile, IsZero is_zero) {
  SparseSlots s;
  const int nk = params.sparse_n, mg = params.sparse_m;
  s.rows = sparse_rows(tile.k, nk, mg);
  s.source.assign(static_cast<size_t>(s.rows) * tile.n, -1);
  for (int n = 0; n < tile.n; ++n) {
    int slot_row = 0;
    for (int k0 = 0; k0 < tile.k; k0 += mg) {
      const int len = std::min(mg, tile.k - k0), slots = std::min(nk, len);
      int used = 0;
      for (int k = k0; k < k0 + len; ++k) {
        if (is_zero(k, n)) continue;
        if (used == slots) fail_group(tile, n, k0, nk, mg);
        s.source[static_cast<size_t>(slot_row + used) * tile.n + n] = k;
        ++used;
      }
      slot_row += slots;
    }
  }
  return s;
}

// Whether a weight is zero: an int8 0, or a 16-bit float +0 or -0.
inline bool weight_is_zero(int8_t w) { return w == 0; }
inline bool weight_is_zero(uint16_t w) { return (w & 0x7fffu) == 0; }

// The slots of a sparse tile's int8 or 16-bit weights.
template <class T>
SparseSlots sparse_slots_of(const ArrayParams& params, const TileShape& tile, const T* w, int ldw) {
  return sparse_slots(params, tile, [&](int k, int n) {
    return weight_is_zero(w[static_cast<ptrdiff_t>(k) * ldw + n]);
  });
}

}  // namespace npusim::systolic
