// ONNX translators of data-movement operators as index maps (onnx_movement.hpp): Slice, Gather
// with constant indices, Resize (nearest; linear and cubic via onnx_compose.cpp), Split, and the
// shape operators Shape and Cast that exporters put in front of a Reshape; on constants they fold
// at import.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "compiler/frontend/onnx/onnx_importer.hpp"

namespace npusim::onnx_frontend {

namespace {
// The largest size Resize may give one axis.
constexpr int64_t kMaxResizedAxis = int64_t(1) << 24;
}  // namespace

std::string normalize(std::vector<int64_t>& axes, size_t rank) {
  const auto r = int64_t(rank);
  for (int64_t& a : axes) {
    if (a < -r || a >= r) return fmt::format("axis {} is out of range for rank {}", a, rank);
    if (a < 0) a += r;
  }
  return "";
}

namespace {

// A slice of one axis as an index map: element k of the result is start + k * step.
struct AxisSlice {
  int64_t start = 0, step = 1, size = 0;
};

AxisSlice clamp_slice(int64_t start, int64_t end, int64_t step, int64_t dim) {
  AxisSlice s;
  s.step = step;
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    s.size = end > start ? (end - start + step - 1) / step : 0;
  } else {
    start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
    s.size = start > end ? (start - end - step - 1) / -step : 0;
  }
  s.start = start;
  return s;
}

MoveSpec slice_spec(const std::vector<int64_t>& dims, const std::vector<AxisSlice>& axes) {
  MoveSpec spec;
  for (const auto& s : axes) spec.dims.push_back(s.size);
  (void)dims;
  spec.source = [axes](const std::vector<int64_t>& out, std::vector<int64_t>& in) {
    for (size_t a = 0; a < out.size(); ++a) in.push_back(axes[a].start + out[a] * axes[a].step);
    return 0;
  };
  return spec;
}

std::vector<AxisSlice> whole(const std::vector<int64_t>& dims) {
  std::vector<AxisSlice> s;
  for (int64_t d : dims) s.push_back({0, 1, d});
  return s;
}

}  // namespace

void OnnxImporter::import_slice(int i) {
  const Node& n = g_.node(i);
  std::vector<MoveOperand> ops;
  if (!move_operands(i, ops, 1)) return;
  const std::vector<int64_t>& x = ops[0].dims;
  auto ints = [&](int k, const char* role, std::vector<int64_t> fallback) {
    if (k >= n.input_size() || n.input(k).empty()) return std::optional(fallback);
    const Constant* c = constant(i, k, role);
    if (!c) return std::optional<std::vector<int64_t>>();
    if (!c->is_int || c->dims.size() != 1) {
      fail(i, fmt::format("{} '{}' must be a 1-D integer tensor", role, n.input(k)));
      return std::optional<std::vector<int64_t>>();
    }
    return std::optional(c->ints);
  };
  auto starts = ints(1, "starts", {});
  if (!starts) return;
  auto ends = ints(2, "ends", {});
  if (!ends) return;
  std::vector<int64_t> all(starts->size());
  for (size_t a = 0; a < all.size(); ++a) all[a] = int64_t(a);
  auto axes = ints(3, "axes", all);
  if (!axes) return;
  auto steps = ints(4, "steps", std::vector<int64_t>(starts->size(), 1));
  if (!steps) return;
  if (ends->size() != starts->size() || axes->size() != starts->size() ||
      steps->size() != starts->size()) {
    return fail(i, "starts, ends, axes and steps must have the same length");
  }
  if (auto problem = normalize(*axes, x.size()); !problem.empty()) return fail(i, problem);
  std::vector<AxisSlice> slices = whole(x);
  for (size_t k = 0; k < axes->size(); ++k) {
    const auto a = size_t((*axes)[k]);
    if ((*steps)[k] == 0) return fail(i, "steps must not be 0");
    if (ops[0].value && ops[0].value->batched && a == 0) {
      const int64_t batch = std::max<int64_t>(graph_.batch, file_batch_);
      if ((*starts)[k] != 0 || (*steps)[k] != 1 || (*ends)[k] < batch) {
        return batch_axis_needed(i, "a slice of axis 0");
      }
      continue;
    }
    slices[a] = clamp_slice((*starts)[k], (*ends)[k], (*steps)[k], x[a]);
  }
  emit_move(i, n.output(0), "slice", ops, slice_spec(x, slices));
}

