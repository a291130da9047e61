// ReduceMean, ReduceSum, ReduceMax of run-time tensors (docs/onnx.md "Operators"): pools. Over
// the spatial axes of a feature map a global pool; over other axes of a tensor in ONNX order the
// tensor is viewed as [outer, reduced, inner] and pooled with a (1, reduced) window, after a
// transposing move when the axes are not contiguous in memory. A sum is a dense layer with
// weights 1 along the reduced block.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "compiler/frontend/onnx/onnx_importer.hpp"

namespace npusim::onnx_frontend {

void OnnxImporter::import_reduce(int i, Reduce kind) {
  const Node& n = g_.node(i);
  const Value* x = activation(i, 0);
  if (!x) return;
  std::vector<int64_t> axes;
  bool given;
  if (!read_axes(i, kind == Reduce::kSum ? 13 : 18, axes, given)) return;
  if (!x->channels_first) return reduce_rows(i, *x, axes, given, kind);
  const int64_t rank = static_cast<int64_t>(x->dims.size()) + 1;
  if (auto problem = normalize_axes(axes, rank); !problem.empty()) return fail(i, problem);
  std::vector<int64_t> spatial;
  for (int64_t a = 2; a < rank; ++a) spatial.push_back(a);
  if (!spatial_input(*x) || !given || axes != spatial || kind == Reduce::kSum) {
    // Other axes of a feature map: in ONNX order first.
    return reduce_rows(i, *in_onnx_order(i, x), axes, given, kind);
  }
  const bool keepdims = attr_int(n, "keepdims", 1) != 0;
  const std::string out = n.output(0);
  std::string pooled = keepdims ? out : out + "_pooled";
  while (pooled != out &&
         (values_.count(pooled) || constants_.count(pooled) || consumers_.count(pooled))) {
    pooled += "_";
  }
  Value v;
  v.channels_first = true;
  v.dims.assign(x->dims.size(), 1);
  v.dims[0] = x->dims[0];
  if (kind == Reduce::kMax) {
    add_layer(i, OpKind::kMaxPool, {x->ir_name}, pooled).kernel =
        triple({x->dims.begin() + 1, x->dims.end()}, 1);
  } else {
    add_layer(i, OpKind::kAvgPool, {x->ir_name}, pooled).global_pool = true;
  }
  set_value(pooled, v);
  if (keepdims) return;
  Value flat;
  flatten_value(v, flat);
  add_layer(i, OpKind::kReshape, {pooled}, out);
  set_value(out, std::move(flat));
}

void OnnxImporter::reduce_rows(int i, const Value& x, std::vector<int64_t> axes, bool given,
                               Reduce kind) {
  const Node& n = g_.node(i);
  const std::string what = fmt::format("axes {} on input {}", dims_text(axes), dims_text(x.dims));
  if (!given || axes.empty()) {  // no axes, or an empty list: all of them (or none)
    if (attr_int(n, "noop_with_empty_axes", 0) != 0) return alias(i, x);
    axes.clear();
    for (int64_t a = 0; a < onnx_rank(x); ++a) axes.push_back(a);
  }
  std::vector<bool> reduced(x.dims.size(), false);
  for (int64_t a : axes) {
    const int s = sample_axis(x, a);
    if (s == -2) return fail(i, what + ": out of range");
    if (s == -1) return batch_axis_needed(i, what + ": a reduction over axis 0");
    reduced[static_cast<size_t>(s)] = true;
  }
  const bool keepdims = attr_int(n, "keepdims", 1) != 0;
  std::vector<int64_t> dims;
  for (size_t a = 0; a < x.dims.size(); ++a) {
    if (!reduced[a]) dims.push_back(x.dims[a]);
    if (reduced[a] && keepdims) dims.push_back(1);
  }
  if (dims.empty()) return fail(i, what + ": the result would be a scalar (use keepdims 1)");
  int lo = -1, hi = -1;  // the first and last reduced axis of size > 1
  for (size_t a = 0; a < x.dims.size(); ++a) {
    if (!reduced[a] || x.dims[a] == 1) continue;
    if (lo < 0) lo = static_cast<int>(a);
    hi = static_cast<int>(a);
  }
  if (lo < 0) return reshape_value(i, x, dims);  // only axes of size 1: nothing to reduce
  if (!x.flat_from.empty()) {
    return fail(i, what +
                       ": the input is a flattened channels-first feature map, whose element "
                       "order in npusim (H, W, C) differs from ONNX's");
  }
  const std::string out = n.output(0);
  const Value* src = &x;
  for (int a = lo; a <= hi; ++a) {
    if (reduced[size_t(a)] || x.dims[size_t(a)] == 1) continue;
    // Not contiguous: the reduced axes move last (the kept ones keep their order).
    std::vector<int64_t> perm;
    for (size_t k = 0; k < x.dims.size(); ++k) {
      if (!reduced[k]) perm.push_back(int64_t(k));
    }
    for (size_t k = 0; k < x.dims.size(); ++k) {
      if (reduced[k]) perm.push_back(int64_t(k));
    }
    src = permute_value(i, x, perm, fresh_name(out + "_reduced_last"));
    if (!src) return;
    lo = static_cast<int>(std::count(reduced.begin(), reduced.end(), false));
    hi = static_cast<int>(x.dims.size()) - 1;
    break;
  }
  const std::vector<int64_t>& d = src->dims;
  const int64_t outer = product(std::vector<int64_t>(d.begin(), d.begin() + lo));
  const int64_t mid = product(std::vector<int64_t>(d.begin() + lo, d.begin() + hi + 1));
  const int64_t inner = product(d, static_cast<size_t>(hi) + 1);
  // A sum over the last axes is a dense along the last axis of [outer, reduced].
  const bool sum_last = kind == Reduce::kSum && inner == 1;
  std::vector<int> view{static_cast<int>(outer), static_cast<int>(mid), static_cast<int>(inner)};
  if (sum_last) view.pop_back();
  std::string in = src->ir_name;
  if (ir_dims(*src) != view) {
    in = out + "_view";
    add_layer(i, OpKind::kReshape, {src->ir_name}, in).reshape_to = view;
  }
  const bool max = kind == Reduce::kMax;
  std::string pooled = out + (max ? "_max" : "_mean");
  if (kind == Reduce::kSum) {
    // A dense with weights 1 along the reduced block: its output scale is the sum's own (a mean
    // times the count would lose the count's bits in int8).
    Value rows;
    rows.batched = x.batched;
    rows.dims = {outer, mid};
    if (!sum_last) rows.dims.push_back(inner);
    rows.ir_name = in;
    rows.layer = static_cast<int>(graph_.layers.size()) - 1;
    pooled = fresh_name(out + "_sum");
    dense_along_axis(i, rows, 1, std::vector<float>(size_t(mid), 1.0f), 1, pooled);
    if (!values_.count(pooled)) return;
  } else {
    Layer& pool = add_layer(i, max ? OpKind::kMaxPool : OpKind::kAvgPool, {in}, pooled);
    pool.kernel = {1, 1, static_cast<int>(mid)};
  }
  Value v;
  v.batched = x.batched;
  v.dims = dims;
  add_layer(i, OpKind::kReshape, {pooled}, out).reshape_to = ir_dims(v);
  set_value(out, v);
}

}  // namespace npusim::onnx_frontend
