// The two forms of a value in the whole-tensor mode (docs/onnx.md "Rank mapping"): there every
// ONNX tensor is whole (its sample is the whole ONNX shape, in ONNX order), except around the
// operators that need a feature map with a batch (Conv, ConvTranspose, the pools), which read a
// batch of one, channels last. Elementwise operators keep the form of their operands, so a chain
// conv -> batch norm -> activation -> conv stays channels last; every other operator reads the
// whole form. A change of form is a layout move (a feature map) or a free reshape.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <set>

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
  if (v.channels_first || !v.flat_from.empty()) {
    add_relayout(v, false, w.ir_name, where(i));
  } else {
    std::vector<int> dims = ir_dims(v);
    dims.insert(dims.begin(), 1);
    add_free_reshape(v.ir_name, w.ir_name, dims, where(i));
  }
  w.layer = static_cast<int>(graph_.layers.size()) - 1;
  values_[name] = std::move(w);
}

bool OnnxImporter::to_batched_form(int i, const std::string& name) {
  const Value v = values_.at(name);
  if (v.batched) return true;
  if (v.dims.size() < 3 || v.dims.size() > 5 || v.dims[0] != 1) {
    fail(i, fmt::format("in the whole-tensor form (docs/onnx.md \"Rank mapping\") a feature map "
                        "must be (1, C, L), (1, C, H, W) or (1, C, D, H, W); input '{}' is {}",
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
  if (form == Form::kElementwise) {
    batched = !operands.empty();
    for (const auto& in : operands) batched = batched && values_.at(in).batched;
  }
  node_batched_ = batched;
  if (batched && form == Form::kFeatureMap) {
    return operands.empty() || to_batched_form(i, n.input(0));
  }
  if (!batched) {
    for (const auto& in : operands) to_whole_form(i, in);
  }
  return true;
}

}  // namespace npusim::onnx_frontend