// Gather with constant indices (on a run-time tensor or a constant): the indexed axis is
// replaced by the indices' shape.
void OnnxImporter::import_gather(int i) {
  const Node& n = g_.node(i);
  if (graph_.input_ids && n.input_size() >= 2 && token_id_names_.count(n.input(1))) {
    return import_embedding(i);
  }
  std::vector<MoveOperand> ops;
  if (!move_operands(i, ops, 1)) return;
  if (n.input_size() < 2) return fail(i, "expects data and indices");
  if (!is_constant(n.input(1))) {
    return fail(i, fmt::format("indices '{}' are a run-time tensor; npusim gathers with constant "
                               "indices only (embedding lookups of run-time token ids are not "
                               "supported)",
                               n.input(1)));
  }
  const Constant& idx = constants_.at(n.input(1));
  if (!idx.is_int) return fail(i, "indices must be integers");
  const std::vector<int64_t>& x = ops[0].dims;
  std::vector<int64_t> axis_v{attr_int(n, "axis", 0)};
  if (auto problem = normalize(axis_v, x.size()); !problem.empty()) return fail(i, problem);
  const auto axis = size_t(axis_v[0]);
  if (ops[0].value && ops[0].value->batched && axis == 0) {
    return batch_axis_needed(i, "a gather along axis 0");
  }
  std::vector<int64_t> index = idx.ints;
  for (int64_t& v : index) {
    if (v < -x[axis] || v >= x[axis]) {
      return fail(i,
                  fmt::format("index {} is out of range for axis {} of size {}", v, axis, x[axis]));
    }
    if (v < 0) v += x[axis];
  }
  MoveSpec spec;
  spec.dims.assign(x.begin(), x.begin() + long(axis));
  spec.dims.insert(spec.dims.end(), idx.dims.begin(), idx.dims.end());
  spec.dims.insert(spec.dims.end(), x.begin() + long(axis) + 1, x.end());
  const size_t q = idx.dims.size();
  const auto idx_strides = row_major_strides(idx.dims);
  spec.source = [=](const std::vector<int64_t>& out, std::vector<int64_t>& in) {
    int64_t flat = 0;
    for (size_t a = 0; a < q; ++a) flat += out[axis + a] * idx_strides[a];
    in.assign(out.begin(), out.begin() + long(axis));
    in.push_back(index[size_t(flat)]);
    in.insert(in.end(), out.begin() + long(axis + q), out.end());
    return 0;
  };
  emit_move(i, n.output(0), "gather", ops, spec);
}

// Gather of an initializer's rows by the graph's token ids: an embedding lookup
// (OpKind::kEmbedding, an indexed DMA), the table [vocab, hidden] on axis 0.
void OnnxImporter::import_embedding(int i) {
  const Node& n = g_.node(i);
  const Constant* table = constant(i, 0, "embedding table");
  if (table == nullptr) return;
  if (table->is_int || table->dims.size() != 2 || table->elements() == 0) {
    return fail(i, fmt::format("the embedding table must be a non-empty float matrix [vocab, "
                               "hidden], got {} {}",
                               table->is_int ? "integers" : "floats", dims_text(table->dims)));
  }
  const int64_t axis = attr_int(n, "axis", 0);
  if (axis != 0 && axis != -2) {
    return fail(i, fmt::format("axis {}: token ids select rows of the table (axis 0)", axis));
  }
  if (table->dims[0] > std::numeric_limits<int32_t>::max() ||
      table->dims[1] > std::numeric_limits<int32_t>::max()) {
    return fail(i, fmt::format("table {} is too large for int32 ids", dims_text(table->dims)));
  }
  const Value& ids = values_.at(graph_.input_name);
  Layer& l = add_layer(i, OpKind::kEmbedding, {graph_.input_name}, n.output(0));
  l.weights = table->values;
  l.filters = static_cast<int>(table->dims[1]);
  Value v;
  v.dims = ids.dims;
  v.dims.push_back(table->dims[1]);
  set_value(n.output(0), std::move(v));
}

