// ONNX translators of shape operators: Concat, Flatten, Reshape, Squeeze, Unsqueeze and
// Constant nodes.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "compiler/frontend/onnx/onnx_importer.hpp"

namespace npusim::onnx_frontend {

// A concatenation of run-time tensors of one layout along their channel axis is a `concat`
// layer; any other (another axis, mixed layouts, constants) is a move (onnx_movement.cpp).
void OnnxImporter::import_concat(int i) {
  const Node& n = g_.node(i);
  if (std::any_of(n.input().begin(), n.input().end(),
                  [&](const std::string& in) { return is_constant(in); })) {
    return import_concat_move(i);
  }
  if (n.input_size() == 1) {  // torch.cat of one tensor
    const Value* x = activation(i, 0);
    if (x) alias(i, *x);
    return;
  }
  if (n.input_size() < 2) return fail(i, "expects 1 or more inputs");
  std::vector<const Value*> xs;
  for (int k = 0; k < n.input_size(); ++k) {
    const Value* x = activation(i, k);
    if (!x) return;
    xs.push_back(x);
  }
  const Value& first = *xs[0];
  if (!first.batched) return import_concat_move(i);  // a whole tensor (docs/onnx.md)
  const int64_t rank = static_cast<int64_t>(first.dims.size()) + 1;
  const auto* axis_attr = find_attr(n, "axis");
  if (!axis_attr) return fail(i, "attribute 'axis' is required");
  int64_t axis = axis_attr->i();
  if (axis < 0) axis += rank;
  const int64_t channel_axis = first.channels_first ? 1 : rank - 1;
  bool channels = axis == channel_axis;
  for (const Value* x : xs) {
    channels = channels && x->channels_first == first.channels_first && x->flat_from.empty() &&
               x->dims.size() == first.dims.size();
  }
  if (!channels) return import_concat_move(i);
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
    v.dims[ax] += x->dims[ax];
    inputs.push_back(x->ir_name);
  }
  const std::string out = n.output(0);
  add_layer(i, OpKind::kConcat, std::move(inputs), out);
  set_value(out, std::move(v));
}

