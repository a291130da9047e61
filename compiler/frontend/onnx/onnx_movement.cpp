// The data-movement core of the ONNX importer: operands, the evaluation of an operator's index
// map into an IR `move` layer or a folded constant, and the translators of Transpose, Pad and
// Concat other than along the channel axis. A zero Pad before a Conv and a Transpose of a
// MatMul's second input fold into them in compiler/passes/move_folding.cpp.
#include "compiler/frontend/onnx/onnx_movement.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "compiler/frontend/onnx/onnx_importer.hpp"
#include "support/error.hpp"

namespace npusim::onnx_frontend {

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t a = dims.size(); a-- > 1;) s[a - 1] = s[a] * dims[a];
  return s;
}

MoveSpec transpose_spec(const std::vector<int64_t>& dims, const std::vector<int64_t>& perm) {
  MoveSpec spec;
  for (int64_t p : perm) spec.dims.push_back(dims[size_t(p)]);
  spec.source = [perm](const std::vector<int64_t>& out, std::vector<int64_t>& in) {
    in.assign(out.size(), 0);
    for (size_t a = 0; a < out.size(); ++a) in[size_t(perm[a])] = out[a];
    return 0;
  };
  return spec;
}

// A channels-first map [C, S...] (or its flattening) holds ONNX element c * S + s at IR element
// s * C + c; any other tensor keeps ONNX's order.
std::vector<int64_t> ir_elements(const Value& v) {
  const int64_t n = product(v.dims);
  int64_t c = 1;
  if (v.channels_first) c = v.dims[0];
  if (!v.flat_from.empty()) c = v.flat_from[0];
  const int64_t s = c == 0 ? 0 : n / c;
  std::vector<int64_t> map(static_cast<size_t>(n));
  for (int64_t f = 0; f < n; ++f) map[static_cast<size_t>(f)] = (f % s) * c + f / s;
  return map;
}

bool OnnxImporter::move_operands(int i, std::vector<MoveOperand>& ops, int count) {
  const Node& n = g_.node(i);
  const int end = count < 0 ? n.input_size() : std::min(count, n.input_size());
  for (int k = 0; k < end; ++k) {
    MoveOperand op;
    if (is_constant(n.input(k))) {
      op.constant = &constants_.at(n.input(k));
      op.dims = op.constant->dims;
    } else {
      op.value = activation(i, k);
      if (!op.value) return false;
      op.dims = op.value->dims;
      if (op.value->batched) op.dims.insert(op.dims.begin(), 1);
    }
    ops.push_back(op);
  }
  per_sample_constants(i, ops);
  return true;
}

// With a symbolic batch, exporters expand a per-sample constant to the batch by shape arithmetic
// (torch 2.x writes ViT's class token as Expand(token, [Shape(x)[0], 1, hidden])); folded at
// import with the run's batch, it is a constant of `batch` equal slices along axis 0. Beside a
// batched run-time operand such a constant is the same for every sample: its first slice is used.
// Constants that really differ along axis 0 stay as they are (the operator then needs axis 0).
void OnnxImporter::per_sample_constants(int i, std::vector<MoveOperand>& ops) {
  const auto batched = std::find_if(ops.begin(), ops.end(), [](const MoveOperand& o) {
    return o.value != nullptr && o.value->batched;
  });
  if (batched == ops.end() || graph_.batch <= 1) return;
  for (size_t k = 0; k < ops.size(); ++k) {
    MoveOperand& o = ops[k];
    if (!o.constant || o.dims.size() != batched->dims.size() || o.dims.empty() ||
        o.dims[0] != graph_.batch) {
      continue;
    }
    const Constant& c = *o.constant;
    const uint64_t slice = c.elements() / uint64_t(c.dims[0]);
    bool same = true;
    for (uint64_t e = slice; e < c.elements() && same; ++e) {
      same = c.is_int ? c.ints[e] == c.ints[e % slice] : c.values[e] == c.values[e % slice];
    }
    if (!same) continue;
    const std::string name = g_.node(i).input(int(k)) + "/per_sample";
    if (!constants_.count(name)) {
      Constant one;
      one.dims = c.dims;
      one.dims[0] = 1;
      one.is_int = c.is_int;
      if (c.is_int) {
        one.ints.assign(c.ints.begin(), c.ints.begin() + int64_t(slice));
      } else {
        one.values.assign(c.values.begin(), c.values.begin() + int64_t(slice));
      }
      constants_[name] = std::move(one);
    }
    o.constant = &constants_.at(name);
    o.dims = o.constant->dims;
  }
}

