// Tile, GatherElements and GatherND of run-time tensors with constant repeats / indices: data
// movement (a `move` layer, compiler/frontend/onnx/onnx_movement.hpp), or a constant when the
// data is one too.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/frontend/onnx/onnx_importer.hpp"

namespace npusim::onnx_frontend {

namespace {
// Whether operand 0 is a batched run-time tensor (its axis 0 the batch, of size 1 here).
bool batched_operand(const MoveOperand& op) { return op.value && op.value->batched; }
}  // namespace

void OnnxImporter::import_tile(int i) {
  const Node& n = g_.node(i);
  std::vector<MoveOperand> ops;
  if (!move_operands(i, ops, 1)) return;
  const Constant* r = constant(i, 1, "repeats");
  if (!r) return;
  const std::vector<int64_t>& x = ops[0].dims;
  if (!r->is_int || r->ints.size() != x.size()) {
    return fail(i, fmt::format("repeats must be {} integers (one per axis), got {}", x.size(),
                               dims_text(r->dims)));
  }
  MoveSpec spec;
  for (size_t a = 0; a < x.size(); ++a) {
    if (r->ints[a] < 1) return fail(i, fmt::format("repeats {} must be positive", r->ints[a]));
    spec.dims.push_back(x[a] * r->ints[a]);
  }
  if (batched_operand(ops[0]) && r->ints[0] != 1) {
    return batch_axis_needed(i, fmt::format("repeats {} along axis 0", r->ints[0]));
  }
  spec.source = [x](const std::vector<int64_t>& out, std::vector<int64_t>& in) {
    for (size_t a = 0; a < out.size(); ++a) in.push_back(out[a] % x[a]);
    return 0;
  };
  emit_move(i, n.output(0), "tile", ops, spec);
}

void OnnxImporter::import_gather_elements(int i) {
  const Node& n = g_.node(i);
  std::vector<MoveOperand> ops;
  if (!move_operands(i, ops, 1)) return;
  const Constant* idx = constant(i, 1, "indices");
  if (!idx) return;
  const std::vector<int64_t>& x = ops[0].dims;
  if (!idx->is_int || idx->dims.size() != x.size()) {
    return fail(i, fmt::format("indices must be integers of the data's rank {}, got {}", x.size(),
                               dims_text(idx->dims)));
  }
  std::vector<int64_t> axis_v{attr_int(n, "axis", 0)};
  if (auto problem = normalize(axis_v, x.size()); !problem.empty()) return fail(i, problem);
  const auto axis = size_t(axis_v[0]);
  if (batched_operand(ops[0]) && (axis == 0 || idx->dims[0] != 1)) {
    return batch_axis_needed(i, "a gather along or across axis 0");
  }
  for (size_t a = 0; a < x.size(); ++a) {
    if (a != axis && idx->dims[a] > x[a]) {
      return fail(i, fmt::format("indices {} exceed the data {} along axis {}",
                                 dims_text(idx->dims), dims_text(x), a));
    }
  }
  std::vector<int64_t> index = idx->ints;
  for (int64_t& v : index) {
    if (v < -x[axis] || v >= x[axis]) {
      return fail(i,
                  fmt::format("index {} is out of range for axis {} of size {}", v, axis, x[axis]));
    }
    if (v < 0) v += x[axis];
  }
  MoveSpec spec;
  spec.dims = idx->dims;
  const auto strides = row_major_strides(idx->dims);
  spec.source = [=](const std::vector<int64_t>& out, std::vector<int64_t>& in) {
    int64_t flat = 0;
    for (size_t a = 0; a < out.size(); ++a) flat += out[a] * strides[a];
    in = out;
    in[axis] = index[size_t(flat)];
    return 0;
  };
  emit_move(i, n.output(0), "gather_elements", ops, spec);
}

void OnnxImporter::import_gather_nd(int i) {
  const Node& n = g_.node(i);
  std::vector<MoveOperand> ops;
  if (!move_operands(i, ops, 1)) return;
  const Constant* idx = constant(i, 1, "indices");
  if (!idx) return;
  const std::vector<int64_t>& x = ops[0].dims;
  const int64_t b = attr_int(n, "batch_dims", 0);
  const size_t q = idx->dims.size();
  if (batched_operand(ops[0]) && (b == 0 || (q > 0 && idx->dims[0] != 1))) {
    return batch_axis_needed(i, "indices into or across axis 0");
  }
  if (!idx->is_int || q < 1 || b < 0 || size_t(b) >= q || size_t(b) >= x.size()) {
    return fail(i, fmt::format("indices {} and batch_dims {} do not fit the data {}",
                               dims_text(idx->dims), b, dims_text(x)));
  }
  const int64_t k = idx->dims.back();
  if (k < 1 || size_t(b + k) > x.size()) {
    return fail(i, fmt::format("indices {} index {} axes after the {} batch axes of the data {}",
                               dims_text(idx->dims), k, b, dims_text(x)));
  }
  for (int64_t a = 0; a < b; ++a) {
    if (idx->dims[size_t(a)] != x[size_t(a)]) {
      return fail(i, fmt::format("indices {} and data {} differ in batch axis {}",
                                 dims_text(idx->dims), dims_text(x), a));
    }
  }
  std::vector<int64_t> index = idx->ints;
  for (size_t f = 0; f < index.size(); ++f) {
    const int64_t size = x[size_t(b) + f % size_t(k)];
    int64_t& v = index[f];
    if (v < -size || v >= size) {
      return fail(i, fmt::format("index {} is out of range for an axis of size {}", v, size));
    }
    if (v < 0) v += size;
  }
  MoveSpec spec;
  spec.dims.assign(idx->dims.begin(), idx->dims.end() - 1);
  spec.dims.insert(spec.dims.end(), x.begin() + b + k, x.end());
  const auto strides = row_major_strides(idx->dims);
  spec.source = [=](const std::vector<int64_t>& out, std::vector<int64_t>& in) {
    // out = (index axes of `indices` but the last) + (the data's axes after b + k)
    int64_t flat = 0;
    for (size_t a = 0; a + 1 < q; ++a) flat += out[a] * strides[a];
    in.assign(out.begin(), out.begin() + b);
    for (int64_t j = 0; j < k; ++j) in.push_back(index[size_t(flat + j)]);
    in.insert(in.end(), out.begin() + long(q - 1), out.end());
    return 0;
  };
  emit_move(i, n.output(0), "gather_nd", ops, spec);
}

}  // namespace npusim::onnx_frontend
