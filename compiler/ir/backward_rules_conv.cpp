// The backward rules a residual CNN (ResNet-50) needs beyond those of backward_rules.cpp (issue 23
// items 1 and 7, docs/training.md): a convolution's input gradient as a transposed convolution on
// the matrix unit, the residual add, max pooling whose windows overlap or are padded (the scatter
// back), and global average pooling.
#include <fmt/format.h>

#include "compiler/ir/backward_rules.hpp"
#include "compiler/ir/op_table.hpp"
#include "support/error.hpp"

namespace npusim {

// y = conv(x, W) with stride s and padding p (per axis) on [batch, H, W, cin]; dz [batch, OH, OW,
// out]. The gradient of x is the transposed convolution of dz, computed as the convolution the
// ONNX front end lowers ConvTranspose to (compiler/frontend/onnx/onnx_conv_transpose.cpp):
//   1. stride > 1: a move spreads dz out, s - 1 zero pixels between neighbours ([batch, (OH - 1)
//      s + 1, (OW - 1) s + 1, out]; its runs are the `out` channels of a pixel);
//   2. a stride-1 convolution of that with the kernel flipped along both spatial axes and its
//      channel axes exchanged ([kh][kw][out][cin]), padded by k - 1 - p at the start and by
//      H - ((OH - 1) s + 1) + p at the end, so its output is [batch, H, W, cin].
// Each dx element gathers the products dz[oy, ox] W[ki, kj] with oy s + ki - p = iy, the spread's
// zeros standing where no output pixel reads it. The zeros cost matrix-unit cycles (s^2 times the
// MACs of the scatter form on a 1 x 1 / 2 convolution) but keep the work one ordinary convolution.
std::string conv_input_gradient(BackwardBuilder& b, const Layer& l, const std::string& gz) {
  const TensorShape& x = l.in_shapes.at(0);
  const int h = x.h(), w = x.w(), cin = x.last();
  const int oh = l.out_shape.h(), ow = l.out_shape.w(), out = l.filters;
  const int kh = l.kernel[1], kw = l.kernel[2], sh = l.strides[1], sw = l.strides[2];
  if (l.dilation[1] != 1 || l.dilation[2] != 1)
    no_rule(l, "a dilated convolution's input gradient");
  const int lh = (oh - 1) * sh + 1, lw = (ow - 1) * sw + 1;  // the spread gradient's size
  const std::array<int, 3> begin{0, kh - 1 - l.pads_begin[1], kw - 1 - l.pads_begin[2]};
  const std::array<int, 3> end{0, h - lh + l.pads_begin[1], w - lw + l.pads_begin[2]};
  if (begin[1] < 0 || begin[2] < 0 || end[1] < 0 || end[2] < 0) {
    no_rule(l, "the input gradient of a convolution padded by the kernel's size or more");
  }
  std::string spread = gz;
  if (sh > 1 || sw > 1) {
    Layer m = make_layer(l.name + ".grad_spread", OpKind::kMove, {gz});
    m.move_op = "spread";
    m.reshape_to = {b.batch, lh, lw, out};
    m.move_constants = {0.0f};
    for (int n = 0; n < b.batch; ++n) {
      for (int y = 0; y < lh; ++y) {
        for (int xx = 0; xx < lw; ++xx) {
          const bool lands = y % sh == 0 && xx % sw == 0;
          const int base = ((n * oh + y / sh) * ow + xx / sw) * out;
          if (lands) {
            m.move_from.append(0, base, 1, uint64_t(out));
          } else {
            m.move_from.append(-1, 0, 0, uint64_t(out));
          }
        }
      }
    }
    spread = b.add(std::move(m));
  }
  Layer gx = make_layer(l.name + ".grad_input", OpKind::kConv, {spread});
  gx.filters = cin;
  gx.kernel = {1, kh, kw};
  gx.pads_begin = begin;
  gx.pads_end = end;
  gx.use_bias = false;
  // A timing-only step (npusim train --values off) has no weights to flip.
  if (!l.weights.empty()) {
    NPUSIM_CHECK(l.weights.size() == size_t(kh) * kw * cin * out,
                 "training: layer {} has {} weights", l.name, l.weights.size());
    gx.weights.resize(l.weights.size());
    for (int ki = 0; ki < kh; ++ki) {
      for (int kj = 0; kj < kw; ++kj) {
        for (int o = 0; o < out; ++o) {
          for (int ci = 0; ci < cin; ++ci) {
            gx.weights[((size_t(ki) * kw + kj) * out + o) * cin + ci] =
                l.weights[((size_t(kh - 1 - ki) * kw + (kw - 1 - kj)) * cin + ci) * out + o];
          }
        }
      }
    }
  }
  WeightUse use{gx.name, l.name};
  use.flipped = true;
  b.weight_uses.push_back(use);
  return b.add(std::move(gx));
}

// A convolution on an input of several channels, for the R = batch x OH x OW output pixels:
//   dW^T = dz^T patches(x)      on the matrix unit ([out, R] x [R, taps])
//   db   = dz^T 1               ([out, R] x [R, 1]), concatenated: [dW^T | db]
// The patches are im2col in the forward orientation: row p holds pixel p's window in the forward
// weights' row order (kernel row, kernel column, channel), so a move copies runs of kw x cin
// channels from the NHWC input (zeros where the window reaches into the padding); a 1 x 1
// convolution of stride 1 reads x itself. dz^T is a transpose the DMA runs as transposing loads
// (kTransposeRowsMove). backward_conv's other form ([patches(x) | 1]^T dz) would gather single
// elements of a many-channel input; with one channel its rows are image rows, and it keeps it.
// The bias column is a product of its own so that the patches' boxes stay regular.
void conv_weight_gradient(BackwardBuilder& b, const Layer& l, const std::string& gz) {
  const TensorShape& x = l.in_shapes.at(0);
  const int h = x.h(), w = x.w(), c = x.last();
  const int oh = l.out_shape.h(), ow = l.out_shape.w(), out = l.filters;
  const int kh = l.kernel[1], kw = l.kernel[2], taps = kh * kw * c;
  const int pixels = b.batch * oh * ow;
  Layer t = transpose_move(l.name + ".grad_t", gz, pixels, out);
  t.move_op = kTransposeRowsMove;
  const std::string gzt = b.add(std::move(t));
  const bool pointwise = kh == 1 && kw == 1 && l.strides[1] == 1 && l.strides[2] == 1 &&
                         l.pads_begin == std::array<int, 3>{0, 0, 0} &&
                         l.pads_end == std::array<int, 3>{0, 0, 0};
  Layer m = make_layer(l.name + ".input_patches", pointwise ? OpKind::kReshape : OpKind::kMove,
                       {l.inputs[0]});
  m.reshape_to = {pixels, taps};
  if (!pointwise) {
    m.move_op = "im2col";
    m.move_constants = {0.0f};
    for (int n = 0; n < b.batch; ++n) {
      for (int oy = 0; oy < oh; ++oy) {
        for (int ox = 0; ox < ow; ++ox) {
          for (int ki = 0; ki < kh; ++ki) {
            const int iy = oy * l.strides[1] + ki * l.dilation[1] - l.pads_begin[1];
            for (int kj = 0; kj < kw; ++kj) {
              const int ix = ox * l.strides[2] + kj * l.dilation[2] - l.pads_begin[2];
              const bool inside = iy >= 0 && iy < h && ix >= 0 && ix < w;
              const int base = ((n * h + iy) * w + ix) * c;
              if (inside) {
                m.move_from.append(0, base, 1, uint64_t(c));
              } else {
                m.move_from.append(-1, 0, 0, uint64_t(c));
              }
            }
          }
        }
      }
    }
  }
  const std::string patches = b.add(std::move(m));
  std::string gw = b.add(make_layer(l.name + ".grad_weight", OpKind::kMatMul, {gzt, patches}));
  if (l.use_bias) {
    const std::string ones = b.add(constant_move(l.name + ".ones", l.inputs[0], {pixels, 1}, {1.0f},
                                                 std::vector<int32_t>(pixels, 0)));
    const std::string db = b.add(make_layer(l.name + ".grad_bias", OpKind::kMatMul, {gzt, ones}));
    gw = b.add(make_layer(l.name + ".grad_weight_bias", OpKind::kConcat, {gw, db}));
  }
  b.parameters.push_back({l.name, gw, taps, out, l.use_bias, /*outputs_first=*/true});
}

// y = act(a + c): the gradient before the activation passes to both inputs unchanged (summed
// with their other readers' shares by BackwardBuilder::accumulate).
void backward_add(BackwardBuilder& b, const Layer& l) {
  const auto gy = b.gradient.find(l.output);
  if (gy == b.gradient.end()) return;
  const std::string gz = through_fused_activation(b, l, gy->second);
  for (size_t i = 0; i < l.inputs.size(); ++i) {
    if (!b.wants_gradient(l.inputs[i])) continue;
    // A name of its own per input: accumulate names a sum after the share it adds.
    Layer r = make_layer(fmt::format("{}.grad_in{}", l.name, i), OpKind::kReshape, {gz});
    r.reshape_to = b.step_dims(l.inputs[i]);
    b.accumulate(l.inputs[i], b.add(std::move(r)));
  }
}

// Global average pooling [batch, H, W, C] -> [batch, 1, 1, C]: dx = dy / (H W) at every pixel,
// the scaling on the vector unit (a multiply by a constant move) before a move broadcasts it.
void backward_avgpool(BackwardBuilder& b, const Layer& l) {
  const TensorShape& x = l.in_shapes.at(0);
  if (!l.global_pool || x.rank() != 3) no_rule(l, "average pooling other than global");
  const auto gy = b.gradient.find(l.output);
  if (gy == b.gradient.end() || !b.wants_gradient(l.inputs[0])) return;
  const int h = x.h(), w = x.w(), c = x.last();
  const std::vector<int> pooled = b.step_dims(l.output);
  const size_t count = size_t(b.batch) * size_t(c);
  const std::string inv =
      b.add(constant_move(l.name + ".inverse_area", l.output, pooled, {1.0f / float(h * w)},
                          std::vector<int32_t>(count, 0)));
  Layer mul = make_layer(l.name + ".grad_scaled", OpKind::kMul, {gy->second, inv});
  const std::string scaled = b.add(std::move(mul));
  Layer m = make_layer(l.name + ".grad_input", OpKind::kMove, {scaled});
  m.move_op = "broadcast";
  m.reshape_to = b.step_dims(l.inputs[0]);
  for (int n = 0; n < b.batch; ++n) {
    for (int p = 0; p < h * w; ++p) m.move_from.append(0, n * c, 1, uint64_t(c));
  }
  b.accumulate(l.inputs[0], b.add(std::move(m)));
}

// Max pooling's window shares dA_k ([batch, PH, PW, C], k = ki kw + kj) back into the input's
// layout, summed where windows overlap. The offsets with the same (ki / sh, kj / sw) have distinct
// residues modulo the strides, so no two of them reach the same input pixel: each such group is
// one move (0 where none of its offsets lands), and the groups are added on the vector unit
// (ceil(kh / sh) ceil(kw / sw) moves; one for windows that tile).
std::string scatter_windows(BackwardBuilder& b, const Layer& l,
                            const std::vector<std::string>& share) {
  const TensorShape& x = l.in_shapes.at(0);
  const int h = x.h(), w = x.w(), c = x.last(), ph = l.out_shape.h(), pw = l.out_shape.w();
  const int kh = l.kernel[1], kw = l.kernel[2], sh = l.strides[1], sw = l.strides[2];
  const int top = l.pads_begin[1], left = l.pads_begin[2];
  const int gh = (kh + sh - 1) / sh, gw = (kw + sw - 1) / sw;
  std::string sum;
  for (int gi = 0; gi < gh; ++gi) {
    for (int gj = 0; gj < gw; ++gj) {
      const std::string name =
          gh * gw == 1 ? l.name + ".grad_input" : fmt::format("{}.scatter{}_{}", l.name, gi, gj);
      Layer m = make_layer(name, OpKind::kMove, {});
      m.move_op = "window_scatter";
      m.reshape_to = b.step_dims(l.inputs[0]);
      m.move_constants = {0.0f};
      std::map<int, int> input_of;  // window offset k -> index into m.inputs
      for (int ki = gi * sh; ki < std::min(kh, (gi + 1) * sh); ++ki) {
        for (int kj = gj * sw; kj < std::min(kw, (gj + 1) * sw); ++kj) {
          input_of[ki * kw + kj] = int(m.inputs.size());
          m.inputs.push_back(share[size_t(ki * kw + kj)]);
        }
      }
      for (int n = 0; n < b.batch; ++n) {
        for (int iy = 0; iy < h; ++iy) {
          // The group's offset along y that reaches iy, and its window row (-1: none).
          const int ki = gi * sh + (iy + top) % sh, py = (iy + top - ki) / sh;
          const bool row = ki < kh && iy + top - ki >= 0 && py < ph;
          for (int ix = 0; ix < w; ++ix) {
            const int kj = gj * sw + (ix + left) % sw, px = (ix + left - kj) / sw;
            const bool inside = row && kj < kw && ix + left - kj >= 0 && px < pw;
            const int base = ((n * ph + py) * pw + px) * c;
            if (inside) {
              m.move_from.append(input_of.at(ki * kw + kj), base, 1, uint64_t(c));
            } else {
              m.move_from.append(-1, 0, 0, uint64_t(c));
            }
          }
        }
      }
      const std::string part = b.add(std::move(m));
      sum = sum.empty() ? part
                        : b.add(make_layer(fmt::format("{}.scatter_sum{}_{}", l.name, gi, gj),
                                           OpKind::kAdd, {sum, part}));
    }
  }
  return sum;
}

}  // namespace npusim
