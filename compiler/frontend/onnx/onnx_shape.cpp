// ONNX translators of shape operators: Concat, Flatten, Reshape, Squeeze, Unsqueeze and
// Constant nodes.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "compiler/frontend/onnx/onnx_importer.hpp"

namespace npusim::onnx_frontend {

void OnnxImporter::import_concat(int i) {
  const Node& n = g_.node(i);
  if (n.input_size() < 2) return fail(i, "expects 2 or more inputs");
  std::vector<const Value*> xs;
  for (int k = 0; k < n.input_size(); ++k) {
    const Value* x = activation(i, k);
    if (!x) return;
    xs.push_back(x);
  }
  const Value& first = *xs[0];
  const int64_t rank = static_cast<int64_t>(first.dims.size()) + 1;
  const auto* axis_attr = find_attr(n, "axis");
  if (!axis_attr) return fail(i, "attribute 'axis' is required");
  int64_t axis = axis_attr->i();
  if (axis < 0) axis += rank;
  const int64_t channel_axis = first.channels_first ? 1 : rank - 1;
  if (axis != channel_axis) {
    return fail(i, fmt::format("axis {} on inputs of rank {}: npusim concatenates along the {} "
                               "axis only (axis {})",
                               axis_attr->i(), rank, first.channels_first ? "channel" : "last",
                               channel_axis));
  }
  const size_t ax = static_cast<size_t>(axis - 1);
  Value v = first;
  v.dims[ax] = 0;
  std::vector<std::string> inputs;
  for (const Value* x : xs) {
    std::vector<int64_t> a = x->dims, b = first.dims;
    if (a.size() == b.size()) a[ax] = b[ax] = 0;
    if (a != b || x->channels_first != first.channels_first) {
      return fail(i,
                  fmt::format("input '{}' [N, {}] does not match [N, {}] outside the "
                              "concatenation axis",
                              x->ir_name, fmt::join(x->dims, ", "), fmt::join(first.dims, ", ")));
    }
    if (!x->flat_from.empty()) {
      return fail(i, fmt::format("input '{}' is a flattened feature map, whose element order in "
                                 "npusim (H, W, C) differs from ONNX's; concatenate before "
                                 "flattening",
                                 x->ir_name));
    }
    v.dims[ax] += x->dims[ax];
    inputs.push_back(x->ir_name);
  }
  const std::string out = n.output(0);
  add_layer(i, OpKind::kConcat, std::move(inputs), out);
  set_value(out, std::move(v));
}

void OnnxImporter::import_flatten(int i) {
  const Node& n = g_.node(i);
  const Value* x = activation(i, 0);
  if (!x) return;
  const int64_t rank = static_cast<int64_t>(x->dims.size()) + 1;
  int64_t axis = attr_int(n, "axis", 1);
  if (axis < 0) axis += rank;
  if (axis != 1) {
    return fail(i, fmt::format("axis {}: only axis 1 (keep the batch, flatten the rest) is "
                               "supported",
                               attr_int(n, "axis", 1)));
  }
  if (x->dims.size() == 1) return alias(i, *x);
  const std::string out = n.output(0);
  Value v;
  flatten_value(*x, v);
  add_layer(i, OpKind::kReshape, {x->ir_name}, out);
  set_value(out, std::move(v));
}

void OnnxImporter::import_reshape(int i) {
  const Node& n = g_.node(i);
  const Value* x = activation(i, 0);
  if (!x) return;
  if (n.input_size() < 2 || !is_constant(n.input(1))) {
    return fail(i, fmt::format("shape input '{}' is not a constant (an initializer or a Constant "
                               "node); npusim needs shapes known at import",
                               n.input_size() < 2 ? std::string() : n.input(1)));
  }
  const Constant& shape = constants_.at(n.input(1));
  if (!shape.is_int || shape.dims.size() != 1 || shape.ints.empty()) {
    return fail(i, fmt::format("shape '{}' must be a 1-D integer tensor", n.input(1)));
  }
  const bool allow_zero = attr_int(n, "allowzero", 0) != 0;
  std::vector<int64_t> target = shape.ints;
  // The first entry must keep the batch: 0 (copy), -1 (inferred) or the model's batch size.
  const int64_t t0 = target[0];
  if (!((t0 == 0 && !allow_zero) || t0 == -1 || t0 == graph_.batch ||
        (file_batch_ > 0 && t0 == file_batch_))) {
    return fail(i, fmt::format("shape {} changes the batch dimension (its first entry must be 0, "
                               "-1 or the batch size {})",
                               dims_text(target), graph_.batch));
  }
  std::vector<int64_t> per_sample(target.begin() + 1, target.end());
  int inferred = -1;
  int64_t known = 1;
  for (size_t k = 0; k < per_sample.size(); ++k) {
    int64_t& d = per_sample[k];
    if (d == 0 && !allow_zero) {
      if (k >= x->dims.size()) {
        return fail(i, fmt::format("shape {} copies input dimension {} that does not exist",
                                   dims_text(target), k + 1));
      }
      d = x->dims[k];
    }
    if (d == -1) {
      if (inferred >= 0) return fail(i, fmt::format("shape {} has two -1", dims_text(target)));
      inferred = static_cast<int>(k);
      continue;
    }
    if (d <= 0) return fail(i, fmt::format("shape {} has a non-positive size", dims_text(target)));
    known *= d;
  }
  const int64_t elements = product(x->dims);
  if (inferred >= 0 && known > 0 && elements % known == 0) {
    per_sample[static_cast<size_t>(inferred)] = elements / known;
    known = elements;
  }
  if (per_sample.empty() || known != elements) {
    return fail(i, fmt::format("shape {} does not hold the {} elements per sample of the input "
                               "[N, {}]",
                               dims_text(target), elements, fmt::join(x->dims, ", ")));
  }
  reshape_value(i, *x, per_sample);
}

// A reshape of x to `per_sample` (batch excluded), from Reshape, Squeeze or Unsqueeze.
void OnnxImporter::reshape_value(int i, const Value& x, const std::vector<int64_t>& per_sample) {
  if (per_sample == x.dims) return alias(i, x);
  const std::string out = g_.node(i).output(0);
  if (per_sample.size() == 1) {
    Value v;
    flatten_value(x, v);
    add_layer(i, OpKind::kReshape, {x.ir_name}, out);
    return set_value(out, std::move(v));
  }
  // Any other reshape keeps the row-major order; a channels-first map and the IR agree on that
  // order only when its channel or its spatial extent is 1.
  const bool x_order_ok =
      x.flat_from.empty() && (!x.channels_first || x.dims[0] == 1 || product(x.dims, 1) == 1);
  const bool out_channels_first = !whole_tensor_ && per_sample.size() >= 3;
  const bool out_order_ok =
      !out_channels_first || per_sample[0] == 1 || product(per_sample, 1) == 1;
  if (!x_order_ok || !out_order_ok || per_sample.size() > 4) {
    return fail(i, fmt::format("reshaping [N, {}] to [N, {}] would reorder elements between "
                               "ONNX's channels-first layout and npusim's channels-last layout; "
                               "only flattening a feature map and reshaping (N, features) / (N, "
                               "rows, features) tensors are supported",
                               fmt::join(x.dims, ", "), fmt::join(per_sample, ", ")));
  }
  Value v;
  v.dims = per_sample;
  v.channels_first = out_channels_first;
  add_layer(i, OpKind::kReshape, {x.ir_name}, out).reshape_to = ir_dims(v);
  set_value(out, std::move(v));
}

// The axes of Squeeze / Unsqueeze / ReduceMean: an attribute before `input_from_opset`, the
// optional constant input 1 from then on. Returns false after reporting a problem.
bool OnnxImporter::read_axes(int i, int input_from_opset, std::vector<int64_t>& axes, bool& given) {
  const Node& n = g_.node(i);
  given = false;
  if (opset_ < input_from_opset) {
    if (const auto* a = find_attr(n, "axes")) {
      axes.assign(a->ints().begin(), a->ints().end());
      given = true;
    }
    return true;
  }
  if (n.input_size() < 2 || n.input(1).empty()) return true;
  const Constant* c = constant(i, 1, "axes");
  if (!c) return false;
  if (!c->is_int || c->dims.size() > 1) {
    fail(i, fmt::format("axes '{}' must be a 1-D integer tensor", n.input(1)));
    return false;
  }
  axes = c->ints;
  given = true;
  return true;
}

void OnnxImporter::import_squeeze(int i, bool unsqueeze) {
  const Value* x = activation(i, 0);
  if (!x) return;
  std::vector<int64_t> axes;
  bool given;
  if (!read_axes(i, 13, axes, given)) return;
  const int64_t rank = static_cast<int64_t>(x->dims.size()) + 1;
  if (unsqueeze && !given) return fail(i, "axes are required");
  if (!given) {
    for (int64_t a = 1; a < rank; ++a) {
      if (x->dims[static_cast<size_t>(a - 1)] == 1) axes.push_back(a);
    }
  }
  const int64_t out_rank = unsqueeze ? rank + static_cast<int64_t>(axes.size()) : rank;
  if (auto problem = normalize_axes(axes, out_rank); !problem.empty()) return fail(i, problem);
  std::vector<int64_t> dims;
  if (unsqueeze) {
    dims = x->dims;
    for (int64_t a : axes) dims.insert(dims.begin() + (a - 1), 1);
  } else {
    for (int64_t a = 1; a < rank; ++a) {
      const bool squeezed = std::binary_search(axes.begin(), axes.end(), a);
      const int64_t d = x->dims[static_cast<size_t>(a - 1)];
      if (squeezed && d != 1) {
        return fail(i, fmt::format("axis {} has size {}, not 1", a, d));
      }
      if (!squeezed) dims.push_back(d);
    }
  }
  if (dims.empty()) return fail(i, "the result would have no dimension besides the batch");
  reshape_value(i, *x, dims);
}

void OnnxImporter::import_constant_node(int i) {
  const Node& n = g_.node(i);
  if (n.attribute_size() != 1) return fail(i, "expects exactly one attribute");
  const auto& a = n.attribute(0);
  Constant c;
  if (a.name() == "value") {
    if (auto problem = read_tensor(a.t(), c); !problem.empty()) {
      return fail(i, "value " + problem);
    }
  } else if (a.name() == "value_float") {
    c.values = {a.f()};
  } else if (a.name() == "value_floats") {
    c.values.assign(a.floats().begin(), a.floats().end());
    c.dims = {static_cast<int64_t>(c.values.size())};
  } else if (a.name() == "value_int") {
    c.is_int = true;
    c.ints = {a.i()};
  } else if (a.name() == "value_ints") {
    c.is_int = true;
    c.ints.assign(a.ints().begin(), a.ints().end());
    c.dims = {static_cast<int64_t>(c.ints.size())};
  } else {
    return fail(i, fmt::format("attribute '{}' is not supported (value, value_float(s), "
                               "value_int(s))",
                               a.name()));
  }
  constants_[n.output(0)] = std::move(c);
}

// Identity and Dropout (inference: the identity) pass their input on under a new name.
void OnnxImporter::import_identity(int i) {
  if (!extra_outputs_unused(i)) return;
  const Value* x = activation(i, 0);
  if (x) alias(i, *x);
}

}  // namespace npusim::onnx_frontend
