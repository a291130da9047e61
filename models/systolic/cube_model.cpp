// Geometry and closed-form timing of the cube unit (cube_model.hpp states the rule).
#include "models/systolic/cube_model.hpp"

#include <algorithm>

#include "support/error.hpp"

namespace npusim::systolic {

CubeGeometry cube_geometry(const ArrayParams& params) {
  NPUSIM_CHECK(params.kind == MatrixUnitKind::kCube && params.rows >= 1 && params.cols >= 1 &&
                   params.block_m >= 1,
               "cube: block {}x{}x{} (M0 x K0 x N0) of a {} unit", params.block_m, params.rows,
               params.cols, to_string(params.kind));
  CubeGeometry g;
  g.m0 = params.block_m;
  g.k0 = params.rows;
  g.n0 = params.cols;
  while (g.lanes < g.k0) {
    g.lanes *= 2;
    g.levels += 1;
  }
  g.depth = g.levels + 3;
  return g;
}

TileTiming CubeTiming::next(const TileShape& tile, uint64_t issue_cycle) {
  const uint64_t blocks = static_cast<uint64_t>(cube_blocks(geometry_, tile.m));
  TileTiming timing;
  timing.start_cycle = std::max(issue_cycle, fetch_free_);
  timing.done_cycle = timing.start_cycle + blocks + geometry_.depth - 1;
  timing.next_issue_cycle = timing.start_cycle + blocks;
  fetch_free_ = timing.next_issue_cycle;
  return timing;
}

}  // namespace npusim::systolic
