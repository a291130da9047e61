#include "compiler/onnx_import.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>

#include "support/error.hpp"

namespace npusim {
namespace {

static_assert(std::endian::native == std::endian::little, "raw_data is read as little-endian");

constexpr int kMinOpset = 11;
constexpr int kMaxOpset = 20;
constexpr const char* kSupportedOps =
    "Conv, Gemm, MatMul, Add, Mul, Relu, Clip, Sigmoid, Tanh, Gelu, the Erf form of GELU, Softmax, "
    "LayerNormalization, BatchNormalization, MaxPool, AveragePool, GlobalAveragePool, "
    "GlobalMaxPool, ReduceMean (spatial), Concat, Flatten, Reshape, Squeeze, Unsqueeze, "
    "Pad (before a Conv), Transpose (of a MatMul's second input), Identity, Dropout, Constant";

// A constant tensor: an initializer or the output of a Constant node.
struct Constant {
  std::vector<int64_t> dims;
  std::vector<float> values;  // float and double tensors
  std::vector<int64_t> ints;  // int32 and int64 tensors
  bool is_int = false;
  uint64_t elements() const {
    uint64_t n = 1;
    for (int64_t d : dims) n *= static_cast<uint64_t>(d);
    return n;
  }
};

// An activation (run-time) tensor. `dims` are in ONNX order without the batch dimension.
struct Value {
  std::string ir_name;             // the IR tensor holding it
  std::vector<int64_t> dims;       // per sample, ONNX order
  bool channels_first = false;     // dims are [C, (D,) H, W]; the IR tensor is [(D,) H, W, C]
  std::vector<int64_t> flat_from;  // set when this is a flattened channels-first map [C,(D,)H,W]
                                   // with C > 1 and H*W > 1: the IR holds (D,)H,W,C order
  int layer = -1;                  // producing IR layer; -1 for the graph input
  // Set on the output of a Pad: zero padding (begins, then ends, per spatial axis) that the Conv
  // reading it adds to its own pads. The IR tensor is the unpadded one; `dims` are padded.
  std::vector<int64_t> pending_pads;
  // Set on the output of a Transpose of the last two axes: the MatMul reading it as its second
  // input multiplies by the transpose of the IR tensor (which is the untransposed one).
  bool pending_transpose = false;
};

std::string dims_text(const std::vector<int64_t>& dims) {
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

int64_t product(const std::vector<int64_t>& dims, size_t from = 0) {
  int64_t n = 1;
  for (size_t i = from; i < dims.size(); ++i) n *= dims[i];
  return n;
}

// The IR shape of a value: channels move last.
std::vector<int> ir_dims(const Value& v) {
  std::vector<int> out;
  if (v.channels_first) {
    for (size_t i = 1; i < v.dims.size(); ++i) out.push_back(static_cast<int>(v.dims[i]));
    out.push_back(static_cast<int>(v.dims[0]));
  } else {
    for (int64_t d : v.dims) out.push_back(static_cast<int>(d));
  }
  return out;
}

// For a flattened channels-first map [C, S...]: the ONNX flat index of each IR flat index.
// The IR flattens (S..., C), ONNX flattens (C, S...).
std::vector<int64_t> onnx_index_of_ir_index(const std::vector<int64_t>& chw) {
  const int64_t c = chw[0], s = product(chw, 1);
  std::vector<int64_t> map(static_cast<size_t>(c * s));
  for (int64_t si = 0; si < s; ++si) {
    for (int64_t ci = 0; ci < c; ++ci) map[static_cast<size_t>(si * c + ci)] = ci * s + si;
  }
  return map;
}

std::vector<float> permuted(const std::vector<float>& values, const std::vector<int64_t>& map) {
  if (map.empty()) return values;
  std::vector<float> out(values.size());
  for (size_t i = 0; i < map.size(); ++i) out[i] = values[static_cast<size_t>(map[i])];
  return out;
}

const onnx::AttributeProto* find_attr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}
int64_t attr_int(const onnx::NodeProto& n, const std::string& name, int64_t fallback) {
  const auto* a = find_attr(n, name);
  return a ? a->i() : fallback;
}
float attr_float(const onnx::NodeProto& n, const std::string& name, float fallback) {
  const auto* a = find_attr(n, name);
  return a ? a->f() : fallback;
}
std::string attr_string(const onnx::NodeProto& n, const std::string& name,
                        const std::string& fallback) {
  const auto* a = find_attr(n, name);
  return a ? a->s() : fallback;
}
std::vector<int64_t> attr_ints(const onnx::NodeProto& n, const std::string& name,
                               std::vector<int64_t> fallback) {
  const auto* a = find_attr(n, name);
  if (!a) return fallback;
  return {a->ints().begin(), a->ints().end()};
}

std::string data_type_name(int t) {
  return onnx::TensorProto_DataType_IsValid(t)
             ? onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(t))
             : fmt::format("{}", t);
}

// Reads a TensorProto's values; returns an error message, empty when fine.
std::string read_tensor(const onnx::TensorProto& t, Constant& c) {
  if (t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) {
    return "stores its data in an external file, which is not supported (save the model with "
           "its weights inside)";
  }
  c.dims.assign(t.dims().begin(), t.dims().end());
  for (int64_t d : c.dims) {
    if (d < 0) return fmt::format("has a negative dimension in {}", dims_text(c.dims));
  }
  const uint64_t n = c.elements();
  const std::string& raw = t.raw_data();
  auto from_raw = [&](auto sample, auto& out) -> std::string {
    using T = decltype(sample);
    if (raw.size() != n * sizeof(T)) {
      return fmt::format("has {} bytes of raw data, expected {} for shape {}", raw.size(),
                         n * sizeof(T), dims_text(c.dims));
    }
    out.resize(n);
    for (uint64_t i = 0; i < n; ++i) {
      T v;
      std::memcpy(&v, raw.data() + i * sizeof(T), sizeof(T));
      out[i] = static_cast<std::remove_reference_t<decltype(out[0])>>(v);
    }
    return "";
  };
  auto from_field = [&](const auto& field, auto& out) -> std::string {
    if (static_cast<uint64_t>(field.size()) != n) {
      return fmt::format("has {} values, expected {} for shape {}", field.size(), n,
                         dims_text(c.dims));
    }
    out.assign(field.begin(), field.end());
    return "";
  };
  switch (t.data_type()) {
    case onnx::TensorProto_DataType_FLOAT:
      return t.has_raw_data() ? from_raw(float{}, c.values) : from_field(t.float_data(), c.values);
    case onnx::TensorProto_DataType_DOUBLE:
      return t.has_raw_data() ? from_raw(double{}, c.values)
                              : from_field(t.double_data(), c.values);
    case onnx::TensorProto_DataType_INT64:
      c.is_int = true;
      return t.has_raw_data() ? from_raw(int64_t{}, c.ints) : from_field(t.int64_data(), c.ints);
    case onnx::TensorProto_DataType_INT32:
      c.is_int = true;
      return t.has_raw_data() ? from_raw(int32_t{}, c.ints) : from_field(t.int32_data(), c.ints);
    default:
      return fmt::format("has data type {}; supported: FLOAT, DOUBLE, INT32, INT64",
                         data_type_name(t.data_type()));
  }
}

class OnnxImporter {
 public:
  OnnxImporter(const onnx::ModelProto& model, const std::string& path, std::optional<int> batch)
      : model_(model), g_(model.graph()), path_(path), batch_override_(batch), diag_(path) {}