void OnnxImporter::emit_move(int i, const std::string& out, const char* op,
                             const std::vector<MoveOperand>& ops, const MoveSpec& spec) {
  const bool constant = std::all_of(ops.begin(), ops.end(),
                                    [](const MoveOperand& o) { return o.constant != nullptr; });
  // At most 2^24 elements: the importer maps every element (found by fuzzing: a huge result
  // asked for gigabytes; tests/fuzz/corpus/onnx).
  constexpr int64_t kMaxMoveElements = int64_t(1) << 24;
  int64_t n = 1;
  const bool empty =
      std::any_of(spec.dims.begin(), spec.dims.end(), [](int64_t d) { return d == 0; });
  if (constant && empty) {
    // An empty constant (index arithmetic of swin_t's shifted-window mask slices one); it
    // takes part in later folds (a Concat) only.
    Constant c;
    c.dims = spec.dims;
    c.is_int = std::all_of(ops.begin(), ops.end(),
                           [](const MoveOperand& o) { return o.constant->is_int; });
    constants_[out] = std::move(c);
    return;
  }
  for (int64_t d : spec.dims) {
    if (d <= 0) return fail(i, fmt::format("the result {} is empty", dims_text(spec.dims)));
    if (n > kMaxMoveElements / d) {
      return fail(i, fmt::format("the result {} has more than {} elements", dims_text(spec.dims),
                                 kMaxMoveElements));
    }
    n *= d;
  }
  // The source of every output element in ONNX order: operand and flat index, -1: the pad.
  std::vector<std::pair<int, int64_t>> from(static_cast<size_t>(n));
  std::vector<std::vector<int64_t>> strides;
  for (const auto& o : ops) strides.push_back(row_major_strides(o.dims));
  std::vector<int64_t> at(spec.dims.size(), 0), in;
  for (int64_t f = 0; f < n; ++f) {
    in.clear();
    const int k = spec.source(at, in);
    int64_t flat = 0;
    if (k >= 0) {
      const auto& d = ops[static_cast<size_t>(k)].dims;
      for (size_t a = 0; a < in.size(); ++a) {
        NPUSIM_CHECK(in[a] >= 0 && in[a] < d[a], "{}: source coordinate {} outside {}", where(i),
                     in[a], dims_text(d));
        flat += in[a] * strides[static_cast<size_t>(k)][a];
      }
    }
    from[static_cast<size_t>(f)] = {k, flat};
    for (size_t a = at.size(); a-- > 0;) {
      if (++at[a] < spec.dims[a]) break;
      at[a] = 0;
    }
  }
  if (constant) {
    Constant c;
    c.dims = spec.dims;
    c.is_int = std::all_of(ops.begin(), ops.end(),
                           [](const MoveOperand& o) { return o.constant->is_int; });
    for (const auto& [k, flat] : from) {
      const Constant* src = k < 0 ? nullptr : ops[static_cast<size_t>(k)].constant;
      if (c.is_int) {
        c.ints.push_back(src ? src->ints[static_cast<size_t>(flat)] : int64_t(spec.pad));
      } else {
        c.values.push_back(!src          ? spec.pad
                           : src->is_int ? float(src->ints[static_cast<size_t>(flat)])
                                         : src->values[static_cast<size_t>(flat)]);
      }
    }
    constants_[out] = std::move(c);
    return;
  }
  // docs/onnx.md "Rank mapping": batched run-time operands have the batch as axis 0.
  const bool batched = std::any_of(
      ops.begin(), ops.end(), [](const MoveOperand& o) { return o.value && o.value->batched; });
  if (batched && spec.dims.size() < 2) {
    return fail(i, "the result would have no dimension besides the batch");
  }
  if (spec.dims.empty()) return fail(i, "the result would be a scalar");
  Value v;
  v.batched = batched;
  v.dims.assign(spec.dims.begin() + (batched ? 1 : 0), spec.dims.end());
  // Feature maps stay channels first (and channels last in the IR) when they come from one.
  const bool map_rank = batched && (v.dims.size() == 3 || v.dims.size() == 4);
  const bool from_map = std::any_of(ops.begin(), ops.end(), [](const MoveOperand& o) {
    return o.value && (o.value->channels_first || !o.value->flat_from.empty());
  });
  // Run-time operands become the layer's inputs; constant operands and the pad value its
  // constants (a run-time tensor's batch is the same for every sample, so a constant must not
  // vary along it).
  std::vector<std::string> inputs;
  std::vector<std::vector<int64_t>> in_ir;
  std::vector<int32_t> input_of, constants_at;
  std::vector<float> constants{spec.pad};
  for (const auto& o : ops) {
    input_of.push_back(o.value ? int32_t(inputs.size()) : -1);
    constants_at.push_back(int32_t(constants.size()));
    in_ir.push_back(o.value ? ir_elements(*o.value) : std::vector<int64_t>{});
    if (o.value) {
      inputs.push_back(o.value->ir_name);
      continue;
    }
    if (batched && (o.dims.empty() || o.dims[0] != 1)) {
      return batch_axis_needed(
          i, fmt::format("constant operand {} varies along axis 0", dims_text(o.dims)));
    }
    for (uint64_t e = 0; e < o.constant->elements(); ++e) {
      constants.push_back(o.constant->is_int ? float(o.constant->ints[e]) : o.constant->values[e]);
    }
  }
  bool uses_constants = false;
  auto table = [&](const Value& layout) {
    const std::vector<int64_t> out_ir = ir_elements(layout);
    std::vector<MoveSource> t(static_cast<size_t>(n));
    for (size_t f = 0; f < from.size(); ++f) {
      const auto [k, flat] = from[f];
      MoveSource s{-1, 0};
      if (k >= 0 && ops[size_t(k)].value) {
        s = {input_of[size_t(k)], int32_t(in_ir[size_t(k)][size_t(flat)])};
      } else if (k >= 0) {
        s.element = constants_at[size_t(k)] + int32_t(flat);
      }
      uses_constants = uses_constants || s.input < 0;
      t[static_cast<size_t>(out_ir[f])] = s;
    }
    return t;
  };
  auto keeps_order = [&](const std::vector<MoveSource>& t) {
    if (ops.size() != 1 || uses_constants || product(ops[0].dims) != n) return false;
    for (size_t j = 0; j < t.size(); ++j) {
      if (t[j].input != 0 || t[j].element != int32_t(j)) return false;
    }
    return true;
  };
  std::vector<bool> layouts{map_rank && from_map};
  layouts.push_back(!layouts[0] && map_rank);  // the other candidate, if allowed
  if (!map_rank) layouts.pop_back();
  std::vector<MoveSource> chosen;
  for (bool cf : layouts) {
    v.channels_first = cf;
    std::vector<MoveSource> t = table(v);
    if (keeps_order(t)) {
      add_layer(i, OpKind::kReshape, {ops[0].value->ir_name}, out).reshape_to = ir_dims(v);
      return set_value(out, std::move(v));
    }
    if (chosen.empty()) chosen = std::move(t);
  }
  v.channels_first = layouts[0];
  Layer& l = add_layer(i, OpKind::kMove, std::move(inputs), out);
  l.reshape_to = ir_dims(v);
  l.move_from = MoveTable(chosen);
  if (uses_constants) l.move_constants = std::move(constants);
  l.move_op = op;
  set_value(out, std::move(v));
}

