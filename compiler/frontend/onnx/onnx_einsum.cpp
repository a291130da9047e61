// Einsum of run-time tensors in its matrix-product forms (docs/onnx.md "Operators"): two
// operands with one summed letter, each other letter a batch axis (in both operands and the
// result), a row axis (first operand and result; several when there is no batch axis) or the
// column axis (second operand and result);
// written as Transpose -> MatMul -> Transpose nodes appended after the model's and imported at
// once. One operand: a Transpose and / or a ReduceSum over the letters the result drops.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>

#include "compiler/frontend/onnx/onnx_importer.hpp"
#include "compiler/frontend/onnx/onnx_tensor.hpp"

namespace npusim::onnx_frontend {

namespace {

onnx::AttributeProto ints_attribute(const std::string& name, const std::vector<int64_t>& v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a.add_ints(x);
  return a;
}

onnx::AttributeProto int_attribute(const std::string& name, int64_t v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INT);
  a.set_i(v);
  return a;
}

// The position in `term` of each letter of `order`.
std::vector<int64_t> positions(const std::string& term, const std::string& order) {
  std::vector<int64_t> p;
  for (char c : order) p.push_back(int64_t(term.find(c)));
  return p;
}

bool identity(const std::vector<int64_t>& perm) {
  for (size_t k = 0; k < perm.size(); ++k) {
    if (perm[k] != int64_t(k)) return false;
  }
  return true;
}

}  // namespace

void OnnxImporter::import_einsum(int i) {
  const Node& n = g_.node(i);
  std::string eq = attr_string(n, "equation", "");
  eq.erase(std::remove_if(eq.begin(), eq.end(), [](char c) { return c == ' '; }), eq.end());
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t at = 0;;) {
    const size_t comma = lhs.find(',', at);
    terms.push_back(lhs.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  std::string out;
  if (arrow != std::string::npos) {
    out = eq.substr(arrow + 2);
  } else {  // implicit: the letters that appear once, in alphabetical order
    for (char c = 'A'; c <= 'z'; ++c) {
      if (std::count(lhs.begin(), lhs.end(), c) == 1) out += c;
    }
  }
  auto refuse = [&](const std::string& why) {
    fail(i, fmt::format("equation '{}': {} (npusim runs Einsum's matrix products: 'bij,bjk->bik' "
                        "and its transposed forms, and one-operand transposes and sums)",
                        eq, why));
  };
  if (int(terms.size()) != n.input_size()) return refuse("one term per input expected");
  for (const auto& t : terms) {
    if (t.find('.') != std::string::npos) return refuse("ellipsis '...' is not supported");
    for (char c : t) {
      if (!std::isalpha(static_cast<unsigned char>(c))) return refuse("letters only");
      if (std::count(t.begin(), t.end(), c) != 1) return refuse("a repeated letter (a diagonal)");
    }
  }
  for (char c : out) {
    if (lhs.find(c) == std::string::npos) return refuse(fmt::format("'{}' is in no input", c));
  }
  const std::string base = n.name().empty() ? n.output(0) : n.name();
  auto transpose = [&](const std::string& x, const std::vector<int64_t>& perm,
                       const std::string& output = "") {
    return emit_node(base + "/transpose", "Transpose", {x}, output, 0,
                     {ints_attribute("perm", perm)});
  };
  if (terms.size() == 1) {
    const std::string& t = terms[0];
    std::string x = n.input(0), kept;
    std::vector<int64_t> summed;
    for (size_t k = 0; k < t.size(); ++k) {
      if (out.find(t[k]) == std::string::npos) {
        summed.push_back(int64_t(k));
      } else {
        kept += t[k];
      }
    }
    const auto perm = positions(kept, out);
    const bool last = identity(perm);
    if (!summed.empty()) {
      std::vector<onnx::AttributeProto> attrs{int_attribute("keepdims", 0)};
      std::vector<std::string> inputs{x};
      if (opset_ >= 13) {
        inputs.push_back(add_ints(base + "/axes", summed));
      } else {
        attrs.push_back(ints_attribute("axes", summed));
      }
      x = emit_node(base + "/sum", "ReduceSum", inputs, last ? n.output(0) : "", 0, attrs);
    }
    if (!last || summed.empty()) transpose(x, perm, n.output(0));
    return;
  }
  if (terms.size() != 2) return refuse("one or two operands expected");
  const std::string &a = terms[0], &b = terms[1];
  std::string batch, rows, cols, summed;
  for (char c : a) {
    const bool in_b = b.find(c) != std::string::npos, in_out = out.find(c) != std::string::npos;
    if (in_b && in_out) batch += c;
    if (in_b && !in_out) summed += c;
    if (!in_b && in_out) rows += c;
    if (!in_b && !in_out) return refuse(fmt::format("'{}' is summed within the first operand", c));
  }
  for (char c : b) {
    const bool in_a = a.find(c) != std::string::npos, in_out = out.find(c) != std::string::npos;
    if (!in_a && in_out) cols += c;
    if (!in_a && !in_out) return refuse(fmt::format("'{}' is summed within the second operand", c));
  }
  // Several row letters when there are no batch letters: MatMul takes A's leading axes as rows.
  if (summed.size() != 1 || rows.empty() || cols.size() != 1 ||
      (rows.size() > 1 && !batch.empty())) {
    return refuse(
        "one summed letter, one column letter and one row letter (several without batch "
        "letters) expected");
  }
  // A as [batch..., row, summed], B as [batch..., summed, column]; the product [batch..., row,
  // column] then takes the result's order.
  std::string x = n.input(0), y = n.input(1);
  const std::string a_order = batch + rows + summed, b_order = batch + summed + cols;
  if (const auto p = positions(a, a_order); !identity(p)) x = transpose(x, p);
  if (const auto p = positions(b, b_order); !identity(p)) y = transpose(y, p);
  const auto back = positions(batch + rows + cols, out);
  const bool last = identity(back);
  const std::string product =
      emit_node(base + "/matmul", "MatMul", {x, y}, last ? n.output(0) : "");
  if (!last) transpose(product, back, n.output(0));
}

}  // namespace npusim::onnx_frontend