  Graph run();

 private:
  using Node = onnx::NodeProto;

  std::string where(int i) const;
  void fail(int i, const std::string& message);
  void check_opset();
  void read_initializers();
  void read_input();
  void count_consumers();
  void find_gelu_patterns();
  void import_node(int i);
  void finish_outputs();

  // Operand access: an activation, a constant, or an error (returns null and records it).
  // `folded_ok`: the caller folds a pending Pad (Conv) or Transpose (MatMul's B) into itself.
  const Value* activation(int i, int input_index, bool folded_ok = false);
  const Constant* constant(int i, int input_index, const std::string& role);
  const Constant* optional_constant(int i, int input_index, const std::string& role);
  bool is_constant(const std::string& name) const { return constants_.count(name) != 0; }
  bool is_activation(const std::string& name) const { return values_.count(name) != 0; }

  Layer& add_layer(int i, OpKind kind, std::vector<std::string> inputs, const std::string& output);
  void set_value(const std::string& name, Value v);
  // Outputs beyond the first must be unused (e.g. MaxPool's indices).
  bool extra_outputs_unused(int i);

  void import_conv(int i);
  void import_pool(int i, OpKind kind);
  void import_global_pool(int i, OpKind kind);
  void import_activation(int i, Activation act);
  void import_clip(int i);
  void import_softmax(int i);
  void import_layer_norm(int i);
  void import_batch_norm(int i);
  void import_binary(int i, OpKind kind);
  void fold_constant(int i, const Value& x, const Constant& c, OpKind kind);
  void import_concat(int i);
  void import_flatten(int i);
  void import_reshape(int i);
  void reshape_value(int i, const Value& x, const std::vector<int64_t>& per_sample);
  bool read_axes(int i, int input_from_opset, std::vector<int64_t>& axes, bool& given);
  void import_squeeze(int i, bool unsqueeze);
  void import_reduce_mean(int i);
  void import_pad(int i);
  void import_transpose(int i);
  void import_gemm(int i);
  void import_matmul(int i);
  void import_dense(int i, const Value& a, const Constant& b, bool trans_b, float alpha,
                    const Constant* c, float beta);
  void import_constant_node(int i);
  void alias(int i, const Value& v);
  int ir_readers(const std::string& ir_name);

