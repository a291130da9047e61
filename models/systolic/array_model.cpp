// Tile fit rule and the factory of the two fidelities (array_model.hpp).
#include "models/systolic/array_model.hpp"

#include <algorithm>
#include <vector>

#include "models/systolic/cube_pe_model.hpp"
#include "models/systolic/fast_array_model.hpp"
#include "models/systolic/pe_array_model.hpp"
#include "models/systolic/sparsity.hpp"
#include "support/error.hpp"

namespace npusim::systolic {

const char* to_string(Fidelity fidelity) { return fidelity == Fidelity::kFast ? "fast" : "pe"; }

std::optional<Fidelity> parse_fidelity(const std::string& text) {
  if (text == "fast") return Fidelity::kFast;
  if (text == "pe") return Fidelity::kPe;
  return std::nullopt;
}

bool tile_fits(const ArrayParams& array, const TileShape& tile) {
  if (tile.m < 1 || tile.k < 1 || tile.n < 1) return false;
  // A cube reduces K0 = rows per block and writes N0 = cols outputs; M streams in blocks of M0.
  if (array.kind == MatrixUnitKind::kCube) return tile.k <= array.rows && tile.n <= array.cols;
  if (tile.sparse) {
    return array.sparse_n > 0 && array.dataflow == Dataflow::kWeightStationary &&
           sparse_rows(tile.k, array.sparse_n, array.sparse_m) <= array.rows &&
           tile.n <= array.cols;
  }
  switch (array.dataflow) {
    case Dataflow::kWeightStationary:
      return tile.k <= array.rows && tile.n <= array.cols;
    case Dataflow::kOutputStationary:
      return tile.m <= array.rows && tile.n <= array.cols;
    case Dataflow::kInputStationary:
      return tile.k <= array.rows && tile.m <= array.cols;
  }
  return false;
}

TileTiming ArrayModel::time_only(const TileShape& tile, DataType type, bool accumulate,
                                 uint64_t issue_cycle) {
  NPUSIM_CHECK(tile.m >= 1 && tile.k >= 1 && tile.n >= 1, "systolic: tile {}x{}x{}", tile.m, tile.k,
               tile.n);
  const size_t a = size_t(tile.m) * tile.k, w = size_t(tile.k) * tile.n,
               acc = size_t(tile.m) * tile.n;
  if (type == DataType::kInt8) {
    std::vector<int8_t> zeros(std::max(a, w), 0);
    std::vector<int32_t> scratch(acc, 0);
    return execute_int8(
        tile, {zeros.data(), tile.k, zeros.data(), tile.n, scratch.data(), tile.n, accumulate},
        issue_cycle);
  }
  NPUSIM_CHECK(type == DataType::kBf16 || type == DataType::kFp16,
               "systolic: no tile timing for data type {}", to_string(type));
  std::vector<uint16_t> zeros(std::max(a, w), 0);
  std::vector<float> scratch(acc, 0.0f);
  return execute_half16(
      type == DataType::kBf16 ? Half16Format::kBf16 : Half16Format::kFp16, tile,
      {zeros.data(), tile.k, zeros.data(), tile.n, scratch.data(), tile.n, accumulate},
      issue_cycle);
}

std::unique_ptr<ArrayModel> make_array_model(const ArrayParams& params, Fidelity fidelity) {
  NPUSIM_CHECK(params.rows >= 1 && params.cols >= 1,
               "systolic: array of {}x{} PEs (rows and cols must be at least 1)", params.rows,
               params.cols);
  NPUSIM_CHECK(params.sparse_n == 0 || (params.kind == MatrixUnitKind::kSystolic &&
                                        params.dataflow == Dataflow::kWeightStationary &&
                                        params.sparse_n >= 1 && params.sparse_m > params.sparse_n),
               "systolic: {}:{} sparsity on a {} {} array", params.sparse_n, params.sparse_m,
               to_string(params.dataflow), to_string(params.kind));
  if (params.kind == MatrixUnitKind::kCube) {
    NPUSIM_CHECK(params.block_m >= 1, "cube: block of {} rows (block_m must be at least 1)",
                 params.block_m);
    if (fidelity == Fidelity::kPe) return std::make_unique<CubePeModel>(params);
    return std::make_unique<CubeFastModel>(params);
  }
  if (fidelity == Fidelity::kPe) return std::make_unique<PeArrayModel>(params);
  return std::make_unique<FastArrayModel>(params);
}

}  // namespace npusim::systolic
