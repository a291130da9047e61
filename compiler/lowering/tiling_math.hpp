// Small arithmetic shared by the tiler and the emitters: alignment, block counts, slab extents.
#pragma once

#include <algorithm>
#include <cstdint>

#include "arch/isa.hpp"
#include "compiler/lowering/tiling.hpp"

namespace npusim::lowering {

inline constexpr uint64_t kAlign = 64;
// The least chunk an elementwise layer streams an off-chip operand in.
inline constexpr uint64_t kEltwiseMinChunk = 4096;
inline uint64_t align_up(uint64_t x, uint64_t a = kAlign) { return (x + a - 1) / a * a; }
inline int ceil_div(int a, int b) { return (a + b - 1) / b; }

inline int unit_key(UnitKind kind, int index) { return static_cast<int>(kind) * 256 + index; }
// Added per core to unit_key: the same unit on two cores are two units.
constexpr int kUnitKeysPerCore = 4096;

// The largest n in [1, hi] with fits(n), given fits(1) and fits growing false with n.
template <class Fits>
int largest_fitting(int hi, Fits fits) {
  int lo = 1;
  while (lo < hi) {
    const int mid = lo + (hi - lo + 1) / 2;
    if (fits(mid)) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

// Input rows a block of `rows` output rows reads, and input depth planes one output plane reads.
inline int slab_rows(const ConvGeometry& g, int rows) {
  return std::min(g.h, (rows - 1) * g.stride_h + g.dilation_h * (g.kernel_h - 1) + 1);
}
inline int slab_planes(const ConvGeometry& g) {
  return std::min(g.d, g.dilation_d * (g.kernel_d - 1) + 1);
}

}  // namespace npusim::lowering
