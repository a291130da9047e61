// ONNX translators of elementwise operators: Add, Mul, Sub, Div, activations and Clip.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "compiler/frontend/onnx/onnx_importer.hpp"

namespace npusim::onnx_frontend {

void OnnxImporter::import_binary(int i, OpKind kind) {
  const Node& n = g_.node(i);
  if (n.input_size() != 2) return fail(i, fmt::format("expects 2 inputs, got {}", n.input_size()));
  const bool c0 = is_constant(n.input(0)), c1 = is_constant(n.input(1));
  if (c0 && c1) {
    return fail(i, "both operands are constants (constant folding is not supported)");
  }
  if (c0 || c1) {
    const Value* x = activation(i, c0 ? 1 : 0);
    if (!x) return;
    const Constant& c = constants_.at(n.input(c0 ? 0 : 1));
    if (fold_constant(i, *x, c, kind)) return;
    return import_binary_constant(i, *x, c, c0, kind == OpKind::kAdd ? '+' : '*');
  }
  const Value* a = activation(i, 0);
  const Value* b = activation(i, 1);
  if (!a || !b) return;
  if (a->dims != b->dims) {
    // numpy broadcasting of two run-time tensors: the smaller is expanded by a move first (a
    // squeeze-and-excitation gate [N, C, 1, 1] times its map [N, C, H, W]).
    const int smaller = broadcast_operand(i, *a, *b);
    if (smaller < 0) return;
    const Value* big = smaller == 0 ? b : a;
    const std::string expanded = expand_value(i, smaller, *big);
    if (expanded.empty()) return;
    a = smaller == 0 ? &values_.at(expanded) : &values_.at(n.input(0));
    b = smaller == 1 ? &values_.at(expanded) : &values_.at(n.input(1));
  }
  if (a->dims != b->dims || a->channels_first != b->channels_first) {
    return fail(i, fmt::format("operands [N, {}] and [N, {}] must have the same shape and layout",
                               fmt::join(a->dims, ", "), fmt::join(b->dims, ", ")));
  }
  if (a->flat_from != b->flat_from) {
    return fail(i,
                "one operand is a flattened feature map and the other is not: their element "
                "orders differ in npusim (H, W, C) and cannot be combined");
  }
  const std::string out = n.output(0);
  Value v = *a;
  add_layer(i, kind, {a->ir_name, b->ir_name}, out);
  set_value(out, std::move(v));
}

// Sub and Div: an activation and a constant (x - c, c - x, x / c, c / x), and Sub of two
// activations of the same shape; Div of two activations is not supported (the IR has no divide).
void OnnxImporter::import_sub_div(int i, char op) {
  const Node& n = g_.node(i);
  if (n.input_size() != 2) return fail(i, fmt::format("expects 2 inputs, got {}", n.input_size()));
  const bool c0 = is_constant(n.input(0)), c1 = is_constant(n.input(1));
  if (c0 && c1) return fail(i, "both operands are constants (constant folding is not supported)");
  if (!c0 && !c1 && op == '-') return import_sub_tensors(i);
  if (!c0 && !c1) {
    return fail(i, "both operands are run-time tensors; npusim divides by a constant only");
  }
  const Value* x = activation(i, c0 ? 1 : 0);
  if (!x) return;
  const Constant& c = constants_.at(n.input(c0 ? 0 : 1));
  if (c0 && op == '/') {
    // c / x = c * (1 / x): a reciprocal table activation, then the constant's scale (none for 1).
    const std::string out = n.output(0);
    const bool ones = !c.is_int && std::all_of(c.values.begin(), c.values.end(),
                                               [](float v) { return v == 1.0f; });
    const std::string inverse = ones ? out : out + "_reciprocal";
    Value v = *x;
    add_layer(i, OpKind::kActivation, {x->ir_name}, inverse).activation = Activation::kReciprocal;
    set_value(inverse, v);
    if (!ones) import_binary_constant(i, values_.at(inverse), c, false, '*');
    return;
  }
  if (!c0 && !c.is_int) {
    // x - c = x + (-c) and x / c = x * (1 / c) fold into a producing Conv / Gemm / MatMul.
    Constant inverse = c;
    for (float& v : inverse.values) v = op == '-' ? -v : 1.0f / v;
    const bool finite = std::all_of(inverse.values.begin(), inverse.values.end(),
                                    [](float v) { return std::isfinite(v); });
    if (finite && fold_constant(i, *x, inverse, op == '-' ? OpKind::kAdd : OpKind::kMul)) return;
  }
  import_binary_constant(i, *x, c, c0, op);
}

// a - b of two run-time tensors of the same shape: a + (-1 * b), the negation a depthwise 1x1
// conv (onnx_affine.cpp) and the sum the IR's add.
void OnnxImporter::import_sub_tensors(int i) {
  const Node& n = g_.node(i);
  const Value* a = activation(i, 0);
  const Value* b = activation(i, 1);
  if (!a || !b) return;
  if (a->dims != b->dims || a->channels_first != b->channels_first ||
      a->flat_from != b->flat_from) {
    return fail(i, fmt::format("operands {} and {} must have the same shape and layout (npusim "
                               "does not broadcast two run-time tensors)",
                               dims_text(a->dims), dims_text(b->dims)));
  }
  const std::string negated = n.output(0) + "_negated";
  const size_t elements = static_cast<size_t>(product(b->dims));
  const Value a_copy = *a;
  import_affine(i, *b, std::vector<float>(elements, -1.0f), std::vector<float>(elements, 0.0f),
                negated);
  auto it = values_.find(negated);
  if (it == values_.end()) return;
  const std::string out = n.output(0);
  add_layer(i, OpKind::kAdd, {a_copy.ir_name, it->second.ir_name}, out);
  set_value(out, a_copy);
}

// Which of two run-time operands broadcasts to the other's shape (numpy rules; the result must be
// one of them); -1 after reporting.
int OnnxImporter::broadcast_operand(int i, const Value& a, const Value& b) {
  const auto full = [](const Value& v) {
    std::vector<int64_t> d = v.dims;
    if (v.batched) d.insert(d.begin(), 1);
    return d;
  };
  const std::vector<int64_t> da = full(a), db = full(b);
  const auto fits = [](const std::vector<int64_t>& small, const std::vector<int64_t>& big) {
    if (small.size() > big.size()) return false;
    const size_t off = big.size() - small.size();
    for (size_t k = 0; k < small.size(); ++k) {
      if (small[k] != 1 && small[k] != big[off + k]) return false;
    }
    return true;
  };
  if (fits(db, da)) return 1;
  if (fits(da, db)) return 0;
  fail(i, fmt::format("operands {} and {} do not broadcast to the shape of one of them",
                      dims_text(da), dims_text(db)));
  return -1;
}

// Operand `k` of node i expanded (numpy broadcasting, a move) to the shape of `to`; the name of
// the expanded value, empty after reporting.
std::string OnnxImporter::expand_value(int i, int k, const Value& to, std::string name) {
  std::vector<MoveOperand> ops;
  if (!move_operands(i, ops, k + 1)) return "";
  const MoveOperand x = ops[size_t(k)];
  ops = {x};
  MoveSpec spec;
  spec.dims = to.dims;
  if (to.batched) spec.dims.insert(spec.dims.begin(), 1);
  const size_t off = spec.dims.size() - x.dims.size();
  spec.source = [x, off](const std::vector<int64_t>& out, std::vector<int64_t>& in) {
    for (size_t a = 0; a < x.dims.size(); ++a) in.push_back(x.dims[a] == 1 ? 0 : out[off + a]);
    return 0;
  };
  if (name.empty()) name = g_.node(i).output(0) + "_expanded";
  emit_move(i, name, "expand", ops, spec);
  return values_.count(name) ? name : "";
}

// Expand of a run-time tensor by a constant shape (numpy broadcasting): a move.
void OnnxImporter::import_expand(int i) {
  const Value* x = activation(i, 0);
  if (!x) return;
  const Constant* shape = constant(i, 1, "shape");
  if (!shape) return;
  if (!shape->is_int) return fail(i, "shape must be integers");
  std::vector<int64_t> full = x->dims;
  if (x->batched) full.insert(full.begin(), 1);
  const size_t rank = std::max(full.size(), shape->ints.size());
  std::vector<int64_t> result(rank, 1);
  for (size_t k = 0; k < rank; ++k) {
    const int64_t a = k + full.size() >= rank ? full[k + full.size() - rank] : 1;
    const int64_t b =
        k + shape->ints.size() >= rank ? shape->ints[k + shape->ints.size() - rank] : 1;
    if (a != b && a != 1 && b != 1) {
      return fail(i, fmt::format("shape {} does not broadcast with the input {}",
                                 dims_text(shape->ints), dims_text(full)));
    }
    result[k] = a == 1 ? b : a;
  }
  if (x->batched && (result.size() != full.size() || result[0] != 1)) {
    return batch_axis_needed(
        i, fmt::format("expanding {} to {} changes axis 0", dims_text(full), dims_text(result)));
  }
  if (result == full) return alias(i, *x);
  Value to = *x;
  to.dims.assign(result.begin() + (x->batched ? 1 : 0), result.end());
  expand_value(i, 0, to, g_.node(i).output(0));
}

void OnnxImporter::import_activation(int i, Activation act) {
  const Value* x = activation(i, 0);
  if (!x) return;
  const std::string out = g_.node(i).output(0);
  Value v = *x;
  Layer& l = add_layer(i, OpKind::kActivation, {x->ir_name}, out);
  l.activation = act;
  set_value(out, std::move(v));
}

void OnnxImporter::import_clip(int i) {
  const Value* x = activation(i, 0);
  if (!x) return;
  const Node& n = g_.node(i);
  float bounds[2] = {-std::numeric_limits<float>::infinity(),
                     std::numeric_limits<float>::infinity()};
  for (int k = 1; k <= 2; ++k) {
    const Constant* c = optional_constant(i, k, k == 1 ? "min" : "max");
    if (k < n.input_size() && !n.input(k).empty() && !c) return;
    if (!c) continue;
    if (c->is_int || c->values.size() != 1) {
      return fail(i, fmt::format("{} '{}' must be one float", k == 1 ? "min" : "max", n.input(k)));
    }
    bounds[k - 1] = c->values[0];
  }
  if (std::isinf(bounds[0]) && std::isinf(bounds[1])) return alias(i, *x);
  const std::string out = n.output(0);
  Value v = *x;
  Layer& l = add_layer(i, OpKind::kActivation, {x->ir_name}, out);
  if (bounds[0] == 0.0f && bounds[1] == 6.0f) {
    l.activation = Activation::kRelu6;
  } else if (bounds[0] == 0.0f && std::isinf(bounds[1])) {
    l.activation = Activation::kRelu;
  } else {
    l.activation = Activation::kClip;
    l.clip_min = std::isinf(bounds[0]) ? std::numeric_limits<float>::lowest() : bounds[0];
    l.clip_max = std::isinf(bounds[1]) ? std::numeric_limits<float>::max() : bounds[1];
  }
  set_value(out, std::move(v));
}

// torch's Hardsigmoid (alpha 1/6, beta 0.5) is the table function; other slopes are an affine
// layer then a clip to [0, 1].
void OnnxImporter::import_hard_sigmoid(int i) {
  const Node& n = g_.node(i);
  const float alpha = attr_float(n, "alpha", 0.2f), beta = attr_float(n, "beta", 0.5f);
  if (std::fabs(alpha - 1.0f / 6.0f) < 1e-6f && beta == 0.5f) {
    return import_activation(i, Activation::kHardSigmoid);
  }
  const Value* x = activation(i, 0);
  if (!x) return;
  const size_t elements = static_cast<size_t>(product(x->dims));
  const std::string scaled = n.output(0) + "_scaled";
  import_affine(i, *x, std::vector<float>(elements, alpha), std::vector<float>(elements, beta),
                scaled);
  auto it = values_.find(scaled);
  if (it == values_.end()) return;
  const std::string out = n.output(0);
  Value v = it->second;
  Layer& l = add_layer(i, OpKind::kActivation, {v.ir_name}, out);
  l.activation = Activation::kClip;
  l.clip_min = 0.0f;
  l.clip_max = 1.0f;
  set_value(out, std::move(v));
}

// Pow with a constant scalar exponent: 1 (nothing), 2 and 3 (products of x), 0.5 (sqrt), -0.5
// (1/sqrt), -1 (1/x).
void OnnxImporter::import_pow(int i) {
  const Node& n = g_.node(i);
  const Value* x = activation(i, 0);
  if (!x) return;
  const Constant* e = constant(i, 1, "exponent");
  if (!e) return;
  if (e->elements() != 1) {
    return fail(i, fmt::format("exponent of shape {}: npusim takes one constant exponent",
                               dims_text(e->dims)));
  }
  const double p = e->is_int ? double(e->ints[0]) : double(e->values[0]);
  const std::string out = n.output(0);
  Value v = *x;
  if (p == 1.0) return alias(i, *x);
  if (p == 2.0 || p == 3.0) {
    const std::string square = p == 2.0 ? out : out + "_square";
    add_layer(i, OpKind::kMul, {x->ir_name, x->ir_name}, square);
    set_value(square, v);
    if (p == 3.0) {
      add_layer(i, OpKind::kMul, {values_.at(square).ir_name, v.ir_name}, out);
      set_value(out, v);
    }
    return;
  }
  Activation act;
  if (p == 0.5) {
    act = Activation::kSqrt;
  } else if (p == -0.5) {
    act = Activation::kRsqrt;
  } else if (p == -1.0) {
    act = Activation::kReciprocal;
  } else {
    return fail(i, fmt::format("exponent {} is not supported (1, 2, 3, 0.5, -0.5, -1)", p));
  }
  add_layer(i, OpKind::kActivation, {x->ir_name}, out).activation = act;
  set_value(out, std::move(v));
}

// Where with a constant condition and one run-time branch: x where it is chosen, the other
// (constant, finite) branch elsewhere, as y = x * keep + fill * (1 - keep) (onnx_affine.cpp).
void OnnxImporter::import_where(int i) {
  const Node& n = g_.node(i);
  if (n.input_size() != 3) return fail(i, "expects 3 inputs");
  const Constant* cond = constant(i, 0, "condition");
  if (!cond) return;
  const bool x_first = !is_constant(n.input(1));
  if (!x_first && is_constant(n.input(2))) return;  // all constants: folded before
  if (x_first && !is_constant(n.input(2))) {
    return fail(i, "both branches are run-time tensors; npusim takes one constant branch");
  }
  const Value* x = activation(i, x_first ? 1 : 2);
  if (!x) return;
  const Constant* other = constant(i, x_first ? 2 : 1, "branch");
  if (!other) return;
  Constant c = *cond, f = *other;
  if (c.is_int) {
    for (int64_t b : c.ints) c.values.push_back(float(b != 0));
    c.ints.clear();
    c.is_int = false;
  }
  if (f.is_int) {
    for (int64_t b : f.ints) f.values.push_back(float(b));
    f.ints.clear();
    f.is_int = false;
  }
  for (float v : f.values) {
    if (!std::isfinite(v)) {
      return fail(i, fmt::format("the constant branch '{}' holds {}: an infinite fill (a masked "
                                 "fill with -inf before a softmax) is not supported",
                                 n.input(x_first ? 2 : 1), v));
    }
  }
  std::vector<float> keep, fill;
  if (auto p = broadcast_to(*x, c, keep); !p.empty()) return fail(i, "condition: " + p);
  if (auto p = broadcast_to(*x, f, fill); !p.empty()) return fail(i, "branch: " + p);
  std::vector<float> scale(keep.size()), shift(keep.size());
  for (size_t e = 0; e < keep.size(); ++e) {
    const bool take_x = (keep[e] != 0.0f) == x_first;
    scale[e] = take_x ? 1.0f : 0.0f;
    shift[e] = take_x ? 0.0f : fill[e];
  }
  import_affine(i, *x, std::move(scale), std::move(shift));
}

// Neg: a depthwise 1x1 conv with weight -1 (onnx_affine.cpp).
void OnnxImporter::import_neg(int i) {
  const Value* x = activation(i, 0);
  if (!x) return;
  const size_t elements = static_cast<size_t>(product(x->dims));
  import_affine(i, *x, std::vector<float>(elements, -1.0f), std::vector<float>(elements, 0.0f));
}

// The erf form ("none") or the tanh approximation ("tanh", opset 20; torch 2.x writes it for
// F.gelu(approximate="tanh"), Hugging Face's GPT-2 for its "gelu_new").
void OnnxImporter::import_gelu(int i) {
  const std::string form = attr_string(g_.node(i), "approximate", "none");
  if (form != "none" && form != "tanh") {
    return fail(i, fmt::format("approximate '{}', expected 'none' (erf) or 'tanh'", form));
  }
  import_activation(i, form == "tanh" ? Activation::kGeluTanh : Activation::kGelu);
}

}  // namespace npusim::onnx_frontend
