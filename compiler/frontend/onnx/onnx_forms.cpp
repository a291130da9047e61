// The two forms of a value in the whole-tensor mode (docs/onnx.md "Rank mapping"): there every
// ONNX tensor is whole (its sample is the whole ONNX shape, in ONNX order), except around the
// operators that need a feature map with a batch (Conv, ConvTranspose, the pools), which read a
// batch of one, channels last. Elementwise operators keep the form of their operands, so a chain
// conv -> batch norm -> activation -> conv stays channels last; every other operator reads the
// whole form. A change of form is a layout move (a feature map) or a free reshape.
// With a batch B above 1, Conv and the pools read the map (B, C, S...) as one a spatial axis
// deeper, [C, B, S...] channels first, with a window of 1 along B (Value::batch_in_depth): the
// IR's [B, S..., C] is then B channels-last maps one after the other, and a 3-D window of depth
// 1, stride 1, no padding on B computes each sample's 2-D result.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <set>
#include <utility>

#include "compiler/frontend/onnx/onnx_importer.hpp"
#include "compiler/frontend/onnx/onnx_tensor.hpp"

namespace npusim::onnx_frontend {

namespace {

enum class Form { kFeatureMap, kElementwise, kWhole };

Form form_of(const std::string& op) {
  static const std::set<std::string> feature_map = {
      "Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"};
  static const std::set<std::string> elementwise = {
      "Relu",       "Clip", "Sigmoid", "Tanh",     "HardSwish", "HardSigmoid",        "Sqrt",
      "Reciprocal", "Pow",  "Neg",     "Gelu",     "Erf",       "BatchNormalization", "Add",
      "Sub",        "Mul",  "Div",     "Identity", "Dropout"};
  if (feature_map.count(op)) return Form::kFeatureMap;
  if (elementwise.count(op)) return Form::kElementwise;
  return Form::kWhole;
}

}  // namespace

void OnnxImporter::add_free_reshape(const std::string& source, const std::string& out,
                                    const std::vector<int>& dims, const std::string& where) {
  std::string name = out;
  for (int k = 1; layer_names_.count(name); ++k) name = fmt::format("{}_{}", out, k);
  layer_names_.insert(name);
  Layer l;
  l.name = name;
  l.kind = OpKind::kReshape;
  l.inputs = {source};
  l.output = out;
  l.reshape_to = dims;
  graph_.layers.push_back(std::move(l));
  where_of_layer_.push_back(where);
}

// A fresh IR tensor name derived from `base`.
std::string OnnxImporter::fresh_name(const std::string& base) {
  std::string name = base;
  for (int k = 1; values_.count(name) || constants_.count(name) || layer_names_.count(name); ++k) {
    name = fmt::format("{}_{}", base, k);
  }
  return name;
}

void OnnxImporter::to_whole_form(int i, const std::string& name) {
  const Value v = values_.at(name);
  if (!v.batched) return;
  Value w;
  w.batched = false;
  w.dims = v.dims;
  w.dims.insert(w.dims.begin(), 1);
  w.ir_name = fresh_name(v.ir_name + "_whole");
  if (v.batch_in_depth) {
    w.dims = v.dims;
    std::swap(w.dims[0], w.dims[1]);
    add_move_between(v, w, w.ir_name, where(i));
  } else if (v.channels_first || !v.flat_from.empty()) {
    add_relayout(v, false, w.ir_name, where(i));
  } else {
    std::vector<int> dims = ir_dims(v);
    dims.insert(dims.begin(), 1);
    add_free_reshape(v.ir_name, w.ir_name, dims, where(i));
  }
  w.layer = static_cast<int>(graph_.layers.size()) - 1;
  values_[name] = std::move(w);
}

bool OnnxImporter::to_batched_form(int i, const std::string& name, bool batch_in_depth_allowed) {
  const Value v = values_.at(name);
  if (v.batched) return true;
  if (batch_in_depth_allowed && (v.dims.size() == 3 || v.dims.size() == 4) && v.dims[0] > 1) {
    to_depth_form(i, name);
    return true;
  }
  if (v.dims.size() < 3 || v.dims.size() > 5 || v.dims[0] != 1) {
    fail(i, fmt::format("in the whole-tensor form (docs/onnx.md \"Rank mapping\") a feature map "
                        "must be {}; input '{}' is {}",
                        batch_in_depth_allowed ? "(B, C, L), (B, C, H, W) or (1, C, D, H, W)"
                                               : "(1, C, L), (1, C, H, W) or (1, C, D, H, W)",
                        name, dims_text(v.dims)));
    return false;
  }
  // The same IR bytes as a batched value in ONNX order.
  Value same = v;
  same.batched = true;
  same.dims.erase(same.dims.begin());
  Value b = same;
  b.ir_name = fresh_name(v.ir_name + "_batched");
  if (b.dims.size() >= 3) {
    add_relayout(same, true, b.ir_name, where(i));
    b.channels_first = true;
  } else {
    add_free_reshape(v.ir_name, b.ir_name, ir_dims(b), where(i));
  }
  b.layer = static_cast<int>(graph_.layers.size()) - 1;
  values_[name] = std::move(b);
  return true;
}

namespace {

// Element (b, c, p) of the whole map [B, C, P] is element (c, b, p) of its batch-in-depth form
// [C, B, P]: the ONNX flat index of the one for each ONNX flat index of the other (either way).
int64_t swap_first_axes(int64_t f, int64_t first, int64_t second, int64_t inner) {
  const int64_t p = f % inner, ab = f / inner;
  return ((ab % second) * first + ab / second) * inner + p;
}

}  // namespace

void OnnxImporter::to_depth_form(int i, const std::string& name) {
  const Value v = values_.at(name);
  Value d;
  d.batched = true;
  d.batch_in_depth = true;
  d.channels_first = true;
  d.dims = v.dims;
  std::swap(d.dims[0], d.dims[1]);
  d.ir_name = fresh_name(v.ir_name + "_batch_in_depth");
  add_move_between(v, d, d.ir_name, where(i));
  d.layer = static_cast<int>(graph_.layers.size()) - 1;
  values_[name] = std::move(d);
}

// A layout move from `from` to `to`, one of them whole (B, C, S...) and the other its
// batch-in-depth form [C, B, S...].
void OnnxImporter::add_move_between(const Value& from, const Value& to, const std::string& name,
                                    const std::string& where) {
  const std::vector<int64_t> src = ir_elements(from), dst = ir_elements(to);
  const int64_t inner = product(from.dims, 2);
  Layer l;
  l.name = name;
  for (int k = 1; layer_names_.count(l.name); ++k) l.name = fmt::format("{}_{}", name, k);
  layer_names_.insert(l.name);
  l.kind = OpKind::kMove;
  l.inputs = {from.ir_name};
  l.output = name;
  l.reshape_to = ir_dims(to);
  std::vector<MoveSource> table(src.size());
  for (size_t f = 0; f < src.size(); ++f) {
    const int64_t g = swap_first_axes(int64_t(f), from.dims[0], from.dims[1], inner);
    table[size_t(dst[size_t(g)])] = MoveSource{0, int32_t(src[f])};
  }
  l.move_from = MoveTable(table);
  l.move_op = "layout";
  graph_.layers.push_back(std::move(l));
  where_of_layer_.push_back(where);
}

const Value* OnnxImporter::in_onnx_order(int i, const Value* x) {
  if (!x || !x->channels_first) return x;
  const std::string name = x->ir_name + "_onnx_order";
  if (!values_.count(name)) {
    Value o = *x;
    o.channels_first = false;
    add_relayout(*x, false, name, where(i));
    o.ir_name = name;
    o.layer = static_cast<int>(graph_.layers.size()) - 1;
    values_[name] = std::move(o);
  }
  return &values_.at(name);
}

// Whole-tensor mode: brings node i's run-time operands into the form its operator reads and sets
// the form of its results (node_batched_); false after reporting.
bool OnnxImporter::choose_form(int i) {
  const Node& n = g_.node(i);
  std::vector<std::string> operands;
  for (const auto& in : n.input()) {
    if (!in.empty() && values_.count(in)) operands.push_back(in);
  }
  const Form form = form_of(n.op_type());
  bool batched = form == Form::kFeatureMap;
  bool in_depth = false;
  if (form == Form::kElementwise) {
    batched = !operands.empty();
    for (const auto& in : operands) batched = batched && values_.at(in).batched;
    if (batched) in_depth = elementwise_in_depth(i, operands);
    // A batch-in-depth map beside a value of another form, or with a constant that is not one
    // value (per channel for a batch norm): the whole form, where broadcasting is ONNX's.
    for (const auto& in : operands) {
      if (values_.at(in).batch_in_depth != in_depth) batched = false;
    }
  }
  node_batched_ = batched;
  node_in_depth_ = false;
  if (batched && form == Form::kFeatureMap) {
    if (operands.empty()) return true;
    if (!to_batched_form(i, n.input(0), n.op_type() != "ConvTranspose")) return false;
    node_in_depth_ = values_.at(n.input(0)).batch_in_depth;
    return true;
  }
  node_in_depth_ = batched && in_depth;
  if (!batched) {
    for (const auto& in : operands) to_whole_form(i, in);
  }
  return true;
}

// An elementwise node on batch-in-depth maps keeps that form when its run-time operands all have
// it with one shape and its constants are single values (a batch norm's are per channel).
bool OnnxImporter::elementwise_in_depth(int i, const std::vector<std::string>& operands) {
  const Node& n = g_.node(i);
  const Value& first = values_.at(operands[0]);
  if (!first.batch_in_depth) return false;
  for (const auto& in : operands) {
    if (values_.at(in).dims != first.dims) return false;
  }
  if (n.op_type() == "BatchNormalization") return true;
  for (const auto& in : n.input()) {
    if (in.empty() || values_.count(in)) continue;
    auto c = constants_.find(in);
    if (c == constants_.end() || c->second.elements() != 1) return false;
  }
  return true;
}

}  // namespace npusim::onnx_frontend