void OnnxImporter::import_flatten(int i) {
  const Node& n = g_.node(i);
  if (is_constant(n.input(0))) {
    const Constant& c = constants_.at(n.input(0));
    std::vector<int64_t> axis{attr_int(n, "axis", 1)};
    const auto rank = int64_t(c.dims.size());
    if (axis[0] < -rank || axis[0] > rank) return fail(i, "axis is out of range");
    if (axis[0] < 0) axis[0] += rank;
    MoveOperand x{nullptr, &c, c.dims};
    const std::vector<int64_t> head(c.dims.begin(), c.dims.begin() + axis[0]);
    return reshape_move(i, x, {product(head), product(c.dims, size_t(axis[0]))});
  }
  const Value* x = activation(i, 0);
  if (!x) return;
  const int64_t rank = onnx_rank(*x);
  int64_t axis = attr_int(n, "axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank) return fail(i, fmt::format("axis {} is out of range", axis));
  if (!x->batched) {  // a whole tensor: [product of the axes before, product of the rest]
    const std::vector<int64_t> head(x->dims.begin(), x->dims.begin() + axis);
    return reshape_value(i, *x, {product(head), product(x->dims, size_t(axis))});
  }
  if (axis != 1) {
    return batch_axis_needed(
        i, fmt::format("axis {}: a flatten that does not keep the batch", attr_int(n, "axis", 1)));
  }
  if (x->dims.size() == 1) return alias(i, *x);
  const std::string out = n.output(0);
  Value v;
  flatten_value(*x, v);
  add_layer(i, OpKind::kReshape, {x->ir_name}, out);
  set_value(out, std::move(v));
}

namespace {

// ONNX Reshape of a whole tensor `in` to `target` (0 copies unless allowzero, -1 infers); an
// error message, empty when `out` is set.
std::string reshape_target(const std::vector<int64_t>& in, std::vector<int64_t> target,
                           bool allow_zero, std::vector<int64_t>& out) {
  int64_t known = 1, inferred = -1;
  for (size_t k = 0; k < target.size(); ++k) {
    if (target[k] == 0 && !allow_zero && k < in.size()) target[k] = in[k];
    if (target[k] == -1 && inferred < 0) {
      inferred = int64_t(k);
    } else if (target[k] < 0) {
      return fmt::format("shape {} has a negative size", dims_text(target));
    } else {
      known *= target[k];
    }
  }
  if (inferred >= 0 && known > 0) target[size_t(inferred)] = product(in) / known;
  if (product(target) != product(in)) {
    return fmt::format("shape {} does not hold the {} elements of {}", dims_text(target),
                       product(in), dims_text(in));
  }
  out = std::move(target);
  return "";
}

}  // namespace

// A Reshape of the token ids: allowed when it keeps their shape [batch, sequence] (then its
// output is the ids under another name), refused otherwise.
void OnnxImporter::import_token_ids_reshape(int i) {
  const Node& n = g_.node(i);
  const Value& ids = values_.at(graph_.input_name);
  std::vector<int64_t> onnx_dims(ids.dims.size() + (ids.batched ? 1 : 0));
  for (size_t d = 0; d < ids.dims.size(); ++d)
    onnx_dims[onnx_dims.size() - 1 - d] = ids.dims[ids.dims.size() - 1 - d];
  if (ids.batched) onnx_dims[0] = graph_.batch;
  if (n.input_size() < 2 || !is_constant(n.input(1))) {
    return fail(i, "the shape of a Reshape of the token ids must be a constant");
  }
  std::vector<int64_t> dims;
  if (auto e = reshape_target(onnx_dims, constants_.at(n.input(1)).ints,
                              attr_int(n, "allowzero", 0) != 0, dims);
      !e.empty()) {
    return fail(i, e);
  }
  if (dims != onnx_dims) {
    return fail(i, fmt::format("reshapes the token ids {} to {}: npusim looks ids up in their "
                               "own shape [batch, sequence] only",
                               dims_text(onnx_dims), dims_text(dims)));
  }
  values_[n.output(0)] = ids;  // the same ids (a Shape of them folds as of the input)
}

void OnnxImporter::import_reshape(int i) {
  const Node& n = g_.node(i);
  if (graph_.input_ids && token_id_names_.count(n.input(0))) return import_token_ids_reshape(i);
  const bool allow = attr_int(n, "allowzero", 0) != 0;
  if (is_activation(n.input(0)) && !values_.at(n.input(0)).batched && n.input_size() > 1 &&
      is_constant(n.input(1))) {
    // docs/onnx.md "Rank mapping": a whole tensor reshapes like a constant.
    const Value* x = activation(i, 0);
    if (!x) return;
    std::vector<int64_t> dims;
    if (auto e = reshape_target(x->dims, constants_.at(n.input(1)).ints, allow, dims); !e.empty()) {
      return fail(i, e);
    }
    return reshape_value(i, *x, dims);
  }
  if (is_constant(n.input(0)) && n.input_size() > 1 && is_constant(n.input(1))) {
    // A constant (shape arithmetic, weights).
    const Constant& c = constants_.at(n.input(0));
    std::vector<int64_t> dims;
    if (auto e = reshape_target(c.dims, constants_.at(n.input(1)).ints, allow, dims); !e.empty()) {
      return fail(i, e);
    }
    return reshape_move(i, MoveOperand{nullptr, &c, c.dims}, dims);
  }
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
    return batch_axis_needed(i, fmt::format("shape {} changes the batch dimension (its first "
                                            "entry must be 0, -1 or the batch size {})",
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
    return batch_axis_needed(i, fmt::format("shape {} does not hold the {} elements per sample "
                                            "of the input [N, {}]",
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
    v.batched = x.batched;
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
    // The elements move between the layouts (onnx_movement.cpp).
    MoveOperand op{&x, nullptr, x.dims};
    std::vector<int64_t> dims = per_sample;
    if (x.batched) {
      op.dims.insert(op.dims.begin(), 1);
      dims.insert(dims.begin(), 1);
    }
    return reshape_move(i, op, dims);
  }
  Value v;
  v.batched = x.batched;
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
  std::vector<int64_t> axes;
  bool given;
  const std::string& in = g_.node(i).input(0);
  if (is_constant(in) || (is_activation(in) && !values_.at(in).batched)) {
    // A constant (shape arithmetic) or a whole tensor: every axis counts, none is a batch.
    const std::vector<int64_t>& full =
        is_constant(in) ? constants_.at(in).dims : values_.at(in).dims;
    if (!read_axes(i, 13, axes, given)) return;
    if (unsqueeze && !given) return fail(i, "axes are required");
    const auto out_rank = int64_t(full.size() + (unsqueeze ? axes.size() : 0));
    std::vector<int64_t> dims;
    for (int64_t& a : axes) {
      if (a < -out_rank || a >= out_rank) return fail(i, fmt::format("axis {} is out of range", a));
      if (a < 0) a += out_rank;
    }
    auto listed = [&](int64_t a) { return std::find(axes.begin(), axes.end(), a) != axes.end(); };
    for (int64_t a = 0, k = 0; a < out_rank; ++a) {
      if (unsqueeze && listed(a)) {
        dims.push_back(1);
      } else if (!unsqueeze && (given ? listed(a) : full[size_t(a)] == 1)) {
        if (full[size_t(a)] != 1) {
          return fail(i, fmt::format("axis {} has size {}, not 1", a, full[size_t(a)]));
        }
      } else {
        dims.push_back(full[size_t(unsqueeze ? k : a)]);
      }
      if (unsqueeze && !listed(a)) ++k;
    }
    if (is_constant(in)) {
      const Constant& c = constants_.at(in);
      return reshape_move(i, MoveOperand{nullptr, &c, c.dims}, dims);
    }
    if (dims.empty()) return fail(i, "the result would be a scalar");
    const Value* x = activation(i, 0);
    if (x) reshape_value(i, *x, dims);
    return;
  }
  const Value* x = activation(i, 0);
  if (!x) return;
  if (!read_axes(i, 13, axes, given)) return;
  const int64_t rank = static_cast<int64_t>(x->dims.size()) + 1;
  if (unsqueeze && !given) return fail(i, "axes are required");
  if (!given) {
    for (int64_t a = 1; a < rank; ++a) {
      if (x->dims[static_cast<size_t>(a - 1)] == 1) axes.push_back(a);
    }
  }
  const int64_t out_rank = unsqueeze ? rank + static_cast<int64_t>(axes.size()) : rank;
  for (int64_t a : axes) {
    if (a == 0 || a == -out_rank) {
      return batch_axis_needed(i, fmt::format("axes {}: {} axis 0", dims_text(axes),
                                              unsqueeze ? "unsqueezing" : "squeezing"));
    }
  }
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