void OnnxImporter::add_relayout(const Value& v, bool channels_first, const std::string& name,
                                const std::string& where) {
  std::string source = v.ir_name;
  if (source == name) {  // the graph output's name moves to the relaid tensor
    source = name + "_ir_order";
    for (auto& l : graph_.layers) {
      if (l.output == name) l.output = source;
      for (auto& in : l.inputs) {
        if (in == name) in = source;
      }
    }
  }
  Value to;
  to.batched = v.batched;
  to.dims = v.dims;
  to.channels_first = channels_first;
  const std::vector<int64_t> from = ir_elements(v), at = ir_elements(to);
  Layer l;
  l.name = name;
  for (int k = 1; layer_names_.count(l.name); ++k) l.name = fmt::format("{}_{}", name, k);
  layer_names_.insert(l.name);
  l.kind = OpKind::kMove;
  l.inputs = {source};
  l.output = name;
  l.reshape_to = ir_dims(to);
  std::vector<MoveSource> table(from.size());
  for (size_t f = 0; f < from.size(); ++f) table[size_t(at[f])] = MoveSource{0, int32_t(from[f])};
  l.move_from = MoveTable(table);
  l.move_op = "layout";
  graph_.layers.push_back(std::move(l));
  where_of_layer_.push_back(where);
}

