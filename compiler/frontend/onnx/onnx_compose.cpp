// ONNX operators the importer builds from IR operators it already has, around a data-movement
// `move`: an operation along any axis (the axis moved to where the IR's operator works, the
// operation, the axis moved back), Resize linear / cubic as one constant interpolation matrix
// per resized axis (a dense layer), and MatMul by a different constant matrix per leading index
// (a slice, a dense layer per index, a stack).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <iterator>

#include "compiler/frontend/onnx/onnx_importer.hpp"

namespace npusim::onnx_frontend {

namespace {

// The axis of `dims` the IR's dense / softmax works on: the channels of a channels-first map
// (channels last in the IR), otherwise ONNX's last axis.
size_t ir_last_axis(const Value& v) { return v.channels_first ? 0 : v.dims.size() - 1; }

// ONNX's Resize (mode linear or cubic) along one axis of `in` elements to `out` as an [in, out]
// matrix: output o is sum_j m[j][o] * x[j]. The coordinate transformation, the neighbours of a
// coordinate (an integral one counts as ratio 1 of the pixel before it), the edge clamping and
// exclude_outside follow the operator's definition in the ONNX specification.
std::vector<float> interpolation_matrix(int64_t in, int64_t out, double scale, bool cubic,
                                        const std::string& transform, double a,
                                        bool exclude_outside) {
  std::vector<double> m(static_cast<size_t>(in * out), 0.0);
  const double resized = scale * double(in);  // the specification's float output length
  for (int64_t o = 0; o < out; ++o) {
    double x = double(o);
    if (transform == "align_corners") {
      x = resized == 1.0 ? 0.0 : x * double(in - 1) / (resized - 1.0);
    } else if (transform == "asymmetric") {
      x = x / scale;
    } else if (transform == "pytorch_half_pixel") {
      x = resized > 1.0 ? (x + 0.5) / scale - 0.5 : 0.0;
    } else {  // half_pixel
      x = (x + 0.5) / scale - 0.5;
    }
    const double floor_x = std::floor(x);
    const bool integral = x == floor_x;
    const double r = integral ? 1.0 : x - floor_x;
    const auto base = int64_t(floor_x) - (integral ? 1 : 0);
    std::vector<double> c;
    if (cubic) {
      const double s = 1.0 - r;
      c = {((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a,
           ((a + 2) * r - (a + 3)) * r * r + 1, ((a + 2) * s - (a + 3)) * s * s + 1,
           ((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a};
    } else {
      c = {1.0 - r, r};
    }
    const int64_t first = base - int64_t(c.size() / 2) + 1;
    if (exclude_outside) {
      double sum = 0.0;
      for (size_t t = 0; t < c.size(); ++t) {
        const int64_t j = first + int64_t(t);
        if (j < 0 || j >= in) c[t] = 0.0;
        sum += c[t];
      }
      for (double& v : c) v = sum == 0.0 ? 0.0 : v / sum;
    }
    for (size_t t = 0; t < c.size(); ++t) {
      const int64_t j = std::clamp<int64_t>(first + int64_t(t), 0, in - 1);
      m[static_cast<size_t>(j * out + o)] += c[t];
    }
  }
  return std::vector<float>(m.begin(), m.end());
}

}  // namespace

const Value* OnnxImporter::permute_value(int i, const Value& x, const std::vector<int64_t>& perm,
                                         const std::string& out) {
  MoveOperand op;
  op.value = &x;
  op.dims = x.dims;
  std::vector<int64_t> full;
  if (x.batched) {
    op.dims.insert(op.dims.begin(), 1);
    full.push_back(0);
  }
  for (int64_t p : perm) full.push_back(p + (x.batched ? 1 : 0));
  emit_move(i, out, "transpose", {op}, transpose_spec(op.dims, full));
  auto it = values_.find(out);
  return it == values_.end() ? nullptr : &it->second;
}

void OnnxImporter::along_axis(int i, const Value& x, size_t axis, const std::string& out,
                              const AxisOperation& operation) {
  if (!x.flat_from.empty()) {
    return fail(i,
                fmt::format("input '{}' is a flattened feature map; reshape it first", x.ir_name));
  }
  if (ir_last_axis(x) == axis) return operation(x, axis, out);
  // A move keeps a feature map's layout (channels first, the channels last in the IR), so the
  // axis goes to the channel position there and to the end otherwise; a move that keeps the IR's
  // order (axes of size 1) may come out in the other layout, and the axis moves once more.
  const size_t rank = x.dims.size();
  std::vector<int64_t> order(rank);  // the axis of x at each position of `cur`
  for (size_t k = 0; k < rank; ++k) order[k] = int64_t(k);
  const Value* cur = &x;
  size_t at = axis;
  for (int step = 0; ir_last_axis(*cur) != at; ++step) {
    if (step == 2) {
      return fail(i, fmt::format("axis {} of {} could not be moved to the IR's last axis", axis,
                                 dims_text(x.dims)));
    }
    const bool map = cur->channels_first && cur->batched && (rank == 3 || rank == 4);
    const size_t target = map ? 0 : rank - 1;
    std::vector<int64_t> perm;
    for (size_t k = 0; k < rank; ++k) {
      if (k != at) perm.push_back(int64_t(k));
    }
    perm.insert(perm.begin() + long(target), int64_t(at));
    std::vector<int64_t> moved_order;
    for (int64_t p : perm) moved_order.push_back(order[size_t(p)]);
    order = moved_order;
    cur = permute_value(
        i, *cur, perm,
        fmt::format("{}_axis{}_moved{}", out, axis, step == 0 ? "" : std::to_string(step)));
    if (!cur) return;
    at = target;
  }
  const std::string done = fmt::format("{}_axis{}_done", out, axis);
  operation(*cur, at, done);
  auto it = values_.find(done);
  if (it == values_.end()) return;
  std::vector<int64_t> back(rank);
  for (size_t k = 0; k < rank; ++k) back[size_t(order[k])] = int64_t(k);
  permute_value(i, it->second, back, out);
}

void OnnxImporter::dense_along_axis(int i, const Value& x, size_t axis, std::vector<float> weights,
                                    int64_t units, const std::string& out) {
  along_axis(i, x, axis, out, [&](const Value& v, size_t at, const std::string& name) {
    Layer& l = add_layer(i, OpKind::kDense, {v.ir_name}, name);
    l.filters = static_cast<int>(units);
    l.weights = weights;
    l.use_bias = false;
    l.bias.assign(static_cast<size_t>(units), 0.0f);
    Value r = v;
    r.dims[at] = units;
    set_value(name, std::move(r));
  });
}

void OnnxImporter::softmax_along_axis(int i, const Value& x, size_t axis, const std::string& out) {
  along_axis(i, x, axis, out, [&](const Value& v, size_t, const std::string& name) {
    add_layer(i, OpKind::kSoftmax, {v.ir_name}, name);
    set_value(name, v);
  });
}

// Resize linear / cubic: every resized axis through its interpolation matrix in turn.
void OnnxImporter::resize_interpolated(int i, const Value& x, const std::vector<int64_t>& dims,
                                       const std::vector<double>& scale) {
  const Node& n = g_.node(i);
  const std::string mode = attr_string(n, "mode", "nearest");
  const std::string transform = attr_string(n, "coordinate_transformation_mode", "half_pixel");
  static const char* kTransforms[] = {"half_pixel", "asymmetric", "align_corners",
                                      "pytorch_half_pixel"};
  if (std::find(std::begin(kTransforms), std::end(kTransforms), transform) ==
      std::end(kTransforms)) {
    return fail(i, fmt::format("coordinate_transformation_mode '{}' with mode {} is not supported "
                               "(half_pixel, asymmetric, align_corners, pytorch_half_pixel)",
                               transform, mode));
  }
  const double a = attr_float(n, "cubic_coeff_a", -0.75f);
  const bool exclude_outside = attr_int(n, "exclude_outside", 0) != 0;
  const size_t skip = x.batched ? 1 : 0;  // dims and scale count the batch axis when batched
  std::vector<size_t> axes;
  for (size_t k = 0; k < x.dims.size(); ++k) {
    if (dims[k + skip] != x.dims[k] || scale[k + skip] != 1.0) axes.push_back(k);
  }
  const std::string out = n.output(0);
  if (axes.empty()) return alias(i, x);
  const Value* cur = &x;
  for (size_t k = 0; k < axes.size(); ++k) {
    const size_t ax = axes[k];
    const std::string name = k + 1 == axes.size() ? out : fmt::format("{}_resized{}", out, ax);
    dense_along_axis(i, *cur, ax,
                     interpolation_matrix(x.dims[ax], dims[ax + skip], scale[ax + skip],
                                          mode == "cubic", transform, a, exclude_outside),
                     dims[ax + skip], name);
    auto it = values_.find(name);
    if (it == values_.end()) return;
    cur = &it->second;
  }
}

// MatMul by a constant B [..., K, N] whose leading axes (those of A, which it must match) hold a
// different matrix per index: A sliced per leading index, a dense layer per slice, the products
// stacked back.
void OnnxImporter::matmul_per_index(int i, const Value& a, const Constant& b) {
  const Node& n = g_.node(i);
  std::vector<int64_t> a_full = a.dims;
  if (a.batched) a_full.insert(a_full.begin(), 1);
  if (a.batched && b.dims.size() == a_full.size() && b.dims[0] != 1) {
    return batch_axis_needed(
        i, fmt::format("weights '{}' {} differ along axis 0", n.input(1), dims_text(b.dims)));
  }
  const size_t rank = a_full.size();
  if (b.is_int || b.dims.size() != rank ||
      !std::equal(b.dims.begin() + (a.batched ? 1 : 0), b.dims.end() - 2,
                  a_full.begin() + (a.batched ? 1 : 0)) ||
      b.dims[rank - 2] != a_full[rank - 1]) {
    return fail(i, fmt::format("weights '{}' {}: a different matrix per leading index needs the "
                               "leading axes of input A {} (same rank, no broadcasting)",
                               n.input(1), dims_text(b.dims), dims_text(a_full)));
  }
  const int64_t k_dim = b.dims[rank - 2], units = b.dims[rank - 1];
  const std::vector<int64_t> lead(a_full.begin(), a_full.end() - 2);
  const std::vector<int64_t> lead_strides = row_major_strides(lead);
  const int64_t count = product(lead);
  const std::string out = n.output(0);
  std::vector<MoveOperand> products;
  for (int64_t f = 0; f < count; ++f) {
    std::vector<int64_t> at(lead.size());
    for (size_t d = 0; d < lead.size(); ++d) at[d] = f / lead_strides[d] % lead[d];
    MoveOperand op;
    op.value = &a;
    op.dims = a_full;
    MoveSpec slice;
    slice.dims = a_full;
    for (size_t d = 0; d < lead.size(); ++d) slice.dims[d] = 1;
    slice.source = [at](const std::vector<int64_t>& o, std::vector<int64_t>& in) {
      in = o;
      for (size_t d = 0; d < at.size(); ++d) in[d] = at[d];
      return 0;
    };
    const std::string slice_name = fmt::format("{}_slice{}", out, f);
    emit_move(i, slice_name, "slice", {op}, slice);
    auto it = values_.find(slice_name);
    if (it == values_.end()) return;
    const auto begin = b.values.begin() + long(f * k_dim * units);
    const std::string product_name = fmt::format("{}_product{}", out, f);
    dense_along_axis(i, it->second, rank - 1 - (a.batched ? 1 : 0),
                     std::vector<float>(begin, begin + long(k_dim * units)), units, product_name);
    auto p = values_.find(product_name);
    if (p == values_.end()) return;
    MoveOperand prod;
    prod.value = &p->second;
    prod.dims = p->second.dims;
    if (p->second.batched) prod.dims.insert(prod.dims.begin(), 1);
    products.push_back(prod);
  }
  MoveSpec stack;
  stack.dims = a_full;
  stack.dims.back() = units;
  stack.source = [lead_strides](const std::vector<int64_t>& o, std::vector<int64_t>& in) {
    int64_t f = 0;
    in = o;
    for (size_t d = 0; d < lead_strides.size(); ++d) {
      f += o[d] * lead_strides[d];
      in[d] = 0;
    }
    return int(f);
  };
  emit_move(i, out, "concat", products, stack);
}

}  // namespace npusim::onnx_frontend
