// Graph rewrites done while importing, on ONNX nodes: the Erf form of GELU recognised as one
// activation, RMSNorm's composition as one layer norm without the mean, and Add / Mul of a
// constant folded into the Conv or dense layer before them.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/frontend/onnx/onnx_importer.hpp"

namespace npusim::onnx_frontend {

namespace {

// Which node writes each tensor and which nodes read it.
struct NodeLinks {
  NodeLinks(const onnx::GraphProto& g, const std::set<std::string>& graph_outputs)
      : outputs(graph_outputs) {
    for (int i = 0; i < g.node_size(); ++i) {
      for (const auto& out : g.node(i).output()) producer[out] = i;
      for (const auto& in : g.node(i).input()) users[in].push_back(i);
    }
  }
  // The one node reading `tensor`, or -1 (none, several, or a graph output).
  int sole_user(const std::string& tensor) const {
    if (outputs.count(tensor)) return -1;
    auto it = users.find(tensor);
    return it != users.end() && it->second.size() == 1 ? it->second[0] : -1;
  }
  std::map<std::string, int> producer;
  std::map<std::string, std::vector<int>> users;
  const std::set<std::string>& outputs;
};

}  // namespace

// Finds x * 0.5 * (1 + erf(x / sqrt(2))) in the node orders exporters produce:
//   Div(x, sqrt2) | Mul(x, 1/sqrt2) -> Erf -> Add(., 1) -> then one of
//   Mul(x, .) -> Mul(., 0.5);   Mul(Mul(x, 0.5), .);   Mul(., 0.5) -> Mul(x, .)
void OnnxImporter::find_gelu_patterns() {
  const NodeLinks links(g_, graph_outputs_);
  const std::map<std::string, int>& producer = links.producer;
  auto sole_user = [&](const std::string& tensor) { return links.sole_user(tensor); };
  auto scalar = [&](const std::string& name, float expected) {
    auto it = constants_.find(name);
    return it != constants_.end() && !it->second.is_int && it->second.values.size() == 1 &&
           std::fabs(it->second.values[0] - expected) < 1e-3f;
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

// Add(x, constant) right after a Conv / Gemm / MatMul is that layer's bias; Mul(x, constant)
// scales its output channels, so it scales the weights and the bias.
bool OnnxImporter::fold_constant(int i, const Value& x, const Constant& c, OpKind kind) {
  const Node& n = g_.node(i);
  const bool add = kind == OpKind::kAdd;
  Layer* producer = x.layer >= 0 ? &graph_.layers[static_cast<size_t>(x.layer)] : nullptr;
  const bool foldable = producer && producer->has_weights() && ir_readers(x.ir_name) == 1 &&
                        producer->output == x.ir_name;
  if (!foldable || c.is_int) return false;
  // Accepted broadcast shapes: a scalar, or one value per output channel / unit.
  const auto first = std::find_if(c.dims.begin(), c.dims.end(), [](int64_t d) { return d != 1; });
  const std::vector<int64_t> dims(first, c.dims.end());
  const int64_t units = producer->filters;
  bool per_unit;
  if (producer->kind == OpKind::kConv) {
    // One value per channel: dims [units, 1, ..., 1] for the conv output's rank.
    per_unit = !dims.empty() && dims.size() == x.dims.size() && dims[0] == units &&
               std::all_of(dims.begin() + 1, dims.end(), [](int64_t d) { return d == 1; });
  } else {
    per_unit = dims == std::vector<int64_t>{units};
  }
  if (!per_unit && c.elements() != 1) return false;
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
  return true;
}

// Finds RMSNorm as torch exports it (a module's x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) +
// eps) * weight, Hugging Face's LlamaRMSNorm with its casts to float):
//   Pow(x, 2) | Mul(x, x) -> ReduceMean(last axis, keepdims) -> Add(., eps) -> Sqrt ->
//   Reciprocal | Div(1, .) -> Mul(x, .);  or Sqrt -> Div(x, .)
// then casts to float and a Mul by a constant weight, each optional. Every intermediate must have
// that one reader. The last node becomes the norm (import_rms_norm); the others are skipped.
void OnnxImporter::find_rms_norm_patterns() {
  const NodeLinks links(g_, graph_outputs_);
  const std::map<std::string, int>& producer = links.producer;
  auto sole_user = [&](const std::string& tensor) { return links.sole_user(tensor); };
  auto is_op = [&](int i, const char* op, int inputs) {
    return i >= 0 && g_.node(i).op_type() == op && g_.node(i).domain().empty() &&
           g_.node(i).input_size() == inputs && g_.node(i).output_size() == 1;
  };
  // A constant, from an initializer or a Constant node's `value`; null if neither.
  std::map<std::string, Constant> from_nodes;
  auto any_constant = [&](const std::string& name) -> const Constant* {
    if (auto it = constants_.find(name); it != constants_.end()) return &it->second;
    auto p = producer.find(name);
    if (p == producer.end() || g_.node(p->second).op_type() != "Constant") return nullptr;
    const auto* a = find_attr(g_.node(p->second), "value");
    if (!a || !a->has_t()) return nullptr;
    Constant c;
    if (!read_tensor(a->t(), c).empty()) return nullptr;
    return &(from_nodes[name] = std::move(c));
  };
  // The same, floats only.
  auto constant_of = [&](const std::string& name) -> const Constant* {
    const Constant* c = any_constant(name);
    return c && !c->is_int ? c : nullptr;
  };
  auto scalar = [&](const std::string& name, float* value) {
    const Constant* c = constant_of(name);
    if (!c || c->values.size() != 1) return false;
    if (value) *value = c->values[0];
    return true;
  };
  auto is_float_cast = [&](int i) {
    const auto* to = i >= 0 ? find_attr(g_.node(i), "to") : nullptr;
    return is_op(i, "Cast", 1) && to && to->i() == onnx::TensorProto_DataType_FLOAT;
  };
  for (int r = 0; r < g_.node_size(); ++r) {
    if (!is_op(r, "ReduceMean", 1) && !is_op(r, "ReduceMean", 2)) continue;
    const Node& reduce = g_.node(r);
    const auto* keep = find_attr(reduce, "keepdims");
    if (keep && keep->i() == 0) continue;
    std::vector<int64_t> axes;
    if (const auto* a = find_attr(reduce, "axes")) axes.assign(a->ints().begin(), a->ints().end());
    if (reduce.input_size() == 2) {  // opset 18: the axes an input
      const Constant* k = any_constant(reduce.input(1));
      if (k && k->is_int) axes = k->ints;
    }
    if (axes != std::vector<int64_t>{-1}) continue;
    // The square of x.
    auto sq = producer.find(reduce.input(0));
    if (sq == producer.end() || sole_user(reduce.input(0)) != r) continue;
    const Node& square = g_.node(sq->second);
    std::string x;
    float two = 0.0f;
    if (is_op(sq->second, "Pow", 2) && scalar(square.input(1), &two) && two == 2.0f) {
      x = square.input(0);
    } else if (is_op(sq->second, "Mul", 2) && square.input(0) == square.input(1)) {
      x = square.input(0);
    }
    if (x.empty() || constant_of(x)) continue;
    // + eps, sqrt, then 1 / s times x (or x / s).
    const int add = sole_user(reduce.output(0));
    if (!is_op(add, "Add", 2)) continue;
    const Node& a = g_.node(add);
    float eps = 0.0f;
    const std::string& eps_name = a.input(0) == reduce.output(0) ? a.input(1) : a.input(0);
    if (!scalar(eps_name, &eps) || !(eps >= 0.0f)) continue;
    const int root = sole_user(a.output(0));
    if (!is_op(root, "Sqrt", 1)) continue;
    const std::string& s = g_.node(root).output(0);
    const int inv = sole_user(s);
    std::vector<int> members{sq->second, r, add, root, inv};
    int normalized = -1;  // the node whose output is x / sqrt(...)
    float one = 0.0f;
    if (is_op(inv, "Div", 2) && g_.node(inv).input(1) == s && g_.node(inv).input(0) == x) {
      normalized = inv;
    } else if ((is_op(inv, "Reciprocal", 1) ||
                (is_op(inv, "Div", 2) && g_.node(inv).input(1) == s &&
                 scalar(g_.node(inv).input(0), &one) && one == 1.0f))) {
      const int mul = sole_user(g_.node(inv).output(0));
      if (!is_op(mul, "Mul", 2)) continue;
      const Node& m = g_.node(mul);
      const std::string& r_name = g_.node(inv).output(0);
      if (!((m.input(0) == x && m.input(1) == r_name) ||
            (m.input(1) == x && m.input(0) == r_name))) {
        continue;
      }
      normalized = mul;
      members.push_back(mul);
    }
    if (normalized < 0) continue;
    int last = normalized;
    for (int next = sole_user(g_.node(last).output(0)); is_float_cast(next);
         next = sole_user(g_.node(last).output(0))) {
      last = next;
      members.push_back(next);
    }
    RmsNormPattern pattern{x, "", eps};
    const int weight = sole_user(g_.node(last).output(0));
    if (is_op(weight, "Mul", 2)) {
      const Node& w = g_.node(weight);
      const std::string& other = w.input(0) == g_.node(last).output(0) ? w.input(1) : w.input(0);
      if (const Constant* c = constant_of(other); c && !c->values.empty()) {
        pattern.scale = other;
        last = weight;
        members.push_back(weight);
      }
    }
    for (int m : members) {
      if (m != last) skipped_nodes_.insert(m);
    }
    rms_norm_at_[last] = pattern;
  }
}

// An Erf that find_gelu_patterns did not take into a GELU: the erf activation (a table in int8).
void OnnxImporter::import_erf(int i) { import_activation(i, Activation::kErf); }

}  // namespace npusim::onnx_frontend
