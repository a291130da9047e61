#include "compiler/ir/backward_rules.hpp"

#include <fmt/format.h>

#include <array>

#include "compiler/ir/op_table.hpp"
#include "support/error.hpp"

namespace npusim {

namespace {

Layer binary(const std::string& name, OpKind kind, const std::string& a, const std::string& c) {
  return make_layer(name, kind, {a, c});
}

// dL/dx = dL/dy * step(y) for y = relu(x): y > 0 exactly where x > 0.
std::string relu_backward(BackwardBuilder& b, const std::string& prefix, const std::string& y,
                          const std::string& gy) {
  Layer mask = make_layer(prefix + ".relu_mask", OpKind::kActivation, {y});
  mask.activation = Activation::kStep;
  const std::string m = b.add(std::move(mask));
  return b.add(binary(prefix + ".relu_grad", OpKind::kMul, gy, m));
}

}  // namespace

[[noreturn]] void no_rule(const Layer& l, const std::string& what) {
  throw UserError(fmt::format("layer '{}' ({}): training has no backward rule for {} yet", l.name,
                              to_string(l.kind), what));
}

Layer make_layer(const std::string& name, OpKind kind, std::vector<std::string> inputs) {
  Layer l;
  l.name = name;
  l.kind = kind;
  l.inputs = std::move(inputs);
  l.output = name;
  return l;
}

std::string through_fused_activation(BackwardBuilder& b, const Layer& l, const std::string& gy) {
  if (l.activation == Activation::kRelu) return relu_backward(b, l.name, l.output, gy);
  if (l.activation != Activation::kNone) {
    no_rule(l, fmt::format("its fused activation '{}'", to_string(l.activation)));
  }
  return gy;
}

std::vector<int> BackwardBuilder::step_dims(const std::string& tensor) const {
  const auto it = sample_shape.find(tensor);
  NPUSIM_CHECK(it != sample_shape.end(), "training: no shape for tensor {}", tensor);
  std::vector<int> dims{batch};
  dims.insert(dims.end(), it->second.dims.begin(), it->second.dims.end());
  return dims;
}

std::string BackwardBuilder::add(Layer layer) {
  NPUSIM_CHECK(layer.output == layer.name, "training: layer {} writes {}", layer.name,
               layer.output);
  step.layers.push_back(std::move(layer));
  return step.layers.back().name;
}

void BackwardBuilder::accumulate(const std::string& tensor, const std::string& g) {
  auto it = gradient.find(tensor);
  if (it == gradient.end()) {
    gradient.emplace(tensor, g);
    return;
  }
  it->second = add(binary(g + ".sum", OpKind::kAdd, it->second, g));
}

Layer transpose_move(const std::string& name, const std::string& input, int rows, int cols) {
  Layer l = make_layer(name, OpKind::kMove, {input});
  l.move_op = "transpose";
  l.reshape_to = {cols, rows};
  for (int c = 0; c < cols; ++c) l.move_from.append(0, c, cols, uint64_t(rows));
  return l;
}

Layer ones_column_move(const std::string& name, const std::string& input, int rows, int cols) {
  Layer l = make_layer(name, OpKind::kMove, {input});
  l.move_op = "append_ones";
  l.reshape_to = {rows, cols + 1};
  l.move_constants = {1.0f};
  for (int r = 0; r < rows; ++r) {
    l.move_from.append(0, r * cols, 1, uint64_t(cols));
    l.move_from.push_back({-1, 0});
  }
  return l;
}

Layer constant_move(const std::string& name, const std::string& anchor, std::vector<int> dims,
                    std::vector<float> values, std::vector<int32_t> index) {
  Layer l = make_layer(name, OpKind::kMove, {anchor});
  l.move_op = "constant";
  l.reshape_to = std::move(dims);
  l.move_constants = std::move(values);
  for (int32_t i : index) l.move_from.push_back({-1, i});
  return l;
}

// y = act(x W + b) over the last dimension; the R = batch x (rows per sample) rows at once:
//   dL/dz = dL/dy (* step(y) for ReLU)
//   [dW^T | db] = (dL/dz)^T [x | 1]        on the matrix unit ([out, R] x [R, in + 1])
//   dL/dx = dL/dz W^T                      a dense layer with the transposed weights
void backward_dense(BackwardBuilder& b, const Layer& l) {
  const auto gy = b.gradient.find(l.output);
  if (gy == b.gradient.end()) return;  // the loss does not depend on it
  const std::string gz = through_fused_activation(b, l, gy->second);
  const TensorShape& x = l.in_shapes.at(0);
  const int in = x.last(), out = l.filters;
  const int rows = int(uint64_t(b.batch) * x.outer());
  const std::string gzt = b.add(transpose_move(l.name + ".grad_t", gz, rows, out));
  std::string xa;
  if (l.use_bias) {
    xa = b.add(ones_column_move(l.name + ".input_ones", l.inputs[0], rows, in));
  } else {
    Layer r = make_layer(l.name + ".input_rows", OpKind::kReshape, {l.inputs[0]});
    r.reshape_to = {rows, in};
    xa = b.add(std::move(r));
  }
  const std::string gw = b.add(binary(l.name + ".grad_weight", OpKind::kMatMul, gzt, xa));
  b.parameters.push_back({l.name, gw, in, out, l.use_bias});
  if (!b.wants_gradient(l.inputs[0])) return;
  Layer gx = make_layer(l.name + ".grad_input", OpKind::kDense, {gz});
  gx.filters = in;
  gx.use_bias = false;
  // A timing-only step (npusim train --values off) has no weights to transpose.
  if (!l.weights.empty()) {
    NPUSIM_CHECK(l.weights.size() == size_t(in) * size_t(out), "training: layer {} has {} weights",
                 l.name, l.weights.size());
    gx.weights.resize(l.weights.size());
    for (int i = 0; i < in; ++i) {
      for (int o = 0; o < out; ++o) gx.weights[size_t(o) * in + i] = l.weights[size_t(i) * out + o];
    }
  }
  b.weight_uses.push_back({gx.name, l.name, /*transposed=*/true});
  b.accumulate(l.inputs[0], b.add(std::move(gx)));
}

void backward_activation(BackwardBuilder& b, const Layer& l) {
  if (l.activation == Activation::kGelu) {
    const auto gy = b.gradient.find(l.output);
    if (gy == b.gradient.end() || !b.wants_gradient(l.inputs[0])) return;
    b.accumulate(l.inputs[0], gelu_backward(b, l.name, l.inputs[0], gy->second));
    return;
  }
  if (l.activation != Activation::kRelu) {
    no_rule(l, fmt::format("activation '{}'", to_string(l.activation)));
  }
  const auto gy = b.gradient.find(l.output);
  if (gy == b.gradient.end() || !b.wants_gradient(l.inputs[0])) return;
  b.accumulate(l.inputs[0], relu_backward(b, l.name, l.output, gy->second));
}

// A reshape only renames the elements: the gradient is reshaped back.
void backward_reshape(BackwardBuilder& b, const Layer& l) {
  const auto gy = b.gradient.find(l.output);
  if (gy == b.gradient.end() || !b.wants_gradient(l.inputs[0])) return;
  Layer r = make_layer(l.name + ".grad_input", OpKind::kReshape, {gy->second});
  r.reshape_to = b.step_dims(l.inputs[0]);
  b.accumulate(l.inputs[0], b.add(std::move(r)));
}

// A 2-D convolution (groups 1) y = act(conv(x, W) + b), for the R = batch x OH x OW output
// pixels at once: dL/dz as for dense, then
//   [dW ; db] = [patches(x) | 1]^T dL/dz    on the matrix unit ([taps + 1, R] x [R, out])
// where the move builds the transposed patches (im2col) directly from x: row (kh, kw, cin) is x
// shifted by the kernel offset, so its runs are image rows. The result rows are in the forward
// weights' order. Where the input needs a gradient: a transposed convolution on the matrix unit
// (conv_input_gradient, backward_rules_conv.cpp).
void backward_conv(BackwardBuilder& b, const Layer& l) {
  const auto gy = b.gradient.find(l.output);
  if (gy == b.gradient.end()) return;
  const TensorShape& x = l.in_shapes.at(0);
  if (x.rank() != 3 || l.groups != 1) no_rule(l, "3-D or grouped convolutions");
  const std::string gz = through_fused_activation(b, l, gy->second);
  if (x.last() > 1) {  // the transposed patches would be element gathers: another form
    conv_weight_gradient(b, l, gz);
    if (b.wants_gradient(l.inputs[0])) b.accumulate(l.inputs[0], conv_input_gradient(b, l, gz));
    return;
  }
  const int h = x.h(), w = x.w(), c = x.last();
  const int oh = l.out_shape.h(), ow = l.out_shape.w(), out = l.filters;
  const int kh = l.kernel[1], kw = l.kernel[2], taps = kh * kw * c;
  const int pixels = b.batch * oh * ow;
  Layer m = make_layer(l.name + ".input_patches_t", OpKind::kMove, {l.inputs[0]});
  m.move_op = "im2col_transpose";
  m.reshape_to = {taps + (l.use_bias ? 1 : 0), pixels};
  m.move_constants = {0.0f, 1.0f};
  for (int r = 0; r < taps; ++r) {
    const int ki = r / (kw * c), kj = (r / c) % kw, ci = r % c;
    for (int n = 0; n < b.batch; ++n) {
      for (int oy = 0; oy < oh; ++oy) {
        const int iy = oy * l.strides[1] + ki * l.dilation[1] - l.pads_begin[1];
        for (int ox = 0; ox < ow; ++ox) {
          const int ix = ox * l.strides[2] + kj * l.dilation[2] - l.pads_begin[2];
          const bool inside = iy >= 0 && iy < h && ix >= 0 && ix < w;
          m.move_from.push_back(inside ? MoveSource{0, ((n * h + iy) * w + ix) * c + ci}
                                       : MoveSource{-1, 0});
        }
      }
    }
  }
  if (l.use_bias) m.move_from.append(-1, 1, 0, uint64_t(pixels));
  const std::string patches = b.add(std::move(m));
  Layer rows = make_layer(l.name + ".grad_rows", OpKind::kReshape, {gz});
  rows.reshape_to = {pixels, out};
  const std::string gr = b.add(std::move(rows));
  const std::string gw = b.add(binary(l.name + ".grad_weight", OpKind::kMatMul, patches, gr));
  b.parameters.push_back({l.name, gw, taps, out, l.use_bias, /*outputs_first=*/false});
  if (b.wants_gradient(l.inputs[0])) b.accumulate(l.inputs[0], conv_input_gradient(b, l, gz));
}

// Concatenation along the last dimension, or the one input itself.
std::string concat_last(BackwardBuilder& b, const std::string& name,
                        const std::vector<std::string>& inputs) {
  if (inputs.size() == 1) return inputs[0];
  return b.add(make_layer(name, OpKind::kConcat, inputs));
}

std::string reshaped(BackwardBuilder& b, const std::string& name, const std::string& input,
                     std::vector<int> dims) {
  Layer r = make_layer(name, OpKind::kReshape, {input});
  r.reshape_to = std::move(dims);
  return b.add(std::move(r));
}

// The window elements' shares [batch, ph, pw, c] (row-major over the window) back into the
// layout of an input the windows tile exactly ([batch, ph kh, pw kw, c]): the input is
// [batch, ph, kh, pw, kw, c] in memory, so concatenating the kw shares of a window row along
// channels, then the kh rows along (pw kw c), builds it on the vector unit in long runs.
std::string interleave_windows(BackwardBuilder& b, const Layer& l,
                               const std::vector<std::string>& share) {
  const int kh = l.kernel[1], kw = l.kernel[2], c = l.in_shapes[0].last();
  const int ph = l.out_shape.h(), pw = l.out_shape.w();
  std::vector<std::string> rows;
  for (int ki = 0; ki < kh; ++ki) {
    const std::vector<std::string> row(share.begin() + ki * kw, share.begin() + (ki + 1) * kw);
    const std::string r = concat_last(b, fmt::format("{}.window_row{}", l.name, ki), row);
    rows.push_back(reshaped(b, fmt::format("{}.window_row{}_flat", l.name, ki), r,
                            {b.batch, ph, pw * kw * c}));
  }
  const std::string all = concat_last(b, l.name + ".window_rows", rows);
  return reshaped(b, l.name + ".grad_input", all, b.step_dims(l.inputs[0]));
}

// Max pooling (any window, stride and padding), the gradient of each window going to its first
// maximum in row-major order, as the numpy reference and torch do. With A_k the k-th element of
// every window (a move; a padded position holds kPoolPad, below any value) and P the maximum:
//   n_k = step(P - A_k)           1 where A_k is not the maximum (exact: both are stored values)
//   q_0 = dP, q_k+1 = q_k n_k     the gradient while no earlier element was the maximum
//   dA_k = q_k - q_k+1            = q_k (1 - n_k): the first maximum takes it, the rest 0
// and the dA_k go back into the input's layout: interleaved where the windows tile it exactly,
// else by moves summed where windows overlap (scatter_windows, backward_rules_conv.cpp).
void backward_maxpool(BackwardBuilder& b, const Layer& l) {
  const auto gy = b.gradient.find(l.output);
  if (gy == b.gradient.end() || !b.wants_gradient(l.inputs[0])) return;
  const TensorShape& x = l.in_shapes.at(0);
  const int kh = l.kernel[1], kw = l.kernel[2], sh = l.strides[1], sw = l.strides[2];
  const int top = l.pads_begin[1], left = l.pads_begin[2];
  if (x.rank() != 3 || l.dilation[1] != 1 || l.dilation[2] != 1) {
    no_rule(l, "dilated or 3-D max-pool windows");
  }
  // Torch pads a max pool with -inf; a finite bf16 value far below any activation does the same
  // here (P - kPoolPad stays finite).
  constexpr float kPoolPad = -1e30f;
  const bool padded = top > 0 || left > 0 || l.pads_end[1] > 0 || l.pads_end[2] > 0;
  const int h = x.h(), w = x.w(), c = x.last(), ph = l.out_shape.h(), pw = l.out_shape.w();
  const std::vector<int> pooled = b.step_dims(l.output);
  const size_t count = size_t(b.batch) * size_t(ph) * size_t(pw) * size_t(c);
  const std::string minus_one = b.add(constant_move(l.name + ".minus_one", l.output, pooled,
                                                    {-1.0f}, std::vector<int32_t>(count, 0)));
  const int window = kh * kw;
  std::vector<std::string> not_max;
  for (int k = 0; k < window; ++k) {
    const int ki = k / kw, kj = k % kw;
    Layer g = make_layer(fmt::format("{}.window{}", l.name, k), OpKind::kMove, {l.inputs[0]});
    g.move_op = "window_element";
    g.reshape_to = pooled;
    if (padded) g.move_constants = {kPoolPad};
    for (int n = 0; n < b.batch; ++n) {
      for (int py = 0; py < ph; ++py) {
        const int iy = py * sh + ki - top;
        for (int px = 0; px < pw; ++px) {
          const int ix = px * sw + kj - left;
          const bool inside = iy >= 0 && iy < h && ix >= 0 && ix < w;
          const int base = ((n * h + iy) * w + ix) * c;
          if (inside) {
            g.move_from.append(0, base, 1, uint64_t(c));
          } else {
            g.move_from.append(-1, 0, 0, uint64_t(c));
          }
        }
      }
    }
    const std::string a = b.add(std::move(g));
    const std::string neg =
        b.add(binary(fmt::format("{}.window{}_neg", l.name, k), OpKind::kMul, a, minus_one));
    const std::string d =
        b.add(binary(fmt::format("{}.window{}_gap", l.name, k), OpKind::kAdd, l.output, neg));
    Layer step =
        make_layer(fmt::format("{}.window{}_not_max", l.name, k), OpKind::kActivation, {d});
    step.activation = Activation::kStep;
    not_max.push_back(b.add(std::move(step)));
  }
  std::vector<std::string> q{gy->second};
  for (int k = 0; k + 1 < window; ++k) {
    q.push_back(b.add(binary(fmt::format("{}.carry{}", l.name, k + 1), OpKind::kMul, q.back(),
                             not_max[size_t(k)])));
  }
  std::vector<std::string> share;
  for (int k = 0; k < window; ++k) {
    if (k + 1 == window) {
      share.push_back(q[size_t(k)]);
      continue;
    }
    const std::string neg = b.add(binary(fmt::format("{}.carry{}_neg", l.name, k + 1), OpKind::kMul,
                                         q[size_t(k) + 1], minus_one));
    share.push_back(
        b.add(binary(fmt::format("{}.share{}", l.name, k), OpKind::kAdd, q[size_t(k)], neg)));
  }
  const bool tiles =
      sh == kh && sw == kw && top == 0 && left == 0 && l.pads_end[1] == 0 && l.pads_end[2] == 0;
  if (tiles && ph * kh == h && pw * kw == w) {
    b.accumulate(l.inputs[0], interleave_windows(b, l, share));
    return;
  }
  b.accumulate(l.inputs[0], scatter_windows(b, l, share));
}

}  // namespace npusim