// A reshape that changes the IR's element order (or of a constant): ONNX flat index f of the
// output is flat index f of the input.
void OnnxImporter::reshape_move(int i, const MoveOperand& x, const std::vector<int64_t>& dims) {
  MoveSpec spec;
  spec.dims = dims;
  const auto out_strides = row_major_strides(dims);
  const auto in_strides = row_major_strides(x.dims);
  spec.source = [=](const std::vector<int64_t>& out, std::vector<int64_t>& in) {
    int64_t flat = 0;
    for (size_t a = 0; a < out.size(); ++a) flat += out[a] * out_strides[a];
    for (int64_t s : in_strides) {
      in.push_back(flat / s);
      flat %= s;
    }
    return 0;
  };
  emit_move(i, g_.node(i).output(0), "reshape", {x}, spec);
}

void OnnxImporter::import_transpose(int i) {
  const Node& n = g_.node(i);
  std::vector<MoveOperand> ops;
  if (!move_operands(i, ops, 1)) return;
  const size_t rank = ops[0].dims.size();
  std::vector<int64_t> reverse(rank);
  for (size_t a = 0; a < rank; ++a) reverse[a] = static_cast<int64_t>(rank - 1 - a);
  const std::vector<int64_t> perm = attr_ints(n, "perm", reverse);
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (size_t a = 0; a < sorted.size(); ++a) {
    if (sorted.size() != rank || sorted[a] != int64_t(a)) {
      return fail(
          i, fmt::format("perm {} is not a permutation of the {} axes", dims_text(perm), rank));
    }
  }
  if (ops[0].value && ops[0].value->batched && perm[0] != 0) {
    return batch_axis_needed(i, fmt::format("perm {} moves axis 0", dims_text(perm)));
  }
  emit_move(i, n.output(0), "transpose", ops, transpose_spec(ops[0].dims, perm));
}

