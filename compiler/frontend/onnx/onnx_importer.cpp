#include "compiler/frontend/onnx/onnx_importer.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <utility>

#include "compiler/frontend/onnx/onnx_fold.hpp"
#include "compiler/frontend/onnx/onnx_operators.hpp"
#include "compiler/frontend/onnx_import.hpp"
#include "support/error.hpp"

namespace npusim::onnx_frontend {

std::string OnnxImporter::where(int i) const {
  const Node& n = g_.node(i);
  std::string op = n.domain().empty() || n.domain() == "ai.onnx"
                       ? n.op_type()
                       : fmt::format("{}:{}", n.domain(), n.op_type());
  if (n.name().empty()) return fmt::format("node #{} ({})", i, op);
  return fmt::format("node '{}' ({})", n.name(), op);
}

void OnnxImporter::fail(int i, const std::string& message) {
  diag_.error(where(i), message);
  for (const auto& out : g_.node(i).output()) poisoned_.insert(out);
}

namespace {
// The opset from which an operator's definition (what npusim reads of it) is the same as in
// opset 11, from ONNX's operator changelog (docs/Changelog.md); 0: not listed (opset 11 needed).
int same_since_opset(const std::string& op) {
  static const std::map<std::string, int> since = {
      {"GlobalAveragePool", 1},
      {"GlobalMaxPool", 1},
      {"Identity", 1},
      {"Constant", 1},
      {"Relu", 6},
      {"Sigmoid", 6},
      {"Tanh", 6},
      {"Add", 7},
      {"Mul", 7},
      {"Sub", 7},
      {"Div", 7},
      {"Gemm", 7},
      {"MatMul", 1},
      {"Conv", 1},
      {"BatchNormalization", 9},
      {"Softmax", 1},
      {"Concat", 4},
      {"Reshape", 5},
      {"MaxPool", 10},
      {"AveragePool", 10},
  };
  auto it = since.find(op);
  return it == since.end() ? 0 : it->second;
}
}  // namespace

void OnnxImporter::check_opset() {
  int64_t opset = -1;
  for (const auto& o : model_.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
  }
  if (opset < 0) {
    throw UserError(
        fmt::format("{}: the model imports no version of the default ONNX operator "
                    "set (supported: opset {} to {})",
                    path_, kMinOpset, kMaxOpset));
  }
  opset_ = static_cast<int>(opset);
  if (opset < kMinOpset && opset >= 1) {
    // An older model is read when every operator in it is defined the same way in its opset as
    // in opset 11 (the opset that operator's current definition dates from is in the table).
    std::set<std::string> changed;
    for (const auto& n : g_.node()) {
      const int since = same_since_opset(n.op_type());
      if (since == 0 || since > opset) changed.insert(n.op_type());
    }
    if (changed.empty()) return;
    throw UserError(
        fmt::format("{}: opset {} is not supported for {} (supported: {} to {}, and older opsets "
                    "for operators defined the same way since; convert the model with "
                    "onnx.version_converter)",
                    path_, opset, fmt::join(changed, ", "), kMinOpset, kMaxOpset));
  }
  if (opset < kMinOpset || opset > kMaxOpset) {
    throw UserError(
        fmt::format("{}: opset {} is not supported (supported: {} to {}; convert the "
                    "model with onnx.version_converter)",
                    path_, opset, kMinOpset, kMaxOpset));
  }
}

void OnnxImporter::read_initializers() {
  for (const auto& t : g_.initializer()) {
    Constant c;
    std::string problem = read_tensor(t, c);
    if (!problem.empty()) {
      diag_.error(fmt::format("initializer '{}'", t.name()), problem);
      poisoned_.insert(t.name());
      continue;
    }
    constants_[t.name()] = std::move(c);
  }
}

void OnnxImporter::read_input() {
  std::vector<const onnx::ValueInfoProto*> inputs;
  for (const auto& in : g_.input()) {
    if (!is_constant(in.name()) && !poisoned_.count(in.name())) inputs.push_back(&in);
  }
  if (inputs.size() != 1) {
    std::vector<std::string> names;
    for (const auto* in : inputs) names.push_back("'" + in->name() + "'");
    throw UserErrors(
        {fmt::format("{}: graph inputs: npusim runs graphs with exactly one input "
                     "that is not an initializer; this model has {}{}{}",
                     path_, inputs.size(), inputs.empty() ? "" : ": ", fmt::join(names, ", "))});
  }
  const auto& in = *inputs[0];
  const std::string where = fmt::format("graph input '{}'", in.name());
  if (!in.type().has_tensor_type()) {
    throw UserErrors({fmt::format("{}: {}: not a tensor", path_, where)});
  }
  const auto& tt = in.type().tensor_type();
  graph_.input_ids = tt.elem_type() == onnx::TensorProto_DataType_INT32 ||
                     tt.elem_type() == onnx::TensorProto_DataType_INT64;
  if (graph_.input_ids) {
    check_token_ids(in.name(), where, data_type_name(tt.elem_type()));
  } else if (tt.elem_type() != onnx::TensorProto_DataType_FLOAT) {
    diag_.error(where, fmt::format("element type {}, expected FLOAT (npusim quantizes float "
                                   "inputs to int8)",
                                   data_type_name(tt.elem_type())));
  }
  const int rank = tt.has_shape() ? tt.shape().dim_size() : 0;
  if (rank < 1 || rank > 5) {
    diag_.error(where, fmt::format("rank {}, expected 1 (features), 2 (N, features), 3 (N, rows, "
                                   "features), 4 (N, C, H, W) or 5 (N, C, D, H, W)",
                                   rank));
    diag_.throw_if_errors();
  }
  if (graph_.input_ids && rank != 2) {
    diag_.error(where, fmt::format("token ids of rank {}, expected 2 (batch, sequence)", rank));
    diag_.throw_if_errors();
  }
  if (rank == 1) {
    whole_tensor_ = true;
    if (batch_override_ && *batch_override_ != 1) {
      throw UserErrors(
          {fmt::format("{}: {}: --batch {}: a rank-1 input has no batch axis; the "
                       "model runs as one whole tensor (docs/onnx.md \"Rank "
                       "mapping\")",
                       path_, where, *batch_override_)});
    }
  }
  Value v;
  v.ir_name = in.name();
  v.batched = !whole_tensor_;
  for (int d = 0; d < rank; ++d) {
    const auto& dim = tt.shape().dim(d);
    const bool fixed = dim.has_dim_value() && dim.dim_value() > 0;
    if (d == 0 && !whole_tensor_) {
      file_batch_ = fixed ? dim.dim_value() : 0;
      continue;
    }
    // Whole-tensor mode: the batch the model declares in axis 0 is part of every sample; a
    // symbolic one is the run's batch (--batch, the --input file's axis 0, or 1).
    if (d == 0 && rank > 1) {
      if (!fixed) {
        v.dims.push_back(batch_override_.value_or(1));
        continue;
      }
      if (batch_override_ && *batch_override_ != dim.dim_value()) {
        diag_.error(where, fmt::format("batch {} (--batch or the --input file's axis 0), but the "
                                       "model fixes axis 0 at {} and runs as one whole tensor "
                                       "(docs/onnx.md \"Rank mapping\")",
                                       *batch_override_, dim.dim_value()));
      }
    }
    if (!fixed) {
      diag_.error(where, fmt::format("dimension {} is {}: every dimension but the batch must be a "
                                     "fixed positive size",
                                     d,
                                     dim.has_dim_param() ? "'" + dim.dim_param() + "'"
                                                         : std::string("unknown")));
      v.dims.push_back(1);
      continue;
    }
    v.dims.push_back(dim.dim_value());
  }
  v.channels_first = rank >= 4 && !whole_tensor_;
  diag_.throw_if_errors();
  graph_.input_name = in.name();
  graph_.channels_first_io = true;  // --input and --save-outputs speak ONNX's layout
  graph_.io_without_batch = whole_tensor_;
  if (!v.channels_first) graph_.io_in_onnx_order.insert(in.name());
  graph_.input_shape.dims = ir_dims(v);
  graph_.batch = whole_tensor_     ? 1
                 : batch_override_ ? *batch_override_
                 : file_batch_ > 0 ? int(file_batch_)
                                   : 1;
  values_[in.name()] = std::move(v);
}

// An integer graph input is token ids: every node reading it must be a Gather of an initializer's
// rows by them (an embedding lookup), a Shape, or a Reshape (input 0) whose output is read so in
// turn; the ids are [batch, sequence].
void OnnxImporter::check_token_ids(const std::string& name, const std::string& where,
                                   const std::string& type) {
  token_id_names_.insert(name);
  for (int i = 0; i < g_.node_size(); ++i) {
    const Node& n = g_.node(i);
    for (int k = 0; k < n.input_size(); ++k) {
      if (n.input(k) != name) continue;
      if (n.op_type() == "Reshape" && k == 0 && n.output_size() == 1 &&
          !token_id_names_.count(n.output(0))) {
        check_token_ids(n.output(0), where, type);  // the Reshape itself: import_token_ids_reshape
        continue;
      }
      if (n.op_type() == "Shape" && k == 0) continue;  // shape arithmetic (a symbolic batch)
      if (n.op_type() != "Gather" || k != 1 || !is_constant(n.input(0))) {
        diag_.error(where, fmt::format("element type {}: an integer graph input must be the "
                                       "indices of Gathers on an initializer (an embedding "
                                       "lookup), but {} reads it as input {}",
                                       type, this->where(i), k));
      }
    }
  }
}

void OnnxImporter::count_consumers() {
  for (const auto& n : g_.node()) {
    for (const auto& in : n.input()) {
      if (!in.empty()) ++consumers_[in];
    }
  }
  for (const auto& out : g_.output()) {
    ++consumers_[out.name()];
    graph_outputs_.insert(out.name());
  }
}

const Value* OnnxImporter::activation(int i, int input_index) {
  const Node& n = g_.node(i);
  const std::string& name = n.input(input_index);
  auto it = values_.find(name);
  if (it != values_.end()) {
    return &it->second;
  }
  if (is_constant(name)) {
    fail(i, fmt::format("input {} ('{}') is a constant; npusim expects a run-time tensor here "
                        "(constant folding is not supported)",
                        input_index, name));
  } else {
    fail(i, fmt::format("input {} ('{}') is not produced by an earlier node, an initializer or "
                        "the graph input (nodes must be in topological order)",
                        input_index, name));
  }
  return nullptr;
}

const Constant* OnnxImporter::constant(int i, int input_index, const std::string& role) {
  const Node& n = g_.node(i);
  if (input_index >= n.input_size() || n.input(input_index).empty()) {
    fail(i, fmt::format("input {} ({}) is missing", input_index, role));
    return nullptr;
  }
  const std::string& name = n.input(input_index);
  auto it = constants_.find(name);
  if (it != constants_.end()) return &it->second;
  fail(i, fmt::format("{} '{}' must be a constant (an initializer or a Constant node); npusim "
                      "needs it known at import",
                      role, name));
  return nullptr;
}

const Constant* OnnxImporter::optional_constant(int i, int input_index, const std::string& role) {
  const Node& n = g_.node(i);
  if (input_index >= n.input_size() || n.input(input_index).empty()) return nullptr;
  return constant(i, input_index, role);
}

Layer& OnnxImporter::add_layer(int i, OpKind kind, std::vector<std::string> inputs,
                               const std::string& output) {
  const Node& n = g_.node(i);
  std::string base = n.name().empty() ? output : n.name();
  std::string name = base;
  for (int k = 1; layer_names_.count(name); ++k) name = fmt::format("{}_{}", base, k);
  layer_names_.insert(name);
  Layer l;
  l.name = name;
  l.kind = kind;
  l.inputs = std::move(inputs);
  l.output = output;
  graph_.layers.push_back(std::move(l));
  where_of_layer_.push_back(where(i));
  return graph_.layers.back();
}

void OnnxImporter::set_value(const std::string& name, Value v) {
  // One mode per model; in the whole-tensor mode each node's results take the form choose_form
  // gave the node (docs/onnx.md "Rank mapping").
  v.batched = !whole_tensor_ || node_batched_;
  v.batch_in_depth = whole_tensor_ && node_batched_ && node_in_depth_;
  v.ir_name = name;
  v.layer = static_cast<int>(graph_.layers.size()) - 1;
  values_[name] = std::move(v);
}

// The node passes its input on under a new name: its own read is not a read of the IR tensor.
void OnnxImporter::alias(int i, const Value& v) {
  --consumers_[g_.node(i).input(0)];
  values_[g_.node(i).output(0)] = v;
}

// Readers of an IR tensor: nodes and graph outputs reading any ONNX name that refers to it.
int OnnxImporter::ir_readers(const std::string& ir_name) {
  int n = 0;
  for (const auto& [name, v] : values_) {
    if (v.ir_name == ir_name) n += consumers_[name];
  }
  return n;
}

bool OnnxImporter::extra_outputs_unused(int i) {
  const Node& n = g_.node(i);
  for (int k = 1; k < n.output_size(); ++k) {
    if (!n.output(k).empty() && consumers_[n.output(k)] > 0) {
      fail(i, fmt::format("output {} ('{}') is used; npusim computes only the first output", k,
                          n.output(k)));
      return false;
    }
  }
  return true;
}

void OnnxImporter::import_node(int i) {
  const Node& n = g_.node(i);
  if (skipped_nodes_.count(i)) return;
  for (const auto& in : n.input()) {
    if (!in.empty() && poisoned_.count(in)) {
      for (const auto& out : n.output()) poisoned_.insert(out);
      return;
    }
  }
  // LSTM / GRU may leave Y unnamed and give Y_h / Y_c only.
  const bool recurrent = n.op_type() == "LSTM" || n.op_type() == "GRU";
  if (n.output_size() < 1 ||
      std::all_of(n.output().begin(), n.output().end(), [](const auto& o) { return o.empty(); }) ||
      (n.output(0).empty() && !recurrent)) {
    return fail(i, "has no output");
  }
  if (whole_tensor_ && !choose_form(i)) return;
  if (auto it = gelu_input_at_.find(i); it != gelu_input_at_.end()) {
    auto x = values_.find(it->second);
    if (x == values_.end()) {
      return fail(i, fmt::format("GELU input '{}' is not a run-time tensor", it->second));
    }
    const std::string out = n.output(0);
    Value v = x->second;
    add_layer(i, OpKind::kActivation, {x->second.ir_name}, out).activation = Activation::kGelu;
    return set_value(out, std::move(v));
  }
  if (auto it = rms_norm_at_.find(i); it != rms_norm_at_.end()) {
    return import_rms_norm(i, it->second);
  }
  const std::string& op = n.op_type();
  const bool default_domain = n.domain().empty() || n.domain() == "ai.onnx";
  // Before any translator reads input 0 (a com.microsoft Gelu without inputs was read past them:
  // found by fuzzing).
  if (n.input_size() < 1 && op != "Constant") return fail(i, "has no input");
  if (n.domain() == "com.microsoft" && op == "Gelu") return import_activation(i, Activation::kGelu);
  if (!default_domain) {
    return fail(i, fmt::format("operator domain '{}' is not supported (supported: the default "
                               "domain, and com.microsoft for Gelu)",
                               n.domain()));
  }
  if (fold_node(i)) return;
  if (const OnnxTranslator* t = find_onnx_translator(op)) return t->translate(*this, i);
  if (find_constant_folder(op)) {
    for (const auto& in : n.input()) {
      if (!in.empty() && !is_constant(in)) {
        return fail(i, fmt::format("input '{}' depends on the run's input; npusim evaluates {} "
                                   "at import only, when all its inputs are constants",
                                   in, op));
      }
    }
  }
  const bool shape_op = op == "Shape" || op == "Size" || op == "ConstantOfShape";
  fail(i, fmt::format("operator not supported (supported: {}; on constants also {}){}",
                      onnx_supported_operators(), constant_only_operators(),
                      shape_op ? "; npusim needs shapes known at import: give Reshape a constant "
                                 "shape (an initializer or a Constant node)"
                               : ""));
}

// docs/onnx.md "Constant folding": a node whose inputs are all constants is evaluated here.
bool OnnxImporter::fold_node(int i) {
  const Node& n = g_.node(i);
  const ConstantFolder* folder = find_constant_folder(n.op_type());
  if (!folder || n.input_size() == 0) return false;
  std::vector<const Constant*> inputs;
  for (const auto& in : n.input()) {
    if (in.empty()) {
      inputs.push_back(nullptr);
    } else if (is_constant(in)) {
      inputs.push_back(&constants_.at(in));
    } else {
      return false;
    }
  }
  std::vector<Constant> outputs;
  if (auto problem = folder->fold(n, opset_, inputs, outputs); !problem.empty()) {
    fail(i, "on constants: " + problem);
    return true;
  }
  for (int k = 0; k < n.output_size() && size_t(k) < outputs.size(); ++k) {
    if (!n.output(k).empty()) constants_[n.output(k)] = std::move(outputs[size_t(k)]);
  }
  return true;
}

void OnnxImporter::finish_outputs() {
  if (g_.output_size() == 0) diag_.error("graph outputs", "the model has no outputs");
  for (const auto& o : g_.output()) {
    const std::string& name = o.name();
    if (poisoned_.count(name)) continue;
    const std::string where = fmt::format("graph output '{}'", name);
    auto it = values_.find(name);
    if (it == values_.end()) {
      diag_.error(where, is_constant(name) ? "is a constant, not computed by the network"
                                           : "is not produced by any node");
      continue;
    }
    // In the whole-tensor mode files hold exactly the ONNX shape, in ONNX order.
    if (whole_tensor_ && it->second.batched) {
      Value b = it->second;
      if (b.ir_name == name) {  // the output's name moves to the reshaped / relaid tensor
        b.ir_name = fresh_name(name + "_batched");
        for (auto& l : graph_.layers) {
          if (l.output == name) l.output = b.ir_name;
          for (auto& in : l.inputs) {
            if (in == name) in = b.ir_name;
          }
        }
      }
      Value w;
      w.batched = false;
      w.dims = b.dims;
      w.dims.insert(w.dims.begin(), 1);
      w.ir_name = name;
      if (b.batch_in_depth) {
        w.dims = b.dims;
        std::swap(w.dims[0], w.dims[1]);
        add_move_between(b, w, name, where);
      } else if (b.channels_first || !b.flat_from.empty()) {
        add_relayout(b, false, name, where);
      } else {
        std::vector<int> dims = ir_dims(b);
        dims.insert(dims.begin(), 1);
        add_free_reshape(b.ir_name, name, dims, where);
      }
      w.layer = static_cast<int>(graph_.layers.size()) - 1;
      it->second = std::move(w);
      graph_.outputs.push_back(name);
      graph_.io_in_onnx_order.insert(name);
      continue;
    }
    const Value& v = it->second;
    // A flattened map leaves in ONNX's order (a move); other outputs as the IR holds them.
    if (!v.flat_from.empty()) {
      add_relayout(v, false, name, where);
    } else if (v.ir_name != name) {
      // An output that aliases another tensor (Identity, Dropout) gets a free reshape so the
      // graph output keeps its ONNX name.
      std::string layer_name = name;
      for (int k = 1; layer_names_.count(layer_name); ++k) {
        layer_name = fmt::format("{}_{}", name, k);
      }
      layer_names_.insert(layer_name);
      Layer l;
      l.name = layer_name;
      l.kind = OpKind::kReshape;
      l.inputs = {v.ir_name};
      l.output = name;
      l.reshape_to = ir_dims(v);
      graph_.layers.push_back(std::move(l));
      where_of_layer_.push_back(where);
    }
    graph_.outputs.push_back(name);
    if (!v.channels_first || !v.flat_from.empty()) graph_.io_in_onnx_order.insert(name);
  }
}

void OnnxImporter::batch_axis_needed(int i, const std::string& message) {
  needs_whole_tensor_ = true;
  fail(i, message +
              " (the batch axis; npusim then runs the model as one whole tensor: docs/onnx.md "
              "\"Rank mapping\")");
}

Graph OnnxImporter::run() {
  check_opset();
  read_initializers();
  read_input();
  count_consumers();
  find_gelu_patterns();
  find_rms_norm_patterns();
  // The model's nodes; those LSTM / GRU append are imported as they are made, and removed at the
  // end (a second import of the same model, in the whole-tensor mode, starts from the file's).
  const int model_nodes = g_.node_size();
  struct RemoveAppended {
    onnx::GraphProto& g;
    int keep;
    ~RemoveAppended() {
      if (g.node_size() > keep) g.mutable_node()->DeleteSubrange(keep, g.node_size() - keep);
    }
  } remove_appended{nodes_, model_nodes};
  for (int i = 0; i < model_nodes; ++i) import_node(i);
  finish_outputs();
  // A NaN or infinite weight has no int8 code or scale (found by the run-path fuzz target:
  // quantizing one was undefined behaviour; tests/fuzz/corpus/run/crash-nan-weight.onnx).
  for (size_t k = 0; k < graph_.layers.size(); ++k) {
    for (const auto* values : {&graph_.layers[k].weights, &graph_.layers[k].bias}) {
      const auto bad =
          std::find_if(values->begin(), values->end(), [](float v) { return !std::isfinite(v); });
      if (bad != values->end()) {
        diag_.error(where_of_layer_[k],
                    fmt::format("a {} is {}: weights and biases must be finite numbers",
                                values == &graph_.layers[k].weights ? "weight" : "bias", *bad));
        break;
      }
    }
  }
  diag_.throw_if_errors();
  graph_.name = g_.name().empty() ? std::filesystem::path(path_).stem().string() : g_.name();
  graph_.description = fmt::format("imported from {}", path_);
  if (!model_.producer_name().empty()) {
    graph_.description +=
        fmt::format(" (made by {} {})", model_.producer_name(), model_.producer_version());
  }
  finalize_graph(graph_, diag_, where_of_layer_);
  diag_.throw_if_errors();
  return std::move(graph_);
}

}  // namespace npusim::onnx_frontend

