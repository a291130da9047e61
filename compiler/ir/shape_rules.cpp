// The shape rule of every op (compiler/ir/op_table.hpp points each op at one): a layer's output
// shape from its input shapes and attributes.
#include "compiler/ir/shape_rules.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace npusim {

namespace {

// Output size of one spatial axis; fills the padding for "same" (TensorFlow: the odd pixel after).
int spatial_out(int in, int kernel, int stride, int dilation, bool same, int& pad_begin,
                int& pad_end) {
  const int effective = dilation * (kernel - 1) + 1;
  if (same) {
    const int out = (in + stride - 1) / stride;
    const int total = std::max((out - 1) * stride + effective - in, 0);
    pad_begin = total / 2;
    pad_end = total - pad_begin;
    return out;
  }
  const int span = in + pad_begin + pad_end - effective;
  return span < 0 ? 0 : span / stride + 1;
}

}  // namespace

// Conv and pools: a 2-D or 3-D window over a channels-last map; "same" and global pools
// resolve their padding and window here.
bool infer_window(Layer& l, const ShapeFail& fail) {
  const TensorShape& x = l.in_shapes[0];
  if (x.rank() != 3 && x.rank() != 4) {
    return fail(
        fmt::format("{} needs a [height, width, channels] or [depth, height, width, "
                    "channels] input, '{}' is {}",
                    to_string(l.kind), l.inputs[0], to_string(x)));
  }
  const int c = x.last();
  std::array<int, 3> size{x.d(), x.h(), x.w()};
  if (x.rank() == 3 &&
      (l.kernel[0] != 1 || l.strides[0] != 1 || l.pads_begin[0] != 0 || l.pads_end[0] != 0)) {
    return fail("a 3-D window needs a [depth, height, width, channels] input");
  }
  if (l.global_pool) {
    l.kernel = size;
    l.strides = {1, 1, 1};
    l.pads_begin = l.pads_end = {0, 0, 0};
  }
  std::array<int, 3> out{};
  for (int a = 0; a < 3; ++a) {
    out[a] = spatial_out(size[a], l.kernel[a], l.strides[a], l.dilation[a], l.same_padding,
                         l.pads_begin[a], l.pads_end[a]);
  }
  if (out[0] <= 0 || out[1] <= 0 || out[2] <= 0) {
    return fail(
        fmt::format("impossible shape: a {}x{}x{} window (dilation {}x{}x{}) does not "
                    "fit the {} input with padding {},{},{} / {},{},{}",
                    l.kernel[0], l.kernel[1], l.kernel[2], l.dilation[0], l.dilation[1],
                    l.dilation[2], to_string(x), l.pads_begin[0], l.pads_begin[1], l.pads_begin[2],
                    l.pads_end[0], l.pads_end[1], l.pads_end[2]));
  }
  if (l.kind != OpKind::kConv) {
    for (int a = 0; a < 3; ++a) {
      if (l.pads_begin[a] >= l.kernel[a] || l.pads_end[a] >= l.kernel[a]) {
        return fail("pooling padding must be smaller than the window");
      }
    }
  }
  int channels = c;
  if (l.kind == OpKind::kConv) {
    if (c % l.groups != 0 || l.filters % l.groups != 0) {
      return fail(
          fmt::format("groups ({}) must divide the input channels ({}) and the filters "
                      "({})",
                      l.groups, c, l.filters));
    }
    channels = l.filters;
  }
  l.out_shape.dims = x.rank() == 4 ? std::vector<int>{out[0], out[1], out[2], channels}
                                   : std::vector<int>{out[1], out[2], channels};
  return true;
}

// Dense: the last dimension becomes the units.
bool infer_dense(Layer& l, const ShapeFail& /*fail*/) {
  l.out_shape = l.in_shapes[0];
  l.out_shape.dims.back() = l.filters;
  return true;
}

// MatMul of two activations: [..., M, K] x [..., K, N] (or [..., N, K] transposed).
bool infer_matmul(Layer& l, const ShapeFail& fail) {
  const TensorShape& x = l.in_shapes[0];
  const TensorShape& b = l.in_shapes[1];
  if (x.rank() < 2 || b.rank() != x.rank()) {
    return fail(fmt::format("matmul needs two inputs of the same rank >= 2, got {} and {}",
                            to_string(x), to_string(b)));
  }
  for (int i = 0; i + 2 < x.rank(); ++i) {
    if (x.dims[i] != b.dims[i]) {
      return fail(
          fmt::format("matmul leading dimensions differ: {} and {}", to_string(x), to_string(b)));
    }
  }
  const int k_b = l.transpose_b ? b.last() : b.dims[b.rank() - 2];
  const int n = l.transpose_b ? b.dims[b.rank() - 2] : b.last();
  if (k_b != x.last()) {
    return fail(fmt::format("matmul inner dimensions differ: {} x {}{}", to_string(x), to_string(b),
                            l.transpose_b ? " (transposed)" : ""));
  }
  l.out_shape = x;
  l.out_shape.dims.back() = n;
  return true;
}