  const onnx::ModelProto& model_;
  const onnx::GraphProto& g_;
  std::string path_;
  std::optional<int> batch_override_;
  GraphDiagnostics diag_;
  Graph graph_;
  std::vector<std::string> where_of_layer_;
  std::set<std::string> layer_names_;
  std::map<std::string, Constant> constants_;
  std::map<std::string, Value> values_;
  std::set<std::string> poisoned_;  // outputs of nodes that failed: their consumers stay quiet
  std::map<std::string, int> consumers_;
  std::set<std::string> graph_outputs_;
  std::set<int> skipped_nodes_;
  std::map<int, std::string> gelu_input_at_;  // last node of a GELU pattern -> its input x
  int64_t file_batch_ = 0;
  int opset_ = kMaxOpset;
};

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
  if (tt.elem_type() != onnx::TensorProto_DataType_FLOAT) {
    diag_.error(where, fmt::format("element type {}, expected FLOAT (npusim quantizes float "
                                   "inputs to int8)",
                                   data_type_name(tt.elem_type())));
  }
  const int rank = tt.has_shape() ? tt.shape().dim_size() : 0;
  if (rank < 2 || rank > 5) {
    diag_.error(where, fmt::format("rank {}, expected 2 (N, features), 3 (N, rows, features), 4 "
                                   "(N, C, H, W) or 5 (N, C, D, H, W)",
                                   rank));
    diag_.throw_if_errors();
  }
  Value v;
  v.ir_name = in.name();
  for (int d = 0; d < rank; ++d) {
    const auto& dim = tt.shape().dim(d);
    const bool fixed = dim.has_dim_value() && dim.dim_value() > 0;
    if (d == 0) {
      file_batch_ = fixed ? dim.dim_value() : 0;
      continue;
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
  v.channels_first = rank >= 4;
  diag_.throw_if_errors();
  graph_.input_name = in.name();
  graph_.channels_first_io = true;  // --input and --save-outputs speak ONNX's layout
  graph_.input_shape.dims = ir_dims(v);
  graph_.batch = batch_override_ ? *batch_override_ : file_batch_ > 0 ? int(file_batch_) : 1;
  values_[in.name()] = std::move(v);
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

// Finds x * 0.5 * (1 + erf(x / sqrt(2))) in the node orders exporters produce:
//   Div(x, sqrt2) | Mul(x, 1/sqrt2) -> Erf -> Add(., 1) -> then one of
//   Mul(x, .) -> Mul(., 0.5);   Mul(Mul(x, 0.5), .);   Mul(., 0.5) -> Mul(x, .)
void OnnxImporter::find_gelu_patterns() {
  std::map<std::string, int> producer;
  std::map<std::string, std::vector<int>> users;
  for (int i = 0; i < g_.node_size(); ++i) {
    for (const auto& out : g_.node(i).output()) producer[out] = i;
    for (const auto& in : g_.node(i).input()) users[in].push_back(i);
  }
  auto scalar = [&](const std::string& name, float expected) {
    auto it = constants_.find(name);
    return it != constants_.end() && !it->second.is_int && it->second.values.size() == 1 &&
           std::fabs(it->second.values[0] - expected) < 1e-3f;
  };
  auto sole_user = [&](const std::string& tensor) -> int {
    if (graph_outputs_.count(tensor)) return -1;
    auto it = users.find(tensor);
    return it != users.end() && it->second.size() == 1 ? it->second[0] : -1;
  };
  auto is_op = [&](int i, const char* op) {
    return i >= 0 && g_.node(i).op_type() == op && g_.node(i).domain().empty() &&
           g_.node(i).input_size() == 2 && g_.node(i).output_size() == 1;  // (fuzzing found 0)
  };
  // The operand of binary node i that is not `other`; empty when `other` is not an operand.
  auto other_operand = [&](int i, const std::string& other) -> std::string {
    const Node& n = g_.node(i);
    if (n.input(0) == other) return n.input(1);
    if (n.input(1) == other) return n.input(0);
    return "";
  };
  for (int e = 0; e < g_.node_size(); ++e) {
    const Node& erf = g_.node(e);
    if (erf.op_type() != "Erf" || erf.input_size() != 1 || erf.output_size() != 1) continue;
    auto p_it = producer.find(erf.input(0));
    if (p_it == producer.end() || sole_user(erf.input(0)) != e) continue;
    const int scale = p_it->second;
    std::string x;
    if (is_op(scale, "Div") && scalar(g_.node(scale).input(1), std::sqrt(2.0f))) {
      x = g_.node(scale).input(0);
    } else if (is_op(scale, "Mul")) {
      const Node& m = g_.node(scale);
      if (scalar(m.input(1), std::sqrt(0.5f))) x = m.input(0);
      if (scalar(m.input(0), std::sqrt(0.5f))) x = m.input(1);
    }
    if (x.empty() || is_constant(x)) continue;
    const int add = sole_user(erf.output(0));
    if (!is_op(add, "Add") || !scalar(other_operand(add, erf.output(0)), 1.0f)) continue;
    const int m1 = sole_user(g_.node(add).output(0));
    if (!is_op(m1, "Mul")) continue;
    const std::string m1_other = other_operand(m1, g_.node(add).output(0));
    std::vector<int> members{scale, e, add, m1};
    int last = -1;
    if (m1_other == x) {
      const int m2 = sole_user(g_.node(m1).output(0));
      if (is_op(m2, "Mul") && scalar(other_operand(m2, g_.node(m1).output(0)), 0.5f)) last = m2;
    } else if (scalar(m1_other, 0.5f)) {
      const int m2 = sole_user(g_.node(m1).output(0));
      if (is_op(m2, "Mul") && other_operand(m2, g_.node(m1).output(0)) == x) last = m2;
    } else if (auto h = producer.find(m1_other); h != producer.end()) {
      if (is_op(h->second, "Mul") && sole_user(m1_other) == m1 &&
          scalar(other_operand(h->second, x), 0.5f)) {
        last = m1;
        members.push_back(h->second);
      }
    }
    if (last < 0) continue;
    if (last != m1) members.push_back(last);
    for (int m : members) {
      if (m != last) skipped_nodes_.insert(m);
    }
    gelu_input_at_[last] = x;
  }
}

const Value* OnnxImporter::activation(int i, int input_index, bool folded_ok) {
  const Node& n = g_.node(i);
  const std::string& name = n.input(input_index);
  auto it = values_.find(name);
  if (it != values_.end()) {
    if (!folded_ok && !it->second.pending_pads.empty()) {
      fail(i, fmt::format("input {} ('{}') comes from a Pad; npusim supports Pad only as zero "
                          "padding folded into the Conv that reads it",
                          input_index, name));
      return nullptr;
    }
    if (!folded_ok && it->second.pending_transpose) {
      fail(i, fmt::format("input {} ('{}') comes from a Transpose; npusim supports Transpose "
                          "only of the last two axes, as the second input of a MatMul",
                          input_index, name));
      return nullptr;
    }
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

// Spatial attributes shared by Conv and the pools. `kernel` and `dilation` are per spatial axis.
struct Window {
  std::vector<int64_t> strides, pads_begin, pads_end, out;
};

// Returns an error message, empty when fine.
std::string resolve_window(const onnx::NodeProto& n, const std::vector<int64_t>& in,
                           const std::vector<int64_t>& kernel, const std::vector<int64_t>& dilation,
                           Window& w) {
  const size_t s = in.size();
  w.strides = attr_ints(n, "strides", std::vector<int64_t>(s, 1));
  if (w.strides.size() != s) {
    return fmt::format("strides {} must have {} values", dims_text(w.strides), s);
  }
  for (int64_t v : w.strides) {
    if (v < 1) return fmt::format("strides {} must be positive", dims_text(w.strides));
  }
  const std::string auto_pad = attr_string(n, "auto_pad", "NOTSET");
  w.pads_begin.assign(s, 0);
  w.pads_end.assign(s, 0);
  w.out.assign(s, 0);
  if (auto_pad == "NOTSET") {
    auto pads = attr_ints(n, "pads", std::vector<int64_t>(2 * s, 0));
    if (pads.size() != 2 * s) {
      return fmt::format("pads {} must have {} values (begins, then ends)", dims_text(pads), 2 * s);
    }
    for (size_t a = 0; a < s; ++a) {
      w.pads_begin[a] = pads[a];
      w.pads_end[a] = pads[s + a];
      if (pads[a] < 0 || pads[s + a] < 0) {
        return fmt::format("pads {} must not be negative", dims_text(pads));
      }
    }
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t a = 0; a < s; ++a) {
      const int64_t out = (in[a] + w.strides[a] - 1) / w.strides[a];
      const int64_t span = (kernel[a] - 1) * dilation[a] + 1;
      const int64_t total = std::max<int64_t>(0, (out - 1) * w.strides[a] + span - in[a]);
      const int64_t small = total / 2, large = total - small;
      w.pads_begin[a] = auto_pad == "SAME_UPPER" ? small : large;
      w.pads_end[a] = auto_pad == "SAME_UPPER" ? large : small;
    }
  } else if (auto_pad != "VALID") {
    return fmt::format("auto_pad '{}', expected NOTSET, SAME_UPPER, SAME_LOWER or VALID", auto_pad);
  }
  for (size_t a = 0; a < s; ++a) {
    const int64_t span = (kernel[a] - 1) * dilation[a] + 1;
    const int64_t padded = in[a] + w.pads_begin[a] + w.pads_end[a];
    if (padded < span) {
      return fmt::format(
          "the window ({} with dilation) is larger than the padded input ({}) on "
          "spatial axis {}",
          span, padded, a);
    }
    w.out[a] = (padded - span) / w.strides[a] + 1;
  }
  return "";
}

// Writes per-spatial-axis values into the IR's (depth, height, width) triple.
std::array<int, 3> triple(const std::vector<int64_t>& v, int fill) {
  std::array<int, 3> t{fill, fill, fill};
  const size_t off = 3 - v.size();
  for (size_t a = 0; a < v.size(); ++a) t[off + a] = static_cast<int>(v[a]);
  return t;
}

bool spatial_input(const Value& x) {
  return x.channels_first && (x.dims.size() == 3 || x.dims.size() == 4);
}

std::string spatial_input_problem(const Value& x) {
  return fmt::format(
      "expects a channels-first 2-D or 3-D feature map (N, C, H, W) or "
      "(N, C, D, H, W); input '{}' is [N, {}]{}",
      x.ir_name, fmt::join(x.dims, ", "), x.channels_first ? "" : " (not a feature map)");
}

void OnnxImporter::import_conv(int i) {
  const Node& n = g_.node(i);
  const Value* x = activation(i, 0, true);
  if (!x) return;
  if (!spatial_input(*x)) return fail(i, spatial_input_problem(*x));
  const Constant* w = constant(i, 1, "weights");
  if (!w) return;
  const Constant* b = optional_constant(i, 2, "bias");
  if (n.input_size() > 2 && !n.input(2).empty() && !b) return;
  const size_t s = x->dims.size() - 1;
  const int64_t cin = x->dims[0];
  const int64_t groups = attr_int(n, "group", 1);
  if (w->is_int || w->dims.size() != s + 2) {
    return fail(i, fmt::format("weights '{}' must be float with rank {} (O, I/group, kernel...), "
                               "got {}",
                               n.input(1), s + 2, dims_text(w->dims)));
  }
  const int64_t cout = w->dims[0];
  std::vector<int64_t> kernel(w->dims.begin() + 2, w->dims.end());
  if (std::any_of(w->dims.begin(), w->dims.end(), [](int64_t d) { return d < 1; })) {
    return fail(
        i, fmt::format("weights '{}' {} have an empty dimension", n.input(1), dims_text(w->dims)));
  }
  if (groups < 1 || cin % groups != 0 || cout % groups != 0 || w->dims[1] != cin / groups) {
    return fail(i, fmt::format("group {} does not fit {} input channels and weights {} (expected "
                               "[O, {} / group, ...] with O and {} divisible by group)",
                               groups, cin, dims_text(w->dims), cin, cin));
  }
  if (auto ks = attr_ints(n, "kernel_shape", kernel); ks != kernel) {
    return fail(i, fmt::format("kernel_shape {} disagrees with the weights {}", dims_text(ks),
                               dims_text(w->dims)));
  }
  if (b && (b->is_int || b->elements() != static_cast<uint64_t>(cout))) {
    return fail(i, fmt::format("bias '{}' must be {} floats, got shape {}", n.input(2), cout,
                               dims_text(b->dims)));
  }
  auto dilation = attr_ints(n, "dilations", std::vector<int64_t>(s, 1));
  if (dilation.size() != s ||
      std::any_of(dilation.begin(), dilation.end(), [](int64_t d) { return d < 1; })) {
    return fail(i, fmt::format("dilations {} must be {} positive values", dims_text(dilation), s));
  }
  std::vector<int64_t> in(x->dims.begin() + 1, x->dims.end());
  Window win;
  if (auto problem = resolve_window(n, in, kernel, dilation, win); !problem.empty()) {
    return fail(i, problem);
  }

  const std::string out = n.output(0);
  Value v;
  v.channels_first = true;
  v.dims.push_back(cout);
  v.dims.insert(v.dims.end(), win.out.begin(), win.out.end());
  for (size_t a = 0; a < x->pending_pads.size() / 2; ++a) {
    win.pads_begin[a] += x->pending_pads[a];
    win.pads_end[a] += x->pending_pads[x->pending_pads.size() / 2 + a];
  }
  Layer& l = add_layer(i, OpKind::kConv, {x->ir_name}, out);
  l.filters = static_cast<int>(cout);
  l.groups = static_cast<int>(groups);
  l.kernel = triple(kernel, 1);
  l.strides = triple(win.strides, 1);
  l.dilation = triple(dilation, 1);
  l.pads_begin = triple(win.pads_begin, 0);
  l.pads_end = triple(win.pads_end, 0);
  // ONNX [O][I/g][k...] -> IR [k...][I/g][O].
  const int64_t cg = cin / groups, taps = product(kernel);
  l.weights.resize(w->values.size());
  for (int64_t o = 0; o < cout; ++o) {
    for (int64_t c = 0; c < cg; ++c) {
      for (int64_t t = 0; t < taps; ++t) {
        l.weights[static_cast<size_t>((t * cg + c) * cout + o)] =
            w->values[static_cast<size_t>((o * cg + c) * taps + t)];
      }
    }
  }
  // The IR always carries `filters` bias values; zeros when the model has none.
  l.use_bias = b != nullptr;
  l.bias = b ? b->values : std::vector<float>(static_cast<size_t>(cout), 0.0f);
  set_value(out, std::move(v));
}

void OnnxImporter::import_pool(int i, OpKind kind) {
  const Node& n = g_.node(i);
  const Value* x = activation(i, 0);
  if (!x) return;
  if (!spatial_input(*x)) return fail(i, spatial_input_problem(*x));
  if (!extra_outputs_unused(i)) return;
  const size_t s = x->dims.size() - 1;
  auto kernel = attr_ints(n, "kernel_shape", {});
  if (kernel.size() != s ||
      std::any_of(kernel.begin(), kernel.end(), [](int64_t k) { return k < 1; })) {
    return fail(i, fmt::format("kernel_shape {} must be {} positive values", dims_text(kernel), s));
  }
  auto dilation = attr_ints(n, "dilations", std::vector<int64_t>(s, 1));
  if (std::any_of(dilation.begin(), dilation.end(), [](int64_t d) { return d != 1; })) {
    return fail(i,
                fmt::format("dilations {}: only 1 is supported for pooling", dims_text(dilation)));
  }
  std::vector<int64_t> in(x->dims.begin() + 1, x->dims.end());
  Window win;
  if (auto problem = resolve_window(n, in, kernel, dilation, win); !problem.empty()) {
    return fail(i, problem);
  }
  const bool count_include_pad = attr_int(n, "count_include_pad", 0) != 0;
  if (attr_int(n, "ceil_mode", 0) != 0) {
    // Rounding the output size up adds windows that hang over the end; as in PyTorch and ONNX
    // Runtime, a window that would start in the end padding is dropped. The IR gets the overhang
    // as extra end padding, which max pooling and an average without padding both ignore.
    for (size_t a = 0; a < s; ++a) {
      const int64_t padded = in[a] + win.pads_begin[a] + win.pads_end[a];
      int64_t out_ceil = (padded - kernel[a] + win.strides[a] - 1) / win.strides[a] + 1;
      if ((out_ceil - 1) * win.strides[a] >= in[a] + win.pads_begin[a]) --out_ceil;
      const int64_t extra = (out_ceil - 1) * win.strides[a] + kernel[a] - padded;
      if (extra <= 0) continue;
      if (kind == OpKind::kAvgPool && count_include_pad) {
        return fail(i,
                    "ceil_mode 1 with count_include_pad 1 is not supported (the windows that "
                    "hang over the end would count padding the model does not have)");
      }
      win.pads_end[a] += extra;
      win.out[a] = out_ceil;
    }
  }
  const std::string out = n.output(0);
  Value v;
  v.channels_first = true;
  v.dims.push_back(x->dims[0]);
  v.dims.insert(v.dims.end(), win.out.begin(), win.out.end());
  Layer& l = add_layer(i, kind, {x->ir_name}, out);
  l.kernel = triple(kernel, 1);
  l.strides = triple(win.strides, 1);
  l.pads_begin = triple(win.pads_begin, 0);
  l.pads_end = triple(win.pads_end, 0);
  l.count_include_pad = count_include_pad;
  set_value(out, std::move(v));
}

void OnnxImporter::import_global_pool(int i, OpKind kind) {
  const Value* x = activation(i, 0);
  if (!x) return;
  if (!spatial_input(*x)) return fail(i, spatial_input_problem(*x));
  const std::string out = g_.node(i).output(0);
  Value v;
  v.channels_first = true;
  v.dims.assign(x->dims.size(), 1);
  v.dims[0] = x->dims[0];
  Layer& l = add_layer(i, kind, {x->ir_name}, out);
  if (kind == OpKind::kAvgPool) {
    l.global_pool = true;
  } else {
    l.kernel = triple({x->dims.begin() + 1, x->dims.end()}, 1);
  }
  set_value(out, std::move(v));
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

void OnnxImporter::import_softmax(int i) {
  const Node& n = g_.node(i);
  const Value* x = activation(i, 0);
  if (!x) return;
  const int opset = opset_;
  const int64_t rank = static_cast<int64_t>(x->dims.size()) + 1;  // with the batch
  int64_t axis = attr_int(n, "axis", opset >= 13 ? -1 : 1);
  if (axis < 0) axis += rank;
  // Before opset 13 Softmax normalises over every axis from `axis` on; that matches the IR's
  // softmax over the last (plain) or channel (channels first) axis when the extra axes have
  // size 1.
  bool ok = false;
  if (axis >= 1 && axis < rank) {
    const size_t a = static_cast<size_t>(axis - 1);  // per-sample index
    if (x->channels_first) {
      ok = a == 0 && (opset >= 13 || product(x->dims, 1) == 1);
    } else {
      ok = opset >= 13 ? a + 1 == x->dims.size() : product(x->dims, a) == x->dims.back();
    }
  }
  if (!ok) {
    return fail(
        i, fmt::format("axis {} on input [N, {}]{}: npusim's softmax runs over the "
                       "{} axis only (axis {})",
                       attr_int(n, "axis", opset >= 13 ? -1 : 1), fmt::join(x->dims, ", "),
                       x->channels_first ? " (channels first)" : "",
                       x->channels_first ? "channel" : "last", x->channels_first ? 1 : rank - 1));
  }
  const std::string out = n.output(0);
  Value v = *x;
  add_layer(i, OpKind::kSoftmax, {x->ir_name}, out);
  set_value(out, std::move(v));
}

void OnnxImporter::import_layer_norm(int i) {
  const Node& n = g_.node(i);
  const Value* x = activation(i, 0);
  if (!x) return;
  if (!extra_outputs_unused(i)) return;
  const Constant* scale = constant(i, 1, "scale");
  if (!scale) return;
  const Constant* bias = optional_constant(i, 2, "bias");
  if (n.input_size() > 2 && !n.input(2).empty() && !bias) return;
  const int64_t rank = static_cast<int64_t>(x->dims.size()) + 1;
  int64_t axis = attr_int(n, "axis", -1);
  if (axis < 0) axis += rank;
  if (x->channels_first || axis != rank - 1) {
    return fail(i, fmt::format("axis {} on input [N, {}]{}: npusim normalises over the last axis "
                               "of a (N, features) or (N, rows, features) tensor only",
                               attr_int(n, "axis", -1), fmt::join(x->dims, ", "),
                               x->channels_first ? " (channels first)" : ""));
  }
  const int64_t f = x->dims.back();
  for (const Constant* c : {scale, bias}) {
    if (c && (c->is_int || c->elements() != static_cast<uint64_t>(f))) {
      return fail(i, fmt::format("scale and bias must have {} floats, got shape {}", f,
                                 dims_text(c->dims)));
    }
  }
  std::vector<int64_t> map;
  if (!x->flat_from.empty()) map = onnx_index_of_ir_index(x->flat_from);
  const std::string out = n.output(0);
  Value v = *x;
  Layer& l = add_layer(i, OpKind::kLayerNorm, {x->ir_name}, out);
  l.epsilon = attr_float(n, "epsilon", 1e-5f);
  l.gamma = permuted(scale->values, map);
  l.beta = bias ? permuted(bias->values, map) : std::vector<float>(static_cast<size_t>(f), 0.0f);
  set_value(out, std::move(v));
}

void OnnxImporter::import_batch_norm(int i) {
  const Node& n = g_.node(i);
  const Value* x = activation(i, 0);
  if (!x) return;
  if (!extra_outputs_unused(i)) return;
  if (attr_int(n, "training_mode", 0) != 0) {
    return fail(i, "training_mode 1 is not supported (inference only)");
  }
  if (!x->channels_first && x->dims.size() != 1) {
    return fail(i, fmt::format("input [N, {}]: npusim normalises the channels of a feature map or "
                               "the features of an (N, features) tensor",
                               fmt::join(x->dims, ", ")));
  }
  const int64_t channels = x->dims[0];
  const char* roles[4] = {"scale", "bias", "mean", "variance"};
  const Constant* params[4];
  for (int k = 0; k < 4; ++k) {
    params[k] = constant(i, k + 1, roles[k]);
    if (!params[k]) return;
    if (params[k]->is_int || params[k]->elements() != static_cast<uint64_t>(channels)) {
      return fail(i, fmt::format("{} '{}' must have {} floats (one per channel), got shape {}",
                                 roles[k], n.input(k + 1), channels, dims_text(params[k]->dims)));
    }
  }
  const Layer* producer = x->layer >= 0 ? &graph_.layers[static_cast<size_t>(x->layer)] : nullptr;
  if (!producer || (producer->kind != OpKind::kConv && producer->kind != OpKind::kDense) ||
      ir_readers(x->ir_name) != 1) {
    return fail(i, fmt::format("input '{}' must come from a Conv, Gemm or MatMul whose output "
                               "nothing else reads: npusim folds batch normalization into it",
                               n.input(0)));
  }
  std::vector<int64_t> map;
  if (!x->flat_from.empty()) map = onnx_index_of_ir_index(x->flat_from);
  const std::string out = n.output(0);
  Value v = *x;
  Layer& l = add_layer(i, OpKind::kBatchNorm, {x->ir_name}, out);
  l.epsilon = attr_float(n, "epsilon", 1e-5f);
  l.gamma = permuted(params[0]->values, map);
  l.beta = permuted(params[1]->values, map);
  l.mean = permuted(params[2]->values, map);
  l.variance = permuted(params[3]->values, map);
  set_value(out, std::move(v));
}

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
    return fold_constant(i, *x, constants_.at(n.input(c0 ? 0 : 1)), kind);
  }
  const Value* a = activation(i, 0);
  const Value* b = activation(i, 1);
  if (!a || !b) return;
  if (a->dims != b->dims || a->channels_first != b->channels_first) {
    return fail(i, fmt::format("operands [N, {}] and [N, {}] must have the same shape (npusim "
                               "does not broadcast)",
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

// Add(x, constant) right after a Conv / Gemm / MatMul is that layer's bias; Mul(x, constant)
// scales its output channels, so it scales the weights and the bias.
void OnnxImporter::fold_constant(int i, const Value& x, const Constant& c, OpKind kind) {
  const Node& n = g_.node(i);
  const bool add = kind == OpKind::kAdd;
  Layer* producer = x.layer >= 0 ? &graph_.layers[static_cast<size_t>(x.layer)] : nullptr;
  const bool foldable = producer &&
                        (producer->kind == OpKind::kConv || producer->kind == OpKind::kDense) &&
                        ir_readers(x.ir_name) == 1 && producer->output == x.ir_name;
  if (!foldable) {
    return fail(i, fmt::format("{} of a constant is supported only as the {} of the Conv, Gemm "
                               "or MatMul right before it, whose output nothing else reads",
                               add ? "Add" : "Mul", add ? "bias" : "per-channel scale"));
  }
  if (c.is_int) return fail(i, "the constant must be float");
  // Accepted broadcast shapes: a scalar, or one value per output channel / unit.
  std::vector<int64_t> dims = c.dims;
  while (!dims.empty() && dims.front() == 1) dims.erase(dims.begin());
  const int64_t units = producer->filters;
  bool per_unit;
  if (producer->kind == OpKind::kConv) {
    std::vector<int64_t> expected(x.dims.size(), 1);
    expected[0] = units;
    per_unit = dims == expected;
  } else {
    per_unit = dims == std::vector<int64_t>{units};
  }
  if (!per_unit && c.elements() != 1) {
    return fail(i, fmt::format("the constant {} is not {} {} {}", dims_text(c.dims),
                               add ? "a bias of" : "a scale of", units,
                               producer->kind == OpKind::kConv ? "channels" : "units"));
  }
  auto value = [&](size_t u) { return c.values[per_unit ? u : 0]; };
  // Weights are [..][out] in both layouts: the output channel is the fastest index.
  if (!add) {
    for (size_t k = 0; k < producer->weights.size(); ++k) {
      producer->weights[k] *= value(k % static_cast<size_t>(units));
    }
  }
  for (size_t u = 0; u < static_cast<size_t>(units); ++u) {
    producer->bias[u] = add ? producer->bias[u] + value(u) : producer->bias[u] * value(u);
  }
  if (add) producer->use_bias = true;
  producer->output = n.output(0);
  Value v = x;
  v.ir_name = n.output(0);
  values_[n.output(0)] = std::move(v);
}

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

// A flatten to [N, elements] of the value x, as a Flatten or a Reshape.
void flatten_value(const Value& x, Value& v) {
  v.dims = {product(x.dims)};
  v.channels_first = false;
  v.flat_from.clear();
  if (x.channels_first && x.dims[0] > 1 && product(x.dims, 1) > 1) v.flat_from = x.dims;
  if (!x.flat_from.empty()) v.flat_from = x.flat_from;
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
  const bool out_channels_first = per_sample.size() >= 3;
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

// Normalises `axes` against `rank` (with the batch); the batch axis 0 may not be among them.
std::string normalize_axes(std::vector<int64_t>& axes, int64_t rank) {
  for (int64_t& a : axes) {
    const int64_t original = a;
    if (a < 0) a += rank;
    if (a < 0 || a >= rank)
      return fmt::format("axis {} is out of range for rank {}", original, rank);
    if (a == 0) return "the batch axis 0 cannot be squeezed, unsqueezed or reduced";
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) return "an axis appears twice";
  return "";
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

// ReduceMean over every spatial axis of a feature map is a global average pool.
void OnnxImporter::import_reduce_mean(int i) {
  const Node& n = g_.node(i);
  const Value* x = activation(i, 0);
  if (!x) return;
  std::vector<int64_t> axes;
  bool given;
  if (!read_axes(i, 18, axes, given)) return;
  const int64_t rank = static_cast<int64_t>(x->dims.size()) + 1;
  if (auto problem = normalize_axes(axes, rank); !problem.empty()) return fail(i, problem);
  std::vector<int64_t> spatial;
  for (int64_t a = 2; a < rank; ++a) spatial.push_back(a);
  if (!spatial_input(*x) || !given || axes != spatial) {
    return fail(i, fmt::format("axes {} on input [N, {}]: npusim averages over all the spatial "
                               "axes of a channels-first feature map only (a global average "
                               "pool, axes {})",
                               dims_text(axes), fmt::join(x->dims, ", "), dims_text(spatial)));
  }
  const bool keepdims = attr_int(n, "keepdims", 1) != 0;
  const std::string out = n.output(0);
  std::string pooled = keepdims ? out : out + "_pooled";
  while (!keepdims &&
         (values_.count(pooled) || constants_.count(pooled) || consumers_.count(pooled))) {
    pooled += "_";
  }
  Value v;
  v.channels_first = true;
  v.dims.assign(x->dims.size(), 1);
  v.dims[0] = x->dims[0];
  add_layer(i, OpKind::kAvgPool, {x->ir_name}, pooled).global_pool = true;
  set_value(pooled, v);
  if (keepdims) return;
  Value flat;
  flatten_value(v, flat);
  add_layer(i, OpKind::kReshape, {pooled}, out);
  set_value(out, std::move(flat));
}

// Zero padding of the spatial axes of a feature map, folded into the Conv that reads it.
void OnnxImporter::import_pad(int i) {
  const Node& n = g_.node(i);
  const Value* x = activation(i, 0);
  if (!x) return;
  if (!spatial_input(*x)) return fail(i, spatial_input_problem(*x));
  const std::string mode = attr_string(n, "mode", "constant");
  if (mode != "constant") {
    return fail(i, fmt::format("mode '{}': only constant (zero) padding is supported", mode));
  }
  if (n.input_size() > 3 && !n.input(3).empty()) return fail(i, "the axes input is not supported");
  const Constant* pads = constant(i, 1, "pads");
  if (!pads) return;
  const size_t rank = x->dims.size() + 1, s = rank - 2;
  if (!pads->is_int || pads->ints.size() != 2 * rank) {
    return fail(i, fmt::format("pads '{}' must be {} integers (begins, then ends, per axis)",
                               n.input(1), 2 * rank));
  }
  const auto& p = pads->ints;
  if (p[0] != 0 || p[1] != 0 || p[rank] != 0 || p[rank + 1] != 0 ||
      std::any_of(p.begin(), p.end(), [](int64_t v) { return v < 0; })) {
    return fail(i, fmt::format("pads {}: only non-negative padding of the spatial axes is "
                               "supported",
                               dims_text(p)));
  }
  if (const Constant* value = optional_constant(i, 2, "constant_value")) {
    if (value->is_int || value->values.size() != 1 || value->values[0] != 0.0f) {
      return fail(i, "constant_value must be 0 (npusim folds Pad into a Conv's zero padding)");
    }
  } else if (n.input_size() > 2 && !n.input(2).empty()) {
    return;
  }
  Value v = *x;
  v.pending_pads.assign(2 * s, 0);
  for (size_t a = 0; a < s; ++a) {
    v.pending_pads[a] = p[2 + a];
    v.pending_pads[s + a] = p[rank + 2 + a];
    v.dims[1 + a] += p[2 + a] + p[rank + 2 + a];
  }
  alias(i, v);
}

// A Transpose of the last two axes of a (N, ..., rows, columns) tensor, folded into the MatMul
// that reads it as its second input (attention's Q x K^T).
void OnnxImporter::import_transpose(int i) {
  const Node& n = g_.node(i);
  const Value* x = activation(i, 0);
  if (!x) return;
  const size_t rank = x->dims.size() + 1;
  std::vector<int64_t> swap_last(rank);
  for (size_t a = 0; a < rank; ++a) swap_last[a] = static_cast<int64_t>(a);
  if (rank >= 3) std::swap(swap_last[rank - 1], swap_last[rank - 2]);
  const auto perm = attr_ints(n, "perm", {});
  if (x->channels_first || rank < 3 || perm != swap_last || !x->flat_from.empty()) {
    return fail(i, fmt::format("perm {} on input [N, {}]{}: npusim supports only swapping the last "
                               "two axes of a (N, ..., rows, columns) tensor, perm {}, feeding a "
                               "MatMul",
                               dims_text(perm), fmt::join(x->dims, ", "),
                               x->channels_first ? " (channels first)" : "", dims_text(swap_last)));
  }
  Value v = *x;
  std::swap(v.dims[rank - 2], v.dims[rank - 3]);
  v.pending_transpose = true;
  alias(i, v);
}

void OnnxImporter::import_dense(int i, const Value& a, const Constant& b, bool trans_b, float alpha,
                                const Constant* c, float beta) {
  const Node& n = g_.node(i);
  if (a.channels_first) {
    return fail(i, fmt::format("input '{}' is a channels-first feature map [N, {}]; Flatten it "
                               "first",
                               a.ir_name, fmt::join(a.dims, ", ")));
  }
  if (b.is_int || b.dims.size() != 2 || b.dims[0] < 1 || b.dims[1] < 1) {
    return fail(i, fmt::format("weights '{}' must be a non-empty 2-D float matrix, got {}",
                               n.input(1), dims_text(b.dims)));
  }
  const int64_t k = trans_b ? b.dims[1] : b.dims[0];
  const int64_t units = trans_b ? b.dims[0] : b.dims[1];
  if (k != a.dims.back()) {
    return fail(i, fmt::format("weights '{}' {}{} need {} input features, but input '{}' has {}",
                               n.input(1), dims_text(b.dims), trans_b ? " (transB)" : "", k,
                               a.ir_name, a.dims.back()));
  }
  if (c && (c->is_int || (c->elements() != 1 && c->elements() != static_cast<uint64_t>(units)) ||
            (c->dims.size() == 2 && c->dims[0] != 1))) {
    return fail(i, fmt::format("bias '{}' {} must be a scalar or {} floats", n.input(2),
                               dims_text(c->dims), units));
  }
  std::vector<int64_t> rows;
  if (!a.flat_from.empty()) rows = onnx_index_of_ir_index(a.flat_from);
  const std::string out = n.output(0);
  Value v;
  v.dims = a.dims;
  v.dims.back() = units;
  Layer& l = add_layer(i, OpKind::kDense, {a.ir_name}, out);
  l.filters = static_cast<int>(units);
  l.weights.resize(static_cast<size_t>(k * units));
  for (int64_t r = 0; r < k; ++r) {
    const int64_t src = rows.empty() ? r : rows[static_cast<size_t>(r)];
    for (int64_t u = 0; u < units; ++u) {
      const float w = trans_b ? b.values[static_cast<size_t>(u * k + src)]
                              : b.values[static_cast<size_t>(src * units + u)];
      l.weights[static_cast<size_t>(r * units + u)] = alpha * w;
    }
  }
  l.use_bias = c != nullptr;
  l.bias.assign(static_cast<size_t>(units), 0.0f);
  for (int64_t u = 0; c && u < units; ++u) {
    l.bias[static_cast<size_t>(u)] =
        beta * c->values[c->elements() == 1 ? 0 : static_cast<size_t>(u)];
  }
  set_value(out, std::move(v));
}

void OnnxImporter::import_gemm(int i) {
  const Node& n = g_.node(i);
  if (attr_int(n, "transA", 0) != 0) return fail(i, "transA 1 is not supported");
  const Value* a = activation(i, 0);
  if (!a) return;
  if (a->dims.size() != 1) {
    return fail(i,
                fmt::format("input A [N, {}] must be 2-D (N, features)", fmt::join(a->dims, ", ")));
  }
  const Constant* b = constant(i, 1, "B");
  if (!b) return;
  const Constant* c = optional_constant(i, 2, "C");
  if (n.input_size() > 2 && !n.input(2).empty() && !c) return;
  import_dense(i, *a, *b, attr_int(n, "transB", 0) != 0, attr_float(n, "alpha", 1.0f), c,
               attr_float(n, "beta", 1.0f));
}

void OnnxImporter::import_matmul(int i) {
  const Node& n = g_.node(i);
  if (n.input_size() != 2) return fail(i, fmt::format("expects 2 inputs, got {}", n.input_size()));
  if (is_constant(n.input(1))) {
    const Value* a = activation(i, 0);
    if (!a) return;
    return import_dense(i, *a, constants_.at(n.input(1)), false, 1.0f, nullptr, 1.0f);
  }
  const Value* a = activation(i, 0);
  const Value* b = activation(i, 1, true);
  if (!a || !b) return;
  if (!b->pending_pads.empty()) {
    return fail(i, fmt::format("input 1 ('{}') comes from a Pad; npusim supports Pad only as "
                               "zero padding folded into the Conv that reads it",
                               n.input(1)));
  }
  if (a->channels_first || b->channels_first || a->dims.size() < 2 ||
      a->dims.size() != b->dims.size()) {
    return fail(i, fmt::format("MatMul of two run-time tensors needs two (N, ..., rows, columns) "
                               "tensors of the same rank; got [N, {}] and [N, {}]",
                               fmt::join(a->dims, ", "), fmt::join(b->dims, ", ")));
  }
  const size_t r = a->dims.size();
  const bool lead_match = std::equal(a->dims.begin(), a->dims.end() - 2, b->dims.begin());
  if (!lead_match || a->dims[r - 1] != b->dims[r - 2]) {
    return fail(i, fmt::format("shapes [N, {}] and [N, {}] do not multiply (no broadcasting)",
                               fmt::join(a->dims, ", "), fmt::join(b->dims, ", ")));
  }
  const std::string out = n.output(0);
  Value v = *a;
  v.dims.back() = b->dims.back();
  add_layer(i, OpKind::kMatMul, {a->ir_name, b->ir_name}, out).transpose_b = b->pending_transpose;
  set_value(out, std::move(v));
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

void OnnxImporter::import_node(int i) {
  const Node& n = g_.node(i);
  if (skipped_nodes_.count(i)) return;
  for (const auto& in : n.input()) {
    if (!in.empty() && poisoned_.count(in)) {
      for (const auto& out : n.output()) poisoned_.insert(out);
      return;
    }
  }
  if (n.output_size() < 1 || n.output(0).empty()) return fail(i, "has no output");
  if (auto it = gelu_input_at_.find(i); it != gelu_input_at_.end()) {
    auto x = values_.find(it->second);
    if (x == values_.end() || !x->second.pending_pads.empty() || x->second.pending_transpose) {
      return fail(i, fmt::format("GELU input '{}' is not a run-time tensor", it->second));
    }
    const std::string out = n.output(0);
    Value v = x->second;
    add_layer(i, OpKind::kActivation, {x->second.ir_name}, out).activation = Activation::kGelu;
    return set_value(out, std::move(v));
  }
  const std::string& op = n.op_type();
  const bool default_domain = n.domain().empty() || n.domain() == "ai.onnx";
  if (n.domain() == "com.microsoft" && op == "Gelu") return import_activation(i, Activation::kGelu);
  if (!default_domain) {
    return fail(i, fmt::format("operator domain '{}' is not supported (supported: the default "
                               "domain, and com.microsoft for Gelu)",
                               n.domain()));
  }
  if (n.input_size() < 1 && op != "Constant") return fail(i, "has no input");
  if (op == "Conv") return import_conv(i);
  if (op == "Gemm") return import_gemm(i);
  if (op == "MatMul") return import_matmul(i);
  if (op == "Add") return import_binary(i, OpKind::kAdd);
  if (op == "Mul") return import_binary(i, OpKind::kMul);
  if (op == "Relu") return import_activation(i, Activation::kRelu);
  if (op == "Sigmoid") return import_activation(i, Activation::kSigmoid);
  if (op == "Tanh") return import_activation(i, Activation::kTanh);
  if (op == "Gelu") {
    if (attr_string(n, "approximate", "none") != "none") {
      return fail(i, fmt::format("approximate '{}' is not supported (only the erf form, 'none')",
                                 attr_string(n, "approximate", "none")));
    }
    return import_activation(i, Activation::kGelu);
  }
  if (op == "Clip") return import_clip(i);
  if (op == "Softmax") return import_softmax(i);
  if (op == "LayerNormalization") return import_layer_norm(i);
  if (op == "BatchNormalization") return import_batch_norm(i);
  if (op == "MaxPool") return import_pool(i, OpKind::kMaxPool);
  if (op == "AveragePool") return import_pool(i, OpKind::kAvgPool);
  if (op == "GlobalAveragePool") return import_global_pool(i, OpKind::kAvgPool);
  if (op == "GlobalMaxPool") return import_global_pool(i, OpKind::kMaxPool);
  if (op == "Concat") return import_concat(i);
  if (op == "Flatten") return import_flatten(i);
  if (op == "Reshape") return import_reshape(i);
  if (op == "Squeeze") return import_squeeze(i, false);
  if (op == "Unsqueeze") return import_squeeze(i, true);
  if (op == "ReduceMean") return import_reduce_mean(i);
  if (op == "Pad") return import_pad(i);
  if (op == "Transpose") return import_transpose(i);
  if (op == "Constant") return import_constant_node(i);
  if (op == "Identity" || op == "Dropout") {
    if (!extra_outputs_unused(i)) return;
    const Value* x = activation(i, 0);
    if (x) alias(i, *x);
    return;
  }
  if (op == "Erf") {
    return fail(i,
                "Erf is supported only inside the GELU pattern x * 0.5 * (1 + erf(x / "
                "sqrt(2)))");
  }
  const bool shape_op = op == "Shape" || op == "Size" || op == "ConstantOfShape";
  fail(i, fmt::format("operator not supported (supported: {}){}", kSupportedOps,
                      shape_op ? "; npusim needs shapes known at import: give Reshape a constant "
                                 "shape (an initializer or a Constant node)"
                               : ""));
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
    const Value& v = it->second;
    if (!v.pending_pads.empty() || v.pending_transpose) {
      diag_.error(where, v.pending_transpose
                             ? "comes from a Transpose, which npusim supports only as the second "
                               "input of a MatMul"
                             : "comes from a Pad, which npusim supports only before a Conv");
      continue;
    }
    if (!v.flat_from.empty()) {
      diag_.error(where,
                  "is a flattened channels-first feature map; npusim flattens in H, W, C "
                  "order, not ONNX's C, H, W, and has no transpose");
      continue;
    }
    if (v.ir_name != name) {
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
  }
}

Graph OnnxImporter::run() {
  check_opset();
  read_initializers();
  read_input();
  count_consumers();
  find_gelu_patterns();
  for (int i = 0; i < g_.node_size(); ++i) import_node(i);
  finish_outputs();
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

}  // namespace

Graph import_onnx(const std::string& path, std::optional<int> batch) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(fmt::format("{}: cannot open the file", path));
  onnx::ModelProto model;
  if (!model.ParseFromIstream(&in)) {
    throw UserError(fmt::format("{}: not a valid ONNX model (protobuf parse failed)", path));
  }
  if (!model.has_graph() || model.graph().node_size() == 0 || model.ir_version() <= 0) {
    throw UserError(
        fmt::format("{}: not a valid ONNX model (no ir_version or no graph nodes)", path));
  }
  if (batch && *batch < 1) throw UserError(fmt::format("--batch {}: must be at least 1", *batch));
  return OnnxImporter(model, path, batch).run();
}

}  // namespace npusim
