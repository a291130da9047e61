// The `fast` fidelities of the systolic array and the cube unit (fast_array_model.hpp).
#include "models/systolic/fast_array_model.hpp"

#include <algorithm>

#include "models/systolic/number_formats.hpp"
#include "models/systolic/sparsity.hpp"
#include "support/error.hpp"

namespace npusim::systolic {

template <class Timing>
ClosedFormShell<Timing>::ClosedFormShell(const ArrayParams& params, const char* unit)
    : params_(params), unit_(unit), timing_(params), stats_(params) {}

template <class Timing>
TileTiming ClosedFormShell<Timing>::time_only(const TileShape& tile, DataType type, bool accumulate,
                                              uint64_t issue_cycle) {
  NPUSIM_CHECK(issue_cycle >= next_issue_cycle_,
               "{} {}x{}x{} issued at cycle {}, before the unit accepts it ({})", unit_, tile.m,
               tile.k, tile.n, issue_cycle, next_issue_cycle_);
  TileTiming timing = timing_.next(tile, issue_cycle);
  next_issue_cycle_ = timing.next_issue_cycle;
  stats_.add(tile, type, accumulate, timing);
  return timing;
}

template <class Timing>
TileTiming ClosedFormShell<Timing>::execute_int8(const TileShape& tile,
                                                 const Int8TileOperands& operands,
                                                 uint64_t issue_cycle) {
  check_tile(params_, tile, operands.a, operands.lda, operands.w, operands.ldw, operands.acc,
             operands.ldacc);
  // A sparse tile's products of zero weights are zero: the dense integer product gives its sums
  // exactly, once the weights are known to have the structure the slots need.
  if (tile.sparse) sparse_slots_of(params_, tile, operands.w, operands.ldw);
  int8_gemm_.run(tile, operands);
  return time_only(tile, DataType::kInt8, operands.accumulate, issue_cycle);
}

template <class Timing>
TileTiming ClosedFormShell<Timing>::execute_half16(Half16Format format, const TileShape& tile,
                                                   const Half16TileOperands& operands,
                                                   uint64_t issue_cycle) {
  check_tile(params_, tile, operands.a, operands.lda, operands.w, operands.ldw, operands.acc,
             operands.ldacc);
  if (tile.sparse) sparse_slots_of(params_, tile, operands.w, operands.ldw);
  half16_matmul(format, tile, operands);
  return time_only(tile, format == Half16Format::kBf16 ? DataType::kBf16 : DataType::kFp16,
                   operands.accumulate, issue_cycle);
}

template class ClosedFormShell<ClosedFormTiming>;
template class ClosedFormShell<CubeTiming>;

// Per row of a: the P lanes of every output of the row side by side (lane-major, n innermost), so
// each tree level is a loop over n that the compiler vectorises without reordering any output's
// additions.
void CubeFastModel::half16_matmul(Half16Format format, const TileShape& tile,
                                  const Half16TileOperands& op) {
  const int n_count = tile.n, k_count = tile.k, lanes = geometry_.lanes;
  w_float_.resize(static_cast<size_t>(k_count) * n_count);
  for (int k = 0; k < k_count; ++k) {
    const uint16_t* w_row = op.w + static_cast<ptrdiff_t>(k) * op.ldw;
    for (int n = 0; n < n_count; ++n) {
      w_float_[static_cast<size_t>(k) * n_count + n] = half16_to_float(format, w_row[n]);
    }
  }
  lanes_.resize(static_cast<size_t>(lanes) * n_count);
  for (int m = 0; m < tile.m; ++m) {
    const uint16_t* a_row = op.a + static_cast<ptrdiff_t>(m) * op.lda;
    for (int k = 0; k < k_count; ++k) {
      const float x = half16_to_float(format, a_row[k]);
      const float* w_row = &w_float_[static_cast<size_t>(k) * n_count];
      float* lane = &lanes_[static_cast<size_t>(k) * n_count];
      for (int n = 0; n < n_count; ++n) lane[n] = half16_product(x, w_row[n]);
    }
    std::fill(lanes_.begin() + static_cast<ptrdiff_t>(k_count) * n_count, lanes_.end(), 0.0f);
    for (int width = lanes / 2; width >= 1; width /= 2) {
      for (int i = 0; i < width; ++i) {
        float* out = &lanes_[static_cast<size_t>(i) * n_count];
        const float* left = &lanes_[static_cast<size_t>(2 * i) * n_count];
        const float* right = left + n_count;
        for (int n = 0; n < n_count; ++n) out[n] = cube_add(left[n], right[n]);
      }
    }
    float* acc_row = op.acc + static_cast<ptrdiff_t>(m) * op.ldacc;
    const float* sums = lanes_.data();
    if (op.accumulate) {
      for (int n = 0; n < n_count; ++n) acc_row[n] = cube_add(acc_row[n], sums[n]);
    } else {
      std::copy(sums, sums + n_count, acc_row);
    }
  }
}

}  // namespace npusim::systolic
