#include "models/im2col.hpp"

#include <algorithm>
#include <cstring>

namespace npusim {

void gather_activations(const ActivationView& v, const void* slab_bytes, int m, int k,
                        void* out_bytes, int eb) {
  const auto* slab = static_cast<const uint8_t*>(slab_bytes);
  auto* out = static_cast<uint8_t*>(out_bytes);
  const int row_k = v.kernel_w * v.window_c;  // window elements per kernel row
  const int plane_k = v.kernel_h * row_k;     // window elements per kernel depth plane
  for (int row = 0; row < m; ++row) {
    const int pixel = v.m0 + row;
    const int oy = pixel / v.out_w, ox = pixel % v.out_w;
    const int y0 = v.origin_y + oy * v.stride_h;
    const int x0 = v.origin_x + ox * v.stride_w;
    uint8_t* dst = out + static_cast<int64_t>(row) * k * eb;
    // Walk the window elements [k0, k0 + k) in runs of consecutive channels.
    int e = v.k0;
    const int end = v.k0 + k;
    while (e < end) {
      const int fz = e / plane_k;
      const int fy = (e % plane_k) / row_k;
      const int fx = (e % row_k) / v.window_c;
      const int c = e % v.window_c;
      const int run = std::min(v.window_c - c, end - e);
      const int z = v.origin_z + fz * v.dilation_d;
      const int y = y0 + fy * v.dilation_h, x = x0 + fx * v.dilation_w;
      if (z >= 0 && z < v.slab_d && y >= 0 && y < v.slab_h && x >= 0 && x < v.slab_w) {
        const int64_t pixel_index = (static_cast<int64_t>(z) * v.slab_h + y) * v.slab_w + x;
        std::memcpy(dst, slab + (pixel_index * v.slab_c + v.c0 + c) * eb, size_t(run) * eb);
      } else {
        std::memset(dst, 0, size_t(run) * eb);
      }
      dst += run * eb;
      e += run;
    }
  }
}

}  // namespace npusim