// Pad in every mode: constant (any value), edge and reflect; negative pads crop.
void OnnxImporter::import_pad(int i) {
  const Node& n = g_.node(i);
  std::vector<MoveOperand> ops;
  if (!move_operands(i, ops, 1)) return;
  const std::string mode = attr_string(n, "mode", "constant");
  if (mode != "constant" && mode != "edge" && mode != "reflect") {
    return fail(i, fmt::format("mode '{}', expected constant, edge or reflect", mode));
  }
  const Constant* pads = constant(i, 1, "pads");
  if (!pads) return;
  const std::vector<int64_t>& x = ops[0].dims;
  const size_t rank = x.size();
  std::vector<int64_t> axes(rank);
  for (size_t a = 0; a < rank; ++a) axes[a] = int64_t(a);
  if (n.input_size() > 3 && !n.input(3).empty()) {
    const Constant* c = constant(i, 3, "axes");
    if (!c) return;
    if (!c->is_int) return fail(i, "axes must be integers");
    axes = c->ints;
    for (int64_t& a : axes) {
      if (a < -int64_t(rank) || a >= int64_t(rank)) {
        return fail(i, fmt::format("axis {} is out of range for rank {}", a, rank));
      }
      if (a < 0) a += int64_t(rank);
    }
  }
  if (!pads->is_int || pads->ints.size() != 2 * axes.size()) {
    return fail(i, fmt::format("pads '{}' must be {} integers (begins, then ends, per axis)",
                               n.input(1), 2 * axes.size()));
  }
  // Bounded, or the padded size overflows (found by fuzzing: tests/fuzz/corpus/onnx).
  constexpr int64_t kMaxPad = int64_t(1) << 20;
  if (std::any_of(pads->ints.begin(), pads->ints.end(),
                  [](int64_t v) { return v > kMaxPad || v < -kMaxPad; })) {
    return fail(
        i, fmt::format("pads {}: each at most {} in magnitude", dims_text(pads->ints), kMaxPad));
  }
  std::vector<int64_t> begin(rank, 0), end(rank, 0);
  for (size_t k = 0; k < axes.size(); ++k) {
    begin[size_t(axes[k])] = pads->ints[k];
    end[size_t(axes[k])] = pads->ints[axes.size() + k];
  }
  if (ops[0].value && ops[0].value->batched && (begin[0] != 0 || end[0] != 0)) {
    return batch_axis_needed(i, fmt::format("pads {} pad axis 0", dims_text(pads->ints)));
  }
  MoveSpec spec;
  if (const Constant* value = optional_constant(i, 2, "constant_value")) {
    if (value->elements() != 1) return fail(i, "constant_value must be a scalar");
    spec.pad = value->is_int ? float(value->ints[0]) : value->values[0];
  } else if (n.input_size() > 2 && !n.input(2).empty()) {
    return;
  }
  for (size_t a = 0; a < rank; ++a) {
    spec.dims.push_back(x[a] + begin[a] + end[a]);
    if (spec.dims.back() <= 0)
      return fail(i, fmt::format("pads {} leave axis {} empty", dims_text(pads->ints), a));
    if (mode == "reflect" &&
        (x[a] < 2 ? begin[a] > 0 || end[a] > 0 : begin[a] >= x[a] || end[a] >= x[a])) {
      return fail(i, fmt::format("reflect pads {} must be smaller than the axes they pad",
                                 dims_text(pads->ints)));
    }
    if (mode == "edge" && x[a] == 0) return fail(i, "edge padding of an empty axis");
  }
  spec.source = [=](const std::vector<int64_t>& out, std::vector<int64_t>& in) {
    for (size_t a = 0; a < out.size(); ++a) {
      int64_t c = out[a] - begin[a];
      if (c < 0 || c >= x[a]) {
        if (mode == "constant") return -1;
        if (mode == "edge") c = std::clamp<int64_t>(c, 0, x[a] - 1);
        if (mode == "reflect") c = c < 0 ? -c : 2 * (x[a] - 1) - c;
      }
      in.push_back(c);
    }
    return 0;
  };
  emit_move(i, n.output(0), "pad", ops, spec);
}

void OnnxImporter::import_concat_move(int i) {
  const Node& n = g_.node(i);
  std::vector<MoveOperand> ops;
  if (!move_operands(i, ops)) return;
  const auto* axis_attr = find_attr(n, "axis");
  if (!axis_attr) return fail(i, "attribute 'axis' is required");
  const int64_t rank = int64_t(ops[0].dims.size());
  int64_t axis = axis_attr->i();
  if (axis < -rank || axis >= rank) {
    return fail(i, fmt::format("axis {} is out of range for rank {}", axis, rank));
  }
  if (axis < 0) axis += rank;
  const bool batched = std::any_of(
      ops.begin(), ops.end(), [](const MoveOperand& o) { return o.value && o.value->batched; });
  if (batched && axis == 0) return batch_axis_needed(i, "concatenation along axis 0");
  for (const auto& o : ops) {
    if (batched && o.constant && o.dims.size() == ops[0].dims.size() && o.dims[0] != 1) {
      return batch_axis_needed(
          i, fmt::format("constant operand {} varies along axis 0", dims_text(o.dims)));
    }
  }
  const auto ax = size_t(axis);
  MoveSpec spec;
  spec.dims = ops[0].dims;
  spec.dims[ax] = 0;
  std::vector<int64_t> offsets;
  for (const auto& o : ops) {
    std::vector<int64_t> a = o.dims, b = ops[0].dims;
    if (a.size() == b.size()) a[ax] = b[ax] = 0;
    if (a != b) {
      return fail(i, fmt::format("input {} does not match {} outside the concatenation axis {}",
                                 dims_text(o.dims), dims_text(ops[0].dims), axis));
    }
    offsets.push_back(spec.dims[ax]);
    spec.dims[ax] += o.dims[ax];
  }
  spec.source = [=](const std::vector<int64_t>& out, std::vector<int64_t>& in) {
    const auto k =
        size_t(std::upper_bound(offsets.begin(), offsets.end(), out[ax]) - offsets.begin() - 1);
    in = out;
    in[ax] -= offsets[k];
    return int(k);
  };
  emit_move(i, n.output(0), "concat", ops, spec);
}

}  // namespace npusim::onnx_frontend
