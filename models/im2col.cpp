#include "models/im2col.hpp"

#include <algorithm>
#include <cstring>

namespace npusim {

void gather_activations(const ActivationView& v, const int8_t* slab, int m, int k, int8_t* out) {
  const int window_row = v.kernel_w * v.slab_c;  // window elements per kernel row
  for (int row = 0; row < m; ++row) {
    const int pixel = v.m0 + row;
    const int oy = pixel / v.out_w, ox = pixel % v.out_w;
    const int y0 = v.origin_y + oy * v.stride_h;
    const int x0 = v.origin_x + ox * v.stride_w;
    int8_t* dst = out + static_cast<int64_t>(row) * k;
    // Walk the window elements [k0, k0 + k) in runs of consecutive channels.
    int e = v.k0;
    const int end = v.k0 + k;
    while (e < end) {
      const int fy = e / window_row;
      const int fx = (e % window_row) / v.slab_c;
      const int c = e % v.slab_c;
      const int run = std::min(v.slab_c - c, end - e);
      const int y = y0 + fy * v.dilation_h, x = x0 + fx * v.dilation_w;
      if (y >= 0 && y < v.slab_h && x >= 0 && x < v.slab_w) {
        std::memcpy(dst, slab + (static_cast<int64_t>(y) * v.slab_w + x) * v.slab_c + c, run);
      } else {
        std::memset(dst, 0, run);
      }
      dst += run;
      e += run;
    }
  }
}

}  // namespace npusim
