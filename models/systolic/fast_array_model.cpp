// The `fast` fidelity: closed-form cycles, blocked-GEMM values.
#include "models/systolic/fast_array_model.hpp"

#include "support/error.hpp"

namespace npusim::systolic {

void check_tile(const ArrayParams& params, const TileShape& tile, const void* a, int lda,
                const void* w, int ldw, const void* acc, int ldacc) {
  NPUSIM_CHECK(tile_fits(params, tile),
               "systolic: tile {}x{}x{} (MxKxN) does not fit the {}x{} {} array", tile.m, tile.k,
               tile.n, params.rows, params.cols, to_string(params.dataflow));
  NPUSIM_CHECK(a != nullptr && w != nullptr && acc != nullptr,
               "systolic: tile {}x{}x{} has a null operand", tile.m, tile.k, tile.n);
  NPUSIM_CHECK(lda >= tile.k && ldw >= tile.n && ldacc >= tile.n,
               "systolic: leading dimensions lda={} ldw={} ldacc={} too small for tile {}x{}x{}",
               lda, ldw, ldacc, tile.m, tile.k, tile.n);
}

FastArrayModel::FastArrayModel(const ArrayParams& params) : params_(params), timing_(params) {}

TileTiming FastArrayModel::time_tile(const TileShape& tile, uint64_t issue_cycle) {
  TileTiming timing = timing_.next(tile, issue_cycle);
  stats_.add(tile, timing);
  return timing;
}

TileTiming FastArrayModel::execute_int8(const TileShape& tile, const Int8TileOperands& operands,
                                        uint64_t issue_cycle) {
  check_tile(params_, tile, operands.a, operands.lda, operands.w, operands.ldw, operands.acc,
             operands.ldacc);
  int8_gemm_.run(tile, operands);
  return time_tile(tile, issue_cycle);
}

TileTiming FastArrayModel::execute_half16(Half16Format format, const TileShape& tile,
                                          const Half16TileOperands& operands,
                                          uint64_t issue_cycle) {
  check_tile(params_, tile, operands.a, operands.lda, operands.w, operands.ldw, operands.acc,
             operands.ldacc);
  half16_gemm_.run(format, tile, operands);
  return time_tile(tile, issue_cycle);
}

}  // namespace npusim::systolic