// Resize with mode nearest: every output coordinate maps back to one input coordinate through
// the coordinate transformation and the rounding of nearest_mode (ONNX's definitions); modes
// linear and cubic in onnx_compose.cpp.
void OnnxImporter::import_resize(int i) {
  const Node& n = g_.node(i);
  std::vector<MoveOperand> ops;
  if (!move_operands(i, ops, 1)) return;
  const std::vector<int64_t>& x = ops[0].dims;
  const std::string mode = attr_string(n, "mode", "nearest");
  if (mode != "nearest" && mode != "linear" && mode != "cubic") {
    return fail(i, fmt::format("mode '{}', expected nearest, linear or cubic", mode));
  }
  const std::string transform = attr_string(n, "coordinate_transformation_mode", "half_pixel");
  const std::string rounding = attr_string(n, "nearest_mode", "round_prefer_floor");
  if (find_attr(n, "axes") || attr_int(n, "antialias", 0) != 0) {
    return fail(i, "the axes and antialias attributes are not supported");
  }
  const Constant* scales = n.input_size() > 2 ? optional_constant(i, 2, "scales") : nullptr;
  const Constant* sizes = n.input_size() > 3 ? optional_constant(i, 3, "sizes") : nullptr;
  if (scales && scales->elements() == 0) scales = nullptr;
  if (sizes && sizes->elements() == 0) sizes = nullptr;
  if (!scales == !sizes) return fail(i, "expects exactly one of scales and sizes");
  std::vector<double> scale(x.size());
  MoveSpec spec;
  if (scales) {
    if (scales->is_int || scales->values.size() != x.size()) {
      return fail(i, fmt::format("scales must be {} floats", x.size()));
    }
    for (size_t a = 0; a < x.size(); ++a) {
      scale[a] = scales->values[a];
      // Bounded before the conversion (found by fuzzing: tests/fuzz/corpus/onnx).
      const double d = std::floor(double(x[a]) * scale[a]);
      if (!(d >= 1.0 && d <= double(kMaxResizedAxis))) {
        return fail(i, fmt::format("scales {} give axis {} a size outside 1 to {}",
                                   fmt::join(scales->values, ", "), a, kMaxResizedAxis));
      }
      spec.dims.push_back(int64_t(d));
    }
  } else {
    if (!sizes->is_int || sizes->ints.size() != x.size()) {
      return fail(i, fmt::format("sizes must be {} integers", x.size()));
    }
    spec.dims = sizes->ints;
    for (int64_t d : spec.dims) {
      if (d < 1 || d > kMaxResizedAxis) {
        return fail(i, fmt::format("sizes {}: each must be 1 to {}", dims_text(spec.dims),
                                   kMaxResizedAxis));
      }
    }
    for (size_t a = 0; a < x.size(); ++a) scale[a] = double(spec.dims[a]) / double(x[a]);
  }
  if (ops[0].value && ops[0].value->batched) {
    const bool keeps =
        scales ? scale[0] == 1.0 : spec.dims[0] == graph_.batch || spec.dims[0] == file_batch_;
    if (!keeps) return batch_axis_needed(i, "a resize of axis 0");
    scale[0] = 1.0;
    spec.dims[0] = 1;
  }
  for (int64_t d : spec.dims) {
    if (d <= 0) return fail(i, fmt::format("the result {} is empty", dims_text(spec.dims)));
  }
  if (mode != "nearest") {  // onnx_compose.cpp: interpolation matrices
    if (!ops[0].value) return fail(i, fmt::format("a {} resize of a constant", mode));
    return resize_interpolated(i, *ops[0].value, spec.dims, scale);
  }
  static const char* kTransforms[] = {"half_pixel", "asymmetric", "align_corners",
                                      "pytorch_half_pixel", "tf_half_pixel_for_nn"};
  static const char* kRoundings[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  if (std::find(std::begin(kTransforms), std::end(kTransforms), transform) ==
      std::end(kTransforms)) {
    return fail(i, fmt::format("coordinate_transformation_mode '{}' is not supported", transform));
  }
  if (std::find(std::begin(kRoundings), std::end(kRoundings), rounding) == std::end(kRoundings)) {
    return fail(i, fmt::format("nearest_mode '{}' is not supported", rounding));
  }
  // The input coordinate of output coordinate o on each axis.
  std::vector<std::vector<int64_t>> map(x.size());
  for (size_t a = 0; a < x.size(); ++a) {
    const double in = double(x[a]), out = double(spec.dims[a]), s = scale[a];
    for (int64_t o = 0; o < spec.dims[a]; ++o) {
      double c = double(o);
      if (transform == "half_pixel") c = (c + 0.5) / s - 0.5;
      if (transform == "asymmetric") c = c / s;
      if (transform == "align_corners") c = out == 1 ? 0.0 : c * (in - 1) / (out - 1);
      if (transform == "pytorch_half_pixel") c = out > 1 ? (c + 0.5) / s - 0.5 : 0.0;
      if (transform == "tf_half_pixel_for_nn") c = (c + 0.5) / s;
      double r;
      if (rounding == "floor") {
        r = std::floor(c);
      } else if (rounding == "ceil") {
        r = std::ceil(c);
      } else if (c - std::floor(c) == 0.5) {
        r = rounding == "round_prefer_floor" ? std::floor(c) : std::ceil(c);
      } else {
        r = std::round(c);
      }
      map[a].push_back(std::clamp<int64_t>(int64_t(r), 0, x[a] - 1));
    }
  }
  spec.source = [map](const std::vector<int64_t>& out, std::vector<int64_t>& in) {
    for (size_t a = 0; a < out.size(); ++a) in.push_back(map[a][size_t(out[a])]);
    return 0;
  };
  emit_move(i, n.output(0), "resize", ops, spec);
}

// Split into equal parts (the last smaller, opset 18) or given sizes; each output is a slice.
void OnnxImporter::import_split(int i) {
  const Node& n = g_.node(i);
  std::vector<MoveOperand> ops;
  if (!move_operands(i, ops, 1)) return;
  const std::vector<int64_t>& x = ops[0].dims;
  std::vector<int64_t> axis_v{attr_int(n, "axis", 0)};
  if (auto problem = normalize(axis_v, x.size()); !problem.empty()) return fail(i, problem);
  const auto axis = size_t(axis_v[0]);
  if (ops[0].value && ops[0].value->batched && axis == 0) {
    return batch_axis_needed(i, "a split of axis 0");
  }
  std::vector<int64_t> parts;
  if (opset_ < 13) {
    parts = attr_ints(n, "split", {});
  } else if (n.input_size() > 1 && !n.input(1).empty()) {
    const Constant* c = constant(i, 1, "split");
    if (!c) return;
    if (!c->is_int) return fail(i, "split must be integers");
    parts = c->ints;
  }
  const int64_t outputs = n.output_size();
  if (parts.empty()) {
    const int64_t chunk = (x[axis] + outputs - 1) / outputs;
    for (int64_t k = 0, left = x[axis]; k < outputs; ++k, left -= chunk) {
      parts.push_back(std::min(chunk, left));
    }
  }
  int64_t total = 0;
  for (int64_t p : parts) total += p;
  if (int64_t(parts.size()) != outputs || total != x[axis] ||
      std::any_of(parts.begin(), parts.end(), [](int64_t p) { return p < 0; })) {
    return fail(i, fmt::format("split {} does not divide axis {} of size {} into {} outputs",
                               dims_text(parts), axis, x[axis], outputs));
  }
  int64_t offset = 0;
  for (int64_t k = 0; k < outputs; ++k) {
    std::vector<AxisSlice> slices = whole(x);
    slices[axis] = {offset, 1, parts[size_t(k)]};
    offset += parts[size_t(k)];
    if (n.output(int(k)).empty()) continue;
    emit_move(i, n.output(int(k)), "split", ops, slice_spec(x, slices));
  }
}

// Shape of a run-time tensor (its batch is the batch npusim runs) or of a constant.
void OnnxImporter::import_shape(int i) {
  const Node& n = g_.node(i);
  Constant c;
  c.is_int = true;
  if (is_constant(n.input(0))) {
    c.ints = constants_.at(n.input(0)).dims;
  } else {
    const Value* x = activation(i, 0);
    if (!x) return;
    c.ints = x->dims;
    if (x->batched) c.ints.insert(c.ints.begin(), graph_.batch);
  }
  const auto rank = int64_t(c.ints.size());
  int64_t start = attr_int(n, "start", 0), end = attr_int(n, "end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  c.ints = std::vector<int64_t>(c.ints.begin() + start, c.ints.begin() + end);
  c.dims = {int64_t(c.ints.size())};
  --consumers_[n.input(0)];  // reading the shape is not a read of the values
  constants_[n.output(0)] = std::move(c);
}

// Cast: of a constant, to float or an integer type; of a run-time tensor, to float only.
void OnnxImporter::import_cast(int i) {
  const Node& n = g_.node(i);
  const int64_t to = attr_int(n, "to", 0);
  const bool to_float =
      to == onnx::TensorProto_DataType_FLOAT || to == onnx::TensorProto_DataType_DOUBLE;
  const bool to_int =
      to == onnx::TensorProto_DataType_INT64 || to == onnx::TensorProto_DataType_INT32;
  if (!is_constant(n.input(0))) {
    if (!to_float) return fail(i, "a run-time tensor can only be cast to float");
    const Value* x = activation(i, 0);
    if (x) alias(i, *x);
    return;
  }
  if (!to_float && !to_int) {
    return fail(i, fmt::format("cast of a constant to {} is not supported (float or integer)",
                               data_type_name(int(to))));
  }
  Constant c = constants_.at(n.input(0));
  if (to_int && !c.is_int) {
    for (float v : c.values) c.ints.push_back(int64_t(v));
    c.values.clear();
  } else if (to_float && c.is_int) {
    for (int64_t v : c.ints) c.values.push_back(float(v));
    c.ints.clear();
  }
  c.is_int = to_int;
  constants_[n.output(0)] = std::move(c);
}

}  // namespace npusim::onnx_frontend
