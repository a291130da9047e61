// A Da Vinci-style cube unit (Huawei Ascend's AI core; docs/systolic_array.md, "The cube unit"):
// not a systolic array, but a block multiplier that takes one M0 x K0 activation block and one
// K0 x N0 weight block per cycle and adds their M0 x N0 product into the accumulators. Here
// K0 = ArrayParams::rows, N0 = cols, M0 = block_m (Ascend 910: 16 x 16 x 16).
//
// Pipeline (the `pe` fidelity steps it register by register, cube_pe_model.hpp):
//   stage 0, fetch     block j of a tile is read from the operand buffers into the input
//                      registers (the fetch port takes one block per cycle, tiles in order);
//   stage 1, multiply  M0 x N0 x P products, P = K0 rounded up to a power of two, lanes k >= K
//                      of the tile (the zero padding of the operand block) give +0;
//   stages 2..L+1      an adder tree over the P lanes, one level per cycle, L = log2(P):
//                      level l adds lane pairs (2i, 2i+1) of level l-1;
//   stage L+2, write   acc = accumulate ? acc + sum : sum for the block's rows.
// Depth D = L + 3 stages (K0 = 16: D = 7). With s the cycle block 0 of a tile is fetched and
// B = ceil(M / M0) blocks:
//   s          = max(issue, fetch_free)        fetch_free = previous tile's s + B
//   done       = s + B + D - 1                 block B-1 written in cycle s + B - 1 + D - 1
//   next_issue = s + B
// The timing rule and its sources are in docs/systolic_array.md; the depth of the pipeline is an
// assumption (Huawei publishes the block rate, not the latency).
//
// Arithmetic (both fidelities): int8 products and sums in int32 with wrap-around (any order).
// bf16/fp16: each product exact, rounded once to fp32; the P lanes summed by the adder tree above
// in fp32 round-to-nearest-even (the tree's order, not k order); then one fp32 add into acc when
// the tile accumulates.
#pragma once

#include <cstdint>

#include "models/systolic/array_model.hpp"

namespace npusim::systolic {

struct CubeGeometry {
  int m0 = 0;      // activation rows per block
  int k0 = 0;      // reduction depth per block
  int n0 = 0;      // output columns per block
  int lanes = 1;   // P: k0 rounded up to a power of two
  int levels = 0;  // L = log2(P): adder-tree stages
  int depth = 0;   // D = L + 3 pipeline stages
};

CubeGeometry cube_geometry(const ArrayParams& params);

inline int cube_blocks(const CubeGeometry& g, int m) { return (m + g.m0 - 1) / g.m0; }

// The closed-form timing above, tile after tile.
class CubeTiming {
 public:
  explicit CubeTiming(const ArrayParams& params) : geometry_(cube_geometry(params)) {}
  TileTiming next(const TileShape& tile, uint64_t issue_cycle);

 private:
  CubeGeometry geometry_;
  uint64_t fetch_free_ = 0;
};

// One fp32 add of the adder tree or the accumulator (the library has -ffp-contract=off).
inline float cube_add(float x, float y) { return x + y; }

}  // namespace npusim::systolic