namespace npusim {

using onnx_frontend::OnnxImporter;

Graph import_onnx(const std::string& path, std::optional<int> batch) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(fmt::format("{}: cannot open the file", path));
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return import_onnx_bytes(bytes, path, batch);
}

Graph import_onnx_bytes(const std::string& bytes, const std::string& path,
                        std::optional<int> batch) {
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) {
    throw UserError(fmt::format("{}: not a valid ONNX model (protobuf parse failed)", path));
  }
  if (!model.has_graph() || model.graph().node_size() == 0 || model.ir_version() <= 0) {
    throw UserError(
        fmt::format("{}: not a valid ONNX model (no ir_version or no graph nodes)", path));
  }
  if (batch && *batch < 1) throw UserError(fmt::format("--batch {}: must be at least 1", *batch));
  OnnxImporter batched(model, path, batch, false);
  try {
    return batched.run();
  } catch (const UserErrors& batched_errors) {
    // docs/onnx.md "Rank mapping": an operator along axis 0 runs the model as one whole tensor
    // (the batch it declares, fixed or the run's, part of every sample); when that fails too, the
    // batched import's messages stand (they name the operator that needed axis 0).
    if (!batched.needs_whole_tensor()) throw;
    try {
      return OnnxImporter(model, path, batch, true).run();
    } catch (const UserErrors& whole_errors) {
      // Both: the operator that needed axis 0, then what stopped the whole-tensor form (what
      // the batched import said already is not repeated).
      std::vector<std::string> messages = batched_errors.messages();
      const std::set<std::string> said(messages.begin(), messages.end());
      for (const std::string& m : whole_errors.messages()) {
        if (said.count(m)) continue;
        const std::string head = path + ": ";
        messages.push_back(m.rfind(head, 0) == 0
                               ? head + "as one whole tensor: " + m.substr(head.size())
                               : "as one whole tensor: " + m);
      }
      throw UserErrors(messages);
    }
  }
}

}  // namespace npusim
