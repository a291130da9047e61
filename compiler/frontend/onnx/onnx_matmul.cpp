// ONNX translators of the matrix family: Gemm and MatMul by a constant (dense layers) and
// MatMul of two run-time tensors (a Transpose of its second input folds into it in
// compiler/passes/move_folding.cpp).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "compiler/frontend/onnx/onnx_importer.hpp"

namespace npusim::onnx_frontend {

void OnnxImporter::import_dense(int i, const Value& a, const Constant& b, bool trans_b, float alpha,
                                const Constant* c, float beta, const std::string& output) {
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
  const std::string out = output.empty() ? n.output(0) : output;
  Value v;
  v.batched = a.batched;
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
  const Value* a = activation(i, 0);
  if (!a) return;
  if (attr_int(n, "transA", 0) != 0) {  // A transposed by a move first
    if (a->batched) return batch_axis_needed(i, "transA 1 transposes axis 0");
    if (a->dims.size() != 2) {
      return fail(i, fmt::format("input A {} must be 2-D (features, rows) with transA 1",
                                 dims_text(a->dims)));
    }
    a = permute_value(i, *a, {1, 0}, n.output(0) + "_transposed");
    if (!a) return;
  }
  if (onnx_rank(*a) != 2) {
    return fail(i, fmt::format("input A {} must be 2-D (rows, features)", dims_text(a->dims)));
  }
  const Constant* b = constant(i, 1, "B");
  if (!b) return;
  const Constant* c = optional_constant(i, 2, "C");
  if (n.input_size() > 2 && !n.input(2).empty() && !c) return;
  const bool trans_b = attr_int(n, "transB", 0) != 0;
  const float alpha = attr_float(n, "alpha", 1.0f), beta = attr_float(n, "beta", 1.0f);
  const int64_t units = b->dims.size() == 2 ? b->dims[trans_b ? 0 : 1] : 0;
  const bool row_bias =
      !c || c->is_int || c->elements() == 1 ||
      (c->elements() == static_cast<uint64_t>(units) && (c->dims.size() < 2 || c->dims[0] == 1));
  if (row_bias) return import_dense(i, *a, *b, trans_b, alpha, c, beta);
  // A bias that differs per row (C of shape (M, N) or (M, 1)): the product, then y + beta * C
  // as a depthwise 1x1 conv.
  const std::string product_name = g_.node(i).output(0) + "_product";
  import_dense(i, *a, *b, trans_b, alpha, nullptr, 1.0f, product_name);
  auto it = values_.find(product_name);
  if (it == values_.end()) return;
  std::vector<float> shift;
  if (std::string problem = broadcast_to(it->second, *c, shift); !problem.empty()) {
    return fail(i, "C: " + problem);
  }
  for (float& s : shift) s *= beta;
  std::vector<float> ones(shift.size(), 1.0f);
  import_affine(i, it->second, std::move(ones), std::move(shift));
}

// MatMul by a constant B: a dense layer over A's last axis. B of rank 1 (K) is a (K, 1) matrix
// whose unit axis the result drops; B of rank 3 or 4 repeats one matrix (leading axes of size 1,
// no more axes than A) or has A's rank and a matrix per leading index (onnx_compose.cpp).
void OnnxImporter::import_matmul_constant(int i, const Value& a, const Constant& b) {
  const std::string out = g_.node(i).output(0);
  if (b.dims.size() > 2) {
    const bool one_matrix =
        std::all_of(b.dims.begin(), b.dims.end() - 2, [](int64_t d) { return d == 1; });
    if (!one_matrix && static_cast<int64_t>(b.dims.size()) == onnx_rank(a)) {
      return matmul_per_index(i, a, b);  // onnx_compose.cpp
    }
    if (!one_matrix || static_cast<int64_t>(b.dims.size()) > onnx_rank(a)) {
      return fail(i, fmt::format("weights '{}' {}: npusim multiplies by one matrix (leading axes "
                                 "of size 1, no more axes than input A {}); a different matrix "
                                 "per leading index is not supported",
                                 g_.node(i).input(1), dims_text(b.dims), dims_text(a.dims)));
    }
    Constant matrix = b;
    matrix.dims.assign(b.dims.end() - 2, b.dims.end());
    return import_dense(i, a, matrix, false, 1.0f, nullptr, 1.0f);
  }
  if (b.dims.size() != 1) return import_dense(i, a, b, false, 1.0f, nullptr, 1.0f);
  if (a.dims.size() < 2) {
    return fail(i, fmt::format("A {} times a vector would leave no axis besides the batch",
                               dims_text(a.dims)));
  }
  Constant column = b;
  column.dims = {b.dims[0], 1};
  const std::string column_out = out + "_column";
  import_dense(i, a, column, false, 1.0f, nullptr, 1.0f, column_out);
  auto it = values_.find(column_out);
  if (it == values_.end()) return;
  Value v = it->second;
  v.dims.pop_back();
  add_layer(i, OpKind::kReshape, {column_out}, out).reshape_to = ir_dims(v);
  set_value(out, std::move(v));
}

void OnnxImporter::import_matmul(int i) {
  const Node& n = g_.node(i);
  if (n.input_size() != 2) return fail(i, fmt::format("expects 2 inputs, got {}", n.input_size()));
  if (is_constant(n.input(1))) {
    const Value* a = in_onnx_order(i, activation(i, 0));
    if (!a) return;
    return import_matmul_constant(i, *a, constants_.at(n.input(1)));
  }
  // A rank-4 / rank-5 tensor read as a stack of matrices: in ONNX order.
  const Value* a = in_onnx_order(i, activation(i, 0));
  const Value* b = in_onnx_order(i, activation(i, 1));
  if (!a || !b) return;
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
  add_layer(i, OpKind::kMatMul, {a->ir_name, b->ir_name}, out);
  set_value(out, std::move(v));
}

}  // namespace npusim::onnx_frontend
