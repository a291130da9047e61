// The matrix unit's activation address generator: gathers the A operand of a MATMUL (an im2col
// view of an NHWC slab in the unified buffer, arch/isa.hpp) into a dense m x k int8 matrix.
// Window elements that fall outside the slab are padding and read as zero.
#pragma once

#include <cstdint>

#include "arch/isa.hpp"

namespace npusim {

// `slab` points at view.ub_addr; `out` receives m rows of k elements of `element_bytes` bytes
// each (row-major, ld = k).
void gather_activations(const ActivationView& view, const void* slab, int m, int k, void* out,
                        int element_bytes = 1);

}  // namespace npusim