// Add and Mul: two inputs of the same shape.
bool infer_same_shape_binary(Layer& l, const ShapeFail& fail) {
  const auto& in = l.in_shapes;
  const TensorShape& x = l.in_shapes[0];
  if (in[1] != x) {
    return fail(fmt::format("{} needs inputs of the same shape, got {} and {}", to_string(l.kind),
                            to_string(x), to_string(in[1])));
  }
  l.out_shape = x;
  return true;
}

// Concat along the last dimension.
bool infer_concat(Layer& l, const ShapeFail& fail) {
  const TensorShape& x = l.in_shapes[0];
  l.out_shape = x;
  l.out_shape.dims.back() = 0;
  for (const auto& s : l.in_shapes) {
    TensorShape a = s, b = x;
    a.dims.back() = b.dims.back() = 0;
    if (a != b) {
      return fail(
          fmt::format("concat inputs must match in all but the last dimension, got {} "
                      "and {}",
                      to_string(x), to_string(s)));
    }
    l.out_shape.dims.back() += s.last();
  }
  return true;
}

// Reshape (empty target: flatten); the element count must not change.
bool infer_reshape(Layer& l, const ShapeFail& fail) {
  const TensorShape& x = l.in_shapes[0];
  if (l.reshape_to.empty()) {
    l.out_shape.dims = {static_cast<int>(x.elements())};
    return true;
  }
  l.out_shape.dims = l.reshape_to;
  if (l.out_shape.elements() != x.elements()) {
    return fail(fmt::format("cannot reshape {} ({} elements) to {} ({} elements)", to_string(x),
                            x.elements(), to_string(l.out_shape), l.out_shape.elements()));
  }
  return true;
}

// Activations, softmax, layer norm, batch norm: the shape of the input.
bool infer_same_as_input(Layer& l, const ShapeFail& /*fail*/) {
  l.out_shape = l.in_shapes[0];
  return true;
}

// Data movement: the output shape is given; every source must name an input and an element in it.
bool infer_move(Layer& l, const ShapeFail& fail) {
  l.out_shape.dims = l.reshape_to;
  if (l.reshape_to.empty() || l.out_shape.elements() != l.move_from.size()) {
    return fail(fmt::format("move to {} has {} element sources", to_string(l.out_shape),
                            l.move_from.size()));
  }
  // A run's elements step by one stride: its first and last bound them.
  for (const MoveRun& r : l.move_from.runs()) {
    const uint64_t size = r.input < 0 ? l.move_constants.size()
                          : static_cast<size_t>(r.input) < l.in_shapes.size()
                              ? l.in_shapes[static_cast<size_t>(r.input)].elements()
                              : 0;
    const int64_t last = r.at(r.count - 1).element;
    if (r.input >= -1 && std::min<int64_t>(r.first, last) >= 0 &&
        uint64_t(std::max<int64_t>(r.first, last)) < size) {
      continue;
    }
    for (uint64_t i = 0; i < r.count; ++i) {
      const MoveSource s = r.at(i);
      if (s.input < -1 || s.element < 0 || static_cast<uint64_t>(s.element) >= size) {
        return fail(fmt::format(
            "output element {} copies element {} of {}, which does not exist", r.out + i, s.element,
            s.input < 0 ? std::string("the constants") : fmt::format("input {}", s.input)));
      }
    }
  }
  return true;
}

// The ids' shape with the table's row appended.
bool infer_embedding(Layer& l, const ShapeFail& fail) {
  const size_t n = l.weights.empty() ? l.qweights.size() : l.weights.size();
  if (l.filters < 1 || n == 0 || n % size_t(l.filters) != 0) {
    return fail(fmt::format("embedding table of {} values is not rows of {}", n, l.filters));
  }
  l.out_shape.dims = l.in_shapes[0].dims;
  l.out_shape.dims.push_back(l.filters);
  return true;
}

}  // namespace npusim
