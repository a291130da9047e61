// Contract between the matrix unit (models/matrix_unit.*) and the systolic-array cores.
//
// An R x C systolic array executes one MATMUL tile at a time:
//     acc[m][n] (+)= sum_k a[m][k] * w[k][n]       for m < M, n < N, k < K
// The tile's stationary operand must fit the array (SCALE-Sim's mapping):
//     ws: K <= R and N <= C  (weights stay; M rows of `a` stream through)
//     os: M <= R and N <= C  (outputs stay;  K steps stream through)
//     is: K <= R and M <= C  (inputs stay;  N columns of `w` stream through)
// The compiler emits tiles that fit; a tile that does not is an internal error.
//
// Timing contract: execute() is called in program order, once the tile's operands are in the
// buffers and the array accepted it (`issue_cycle` >= the previous tile's next_issue_cycle). The
// model remembers what the previous tile left in the array (weights loaded or preloaded, pipeline
// still draining) and returns when this tile's last result is in the accumulators and when the
// array can accept the next tile. Both fidelities return identical cycles and values.
#pragma once

#include <cstdint>
#include <memory>

#include "arch/types.hpp"

namespace npusim::systolic {

enum class Fidelity { kFast, kPe };

struct ArrayParams {
  int rows = 0;
  int cols = 0;
  Dataflow dataflow = Dataflow::kWeightStationary;
  // True when the PEs hold a second weight register so the next tile's weights shift in while the
  // current tile computes (TPU v1 does this).
  bool weight_double_buffer = true;
};

struct TileShape {
  int m = 0;
  int k = 0;
  int n = 0;
};

// int8 x int8 -> int32 operands, row-major with leading dimensions in elements.
struct Int8TileOperands {
  const int8_t* a = nullptr;
  int lda = 0;
  const int8_t* w = nullptr;
  int ldw = 0;
  int32_t* acc = nullptr;
  int ldacc = 0;
  bool accumulate = false;  // false: acc = a*w; true: acc += a*w
};

struct TileTiming {
  uint64_t start_cycle = 0;       // first cycle the tile uses the array (weight load or stream)
  uint64_t done_cycle = 0;        // cycle at which the last result is in the accumulators
  uint64_t next_issue_cycle = 0;  // earliest cycle the array accepts the next tile
  uint64_t busy_cycles = 0;       // cycles of array activity charged to this tile
};

bool tile_fits(const ArrayParams& array, const TileShape& tile);

class ArrayModel {
 public:
  virtual ~ArrayModel() = default;
  virtual TileTiming execute_int8(const TileShape& tile, const Int8TileOperands& operands,
                                  uint64_t issue_cycle) = 0;
};

std::unique_ptr<ArrayModel> make_array_model(const ArrayParams& params, Fidelity fidelity);

}  // namespace npusim::systolic
