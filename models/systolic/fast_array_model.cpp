// The `fast` fidelity: closed-form cycles, blocked-GEMM values.
#include "models/systolic/fast_array_model.hpp"

#include "support/error.hpp"

namespace npusim::systolic {

FastArrayModel::FastArrayModel(const ArrayParams& params)
    : params_(params), timing_(params), stats_(params) {}

TileTiming FastArrayModel::time_only(const TileShape& tile, DataType type, bool accumulate,
                                     uint64_t issue_cycle) {
  NPUSIM_CHECK(issue_cycle >= next_issue_cycle_,
               "systolic: tile {}x{}x{} issued at cycle {}, before the array accepts it ({})",
               tile.m, tile.k, tile.n, issue_cycle, next_issue_cycle_);
  TileTiming timing = timing_.next(tile, issue_cycle);
  next_issue_cycle_ = timing.next_issue_cycle;
  stats_.add(tile, type, accumulate, timing);
  return timing;
}

TileTiming FastArrayModel::execute_int8(const TileShape& tile, const Int8TileOperands& operands,
                                        uint64_t issue_cycle) {
  check_tile(params_, tile, operands.a, operands.lda, operands.w, operands.ldw, operands.acc,
             operands.ldacc);
  int8_gemm_.run(tile, operands);
  return time_only(tile, DataType::kInt8, operands.accumulate, issue_cycle);
}

TileTiming FastArrayModel::execute_half16(Half16Format format, const TileShape& tile,
                                          const Half16TileOperands& operands,
                                          uint64_t issue_cycle) {
  check_tile(params_, tile, operands.a, operands.lda, operands.w, operands.ldw, operands.acc,
             operands.ldacc);
  half16_gemm_.run(format, tile, operands);
  return time_only(tile, format == Half16Format::kBf16 ? DataType::kBf16 : DataType::kFp16,
                   operands.accumulate, issue_cycle);
}

}  // namespace npusim::systolic
