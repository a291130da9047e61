// Loop nests of the reference operators, shared by the int8 and the bf16 reference: the same
// windows and the same summation order, with the element and accumulator types as parameters.
#pragma once

#include <algorithm>
#include <vector>

#include "compiler/ir/graph.hpp"

namespace npusim::reference_loops {

// acc[b][oz][oy][ox][n] = sum over the window and the group's channels of x * w, each output's
// products added in (kernel depth, row, col, channel) order. `acc` starts zeroed, sized like the
// output; w is [kd][kh][kw][cin/groups][cout].
template <class X, class W, class Acc>
void conv(const Layer& l, int batch, const X* x, const W* w, Acc* acc) {
  const TensorShape &in = l.in_shapes[0], &out = l.out_shape;
  const int C = in.last(), D = in.d(), H = in.h(), Wd = in.w();
  const int OD = out.d(), OH = out.h(), OW = out.w(), N = l.filters;
  const int G = l.groups, cin_g = C / G, cout_g = N / G;
  const auto& k = l.kernel;
  for (int b = 0; b < batch; ++b)
    for (int oz = 0; oz < OD; ++oz)
      for (int oy = 0; oy < OH; ++oy)
        for (int ox = 0; ox < OW; ++ox) {
          Acc* o = acc + (((size_t(b) * OD + oz) * OH + oy) * OW + ox) * N;
          for (int fz = 0; fz < k[0]; ++fz) {
            const int iz = oz * l.strides[0] - l.pads_begin[0] + fz * l.dilation[0];
            if (iz < 0 || iz >= D) continue;
            for (int fy = 0; fy < k[1]; ++fy) {
              const int iy = oy * l.strides[1] - l.pads_begin[1] + fy * l.dilation[1];
              if (iy < 0 || iy >= H) continue;
              for (int fx = 0; fx < k[2]; ++fx) {
                const int ix = ox * l.strides[2] - l.pads_begin[2] + fx * l.dilation[2];
                if (ix < 0 || ix >= Wd) continue;
                const X* px = x + (((size_t(b) * D + iz) * H + iy) * Wd + ix) * C;
                const W* wt = w + ((size_t(fz) * k[1] + fy) * k[2] + fx) * cin_g * N;
                for (int g = 0; g < G; ++g)
                  for (int c = 0; c < cin_g; ++c) {
                    const Acc v = static_cast<Acc>(px[g * cin_g + c]);
                    const W* wr = wt + size_t(c) * N + g * cout_g;
                    Acc* og = o + g * cout_g;
                    for (int j = 0; j < cout_g; ++j) og[j] += v * static_cast<Acc>(wr[j]);
                  }
              }
            }
          }
        }
}

// Max or average pooling: `lowest` starts a max, `finish(acc, count_for_average)` makes the output.
template <class X, class Acc, class Finish>
std::vector<X> pool(const Layer& l, int batch, const std::vector<X>& x, Acc lowest, Finish finish) {
  const TensorShape &in = l.in_shapes[0], &out = l.out_shape;
  const int C = in.last(), D = in.d(), H = in.h(), W = in.w();
  const bool is_max = l.kind == OpKind::kMaxPool;
  const int window = l.kernel[0] * l.kernel[1] * l.kernel[2];
  std::vector<X> y(size_t(batch) * out.elements());
  std::vector<Acc> acc(C);
  for (int b = 0; b < batch; ++b)
    for (int oz = 0; oz < out.d(); ++oz)
      for (int oy = 0; oy < out.h(); ++oy)
        for (int ox = 0; ox < out.w(); ++ox) {
          std::fill(acc.begin(), acc.end(), is_max ? lowest : Acc(0));
          int count = 0;
          for (int fz = 0; fz < l.kernel[0]; ++fz) {
            const int iz = oz * l.strides[0] - l.pads_begin[0] + fz;
            if (iz < 0 || iz >= D) continue;
            for (int fy = 0; fy < l.kernel[1]; ++fy) {
              const int iy = oy * l.strides[1] - l.pads_begin[1] + fy;
              if (iy < 0 || iy >= H) continue;
              for (int fx = 0; fx < l.kernel[2]; ++fx) {
                const int ix = ox * l.strides[2] - l.pads_begin[2] + fx;
                if (ix < 0 || ix >= W) continue;
                ++count;
                const X* px = &x[(((size_t(b) * D + iz) * H + iy) * W + ix) * C];
                for (int c = 0; c < C; ++c) {
                  acc[c] = is_max ? std::max(acc[c], Acc(px[c])) : acc[c] + Acc(px[c]);
                }
              }
            }
          }
          X* o = &y[(((size_t(b) * out.d() + oz) * out.h() + oy) * out.w() + ox) * C];
          const int divisor = l.count_include_pad ? window : count;
          for (int c = 0; c < C; ++c) o[c] = finish(acc[c], is_max ? 0 : divisor);
        }
  return y;
}

}  // namespace npusim::reference_loops
