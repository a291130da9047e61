// ONNX translators of the spatial family: Conv, the pools and ReduceMean as a global average
// pool (a Pad before a Conv folds into it in compiler/passes/move_folding.cpp).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "compiler/frontend/onnx/onnx_importer.hpp"

namespace npusim::onnx_frontend {

// A batched rank-4 / rank-5 tensor in ONNX order (a linear Resize's result, for one) read where a
// feature map is expected: a layout move to channels first, made once per tensor.
const Value* OnnxImporter::as_feature_map(int i, const Value* x) {
  if (!x || x->channels_first || !x->batched || !x->flat_from.empty() ||
      (x->dims.size() != 3 && x->dims.size() != 4)) {
    return x;
  }
  const std::string name = x->ir_name + "_channels_first";
  if (!values_.count(name)) {
    Value to = *x;
    to.channels_first = true;
    add_relayout(*x, true, name, where(i));
    set_value(name, to);
  }
  return &values_.at(name);
}

namespace {

// The window attributes of node n with a leading axis of 1 (a kernel of 1, stride 1, dilation 1,
// no padding): n's window over a map one spatial axis deeper, as a batch-in-depth map
// (Value::batch_in_depth) or a 1-D pool's map of height 1 reads it.
onnx::NodeProto with_leading_window_axis(const onnx::NodeProto& node) {
  onnx::NodeProto n = node;
  for (auto& a : *n.mutable_attribute()) {
    std::vector<int64_t> v(a.ints().begin(), a.ints().end());
    if (a.name() == "kernel_shape" || a.name() == "strides" || a.name() == "dilations") {
      v.insert(v.begin(), 1);
    } else if (a.name() == "pads" && v.size() % 2 == 0) {
      v.insert(v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), 0);
      v.insert(v.begin(), 0);
    } else {
      continue;
    }
    a.clear_ints();
    for (int64_t e : v) a.add_ints(e);
  }
  return n;
}

}  // namespace

void OnnxImporter::import_conv(int i) {
  const Node& node = g_.node(i);
  const Value* x = as_feature_map(i, activation(i, 0));
  if (!x) return;
  if (!spatial_input(*x)) return fail(i, spatial_input_problem(*x));
  const Constant* w = constant(i, 1, "weights");
  if (!w) return;
  const Constant* b = optional_constant(i, 2, "bias");
  if (node.input_size() > 2 && !node.input(2).empty() && !b) return;
  // A batch-in-depth map: the model's window gets a leading axis of 1 over the batch.
  const bool in_depth = x->batch_in_depth;
  const Node n = in_depth ? with_leading_window_axis(node) : node;
  const size_t s = x->dims.size() - 1;
  const int64_t cin = x->dims[0];
  const int64_t groups = attr_int(n, "group", 1);
  const size_t rank = s + (in_depth ? 1 : 2);  // of the weights
  if (w->is_int || w->dims.size() != rank) {
    return fail(i, fmt::format("weights '{}' must be float with rank {} (O, I/group, kernel...), "
                               "got {}",
                               n.input(1), rank, dims_text(w->dims)));
  }
  const int64_t cout = w->dims[0];
  std::vector<int64_t> kernel(w->dims.begin() + 2, w->dims.end());
  if (in_depth) kernel.insert(kernel.begin(), 1);
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

namespace {

// The windows of a dilated max pool over feature map x, side by side: a move into the IR map
// [(Do * Kd,) Ho * Kh, Wo * Kw, C] whose block (o, .) holds window o's elements, for a max pool
// with the kernel as its stride. A window element in the padding copies a valid element of the
// same window, which leaves its maximum unchanged. Returns an error message, empty when fine.
std::string gather_windows(const Value& x, const std::vector<int64_t>& kernel,
                           const std::vector<int64_t>& dilation, const Window& win, Layer& move) {
  const size_t s = kernel.size(), off = 3 - s;
  const int64_t c_n = x.dims[0];
  std::array<int64_t, 3> in{1, 1, 1}, k{1, 1, 1}, d{1, 1, 1}, st{1, 1, 1}, pb{0, 0, 0},
      out{1, 1, 1};
  for (size_t a = 0; a < s; ++a) {
    in[off + a] = x.dims[a + 1], k[off + a] = kernel[a], d[off + a] = dilation[a];
    st[off + a] = win.strides[a], pb[off + a] = win.pads_begin[a], out[off + a] = win.out[a];
  }
  // At most 2^24 elements, checked factor by factor so that no product overflows.
  constexpr int64_t kMaxElements = int64_t(1) << 24;
  int64_t elements = c_n;
  for (size_t a = 0; a < 3; ++a) {
    for (int64_t f : {out[a], k[a]}) {
      if (f > kMaxElements || elements > kMaxElements / f) {
        return fmt::format(
            "the dilated windows would hold more than 2^24 elements (kernel {}, "
            "output {})",
            dims_text(kernel), dims_text(win.out));
      }
      elements *= f;
    }
  }
  move.reshape_to.clear();
  for (size_t a = off; a < 3; ++a) move.reshape_to.push_back(static_cast<int>(out[a] * k[a]));
  move.reshape_to.push_back(static_cast<int>(c_n));
  std::vector<MoveSource> table(static_cast<size_t>(elements));
  const int64_t ow = out[2] * k[2], oh = out[1] * k[1];
  for (int64_t oz = 0; oz < out[0]; ++oz) {
    for (int64_t oy = 0; oy < out[1]; ++oy) {
      for (int64_t ox = 0; ox < out[2]; ++ox) {
        // The window's elements (input coordinates, -1 in the padding) and a valid one.
        std::vector<int64_t> at;
        int64_t valid = -1;
        for (int64_t jz = 0; jz < k[0]; ++jz) {
          for (int64_t jy = 0; jy < k[1]; ++jy) {
            for (int64_t jx = 0; jx < k[2]; ++jx) {
              const int64_t z = oz * st[0] - pb[0] + jz * d[0], y = oy * st[1] - pb[1] + jy * d[1],
                            xx = ox * st[2] - pb[2] + jx * d[2];
              const bool inside =
                  z >= 0 && z < in[0] && y >= 0 && y < in[1] && xx >= 0 && xx < in[2];
              at.push_back(inside ? (z * in[1] + y) * in[2] + xx : -1);
              if (inside && valid < 0) valid = at.back();
            }
          }
        }
        if (valid < 0) {
          return fmt::format("output position ({}, {}, {}) has a window entirely in the padding",
                             oz, oy, ox);
        }
        size_t j = 0;
        for (int64_t jz = 0; jz < k[0]; ++jz) {
          for (int64_t jy = 0; jy < k[1]; ++jy) {
            for (int64_t jx = 0; jx < k[2]; ++jx, ++j) {
              const int64_t pixel = at[j] >= 0 ? at[j] : valid;
              const int64_t o = ((oz * k[0] + jz) * oh + oy * k[1] + jy) * ow + ox * k[2] + jx;
              for (int64_t c = 0; c < c_n; ++c) {
                table[static_cast<size_t>(o * c_n + c)] = {0,
                                                           static_cast<int32_t>(pixel * c_n + c)};
              }
            }
          }
        }
      }
    }
  }
  move.move_from = MoveTable(table);
  return "";
}

}  // namespace

void OnnxImporter::import_pool(int i, OpKind kind) {
  const Value* x = activation(i, 0);
  if (!x) return;
  if (x->batch_in_depth) {
    return pool_window(i, with_leading_window_axis(g_.node(i)), *x, kind, g_.node(i).output(0));
  }
  if (!x->channels_first && x->batched && x->dims.size() == 2 && x->flat_from.empty()) {
    return import_pool_1d(i, kind, *x);
  }
  pool_window(i, g_.node(i), *x, kind, g_.node(i).output(0));
}

// A 1-D pool over [N, C, L]: the input as a feature map of height 1 ([C, 1, L], the IR's
// [1, L, C]), pooled with the window's attributes given a leading axis of 1, and moved back.
void OnnxImporter::import_pool_1d(int i, OpKind kind, const Value& x) {
  Node n = g_.node(i);
  auto lead = [](std::vector<int64_t> v, int64_t value) {
    v.insert(v.begin(), value);
    return v;
  };
  for (auto& a : *n.mutable_attribute()) {
    std::vector<int64_t> v(a.ints().begin(), a.ints().end());
    if (a.name() == "kernel_shape" || a.name() == "strides" || a.name() == "dilations") {
      v = lead(v, 1);
    } else if (a.name() == "pads" && v.size() == 2) {
      v = {0, v[0], 0, v[1]};
    } else {
      continue;
    }
    a.clear_ints();
    for (int64_t e : v) a.add_ints(e);
  }
  // out[c][r] = in[r][c] for IR tensors [rows, cols] -> [cols, rows] (shaped `ir`).
  auto transpose = [&](const std::string& in, int rows, int cols, std::vector<int> ir,
                       const std::string& out) {
    Layer& l = add_layer(i, OpKind::kMove, {in}, out);
    l.reshape_to = std::move(ir);
    l.move_op = "transpose";
    for (int c = 0; c < cols; ++c) l.move_from.append(0, c, cols, uint64_t(rows));
  };
  const int channels = static_cast<int>(x.dims[0]), length = static_cast<int>(x.dims[1]);
  const std::string out = n.output(0);
  Value map;
  map.channels_first = true;
  map.dims = {x.dims[0], 1, x.dims[1]};
  transpose(x.ir_name, channels, length, {1, length, channels}, out + "_map");
  set_value(out + "_map", std::move(map));
  const std::string pooled = out + "_pooled";
  pool_window(i, n, values_.at(out + "_map"), kind, pooled);
  auto it = values_.find(pooled);
  if (it == values_.end()) return;
  const int pooled_length = static_cast<int>(it->second.dims[2]);
  transpose(pooled, pooled_length, channels, {channels, pooled_length}, out);
  Value v;
  v.dims = {x.dims[0], pooled_length};
  set_value(out, std::move(v));
}

// A 2-D or 3-D pool of the feature map x as `out`; the window's attributes come from `n`.
void OnnxImporter::pool_window(int i, const Node& n, const Value& xv, OpKind kind,
                               const std::string& out) {
  const Value* x = &xv;
  if (!spatial_input(*x)) return fail(i, spatial_input_problem(*x));
  if (!extra_outputs_unused(i)) return;
  const size_t s = x->dims.size() - 1;
  auto kernel = attr_ints(n, "kernel_shape", {});
  if (kernel.size() != s ||
      std::any_of(kernel.begin(), kernel.end(), [](int64_t k) { return k < 1; })) {
    return fail(i, fmt::format("kernel_shape {} must be {} positive values", dims_text(kernel), s));
  }
  auto dilation = attr_ints(n, "dilations", std::vector<int64_t>(s, 1));
  // One value per spatial axis (an empty list was read past its end: found by fuzzing).
  if (dilation.size() != s ||
      std::any_of(dilation.begin(), dilation.end(), [](int64_t d) { return d < 1; })) {
    return fail(i, fmt::format("dilations {} must be {} positive values", dims_text(dilation), s));
  }
  const bool dilated =
      std::any_of(dilation.begin(), dilation.end(), [](int64_t d) { return d != 1; });
  if (dilated && kind != OpKind::kMaxPool) {
    // As the node gives them (a 1-D pool's have one value).
    return fail(i, fmt::format("dilations {}: only MaxPool supports dilations",
                               dims_text(attr_ints(g_.node(i), "dilations", dilation))));
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
      const int64_t span = (kernel[a] - 1) * dilation[a] + 1;
      const int64_t padded = in[a] + win.pads_begin[a] + win.pads_end[a];
      int64_t out_ceil = (padded - span + win.strides[a] - 1) / win.strides[a] + 1;
      if ((out_ceil - 1) * win.strides[a] >= in[a] + win.pads_begin[a]) --out_ceil;
      const int64_t extra = (out_ceil - 1) * win.strides[a] + span - padded;
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
  std::string source = x->ir_name;
  if (dilated) {
    // The dilated windows side by side (a move), pooled with a stride of the kernel.
    source = out + "_windows";
    Layer m;
    if (auto problem = gather_windows(*x, kernel, dilation, win, m); !problem.empty()) {
      return fail(i, problem);
    }
    Layer& g = add_layer(i, OpKind::kMove, {x->ir_name}, source);
    g.reshape_to = std::move(m.reshape_to);
    g.move_from = std::move(m.move_from);
    g.move_op = "dilated pooling windows";
    win.strides = kernel;
    win.pads_begin.assign(s, 0);
    win.pads_end.assign(s, 0);
  }
  Value v;
  v.channels_first = true;
  v.dims.push_back(x->dims[0]);
  v.dims.insert(v.dims.end(), win.out.begin(), win.out.end());
  Layer& l = add_layer(i, kind, {source}, out);
  l.kernel = triple(kernel, 1);
  l.strides = triple(win.strides, 1);
  l.pads_begin = triple(win.pads_begin, 0);
  l.pads_end = triple(win.pads_end, 0);
  l.count_include_pad = count_include_pad;
  set_value(out, std::move(v));
}

void OnnxImporter::import_global_pool(int i, OpKind kind) {
  const Value* x = as_feature_map(i, activation(i, 0));
  if (!x) return;
  if (!spatial_input(*x)) return fail(i, spatial_input_problem(*x));
  const std::string out = g_.node(i).output(0);
  Value v;
  v.channels_first = true;
  v.dims.assign(x->dims.size(), 1);
  v.dims[0] = x->dims[0];
  Layer& l = add_layer(i, kind, {x->ir_name}, out);
  if (x->batch_in_depth) {
    // Each sample's map: a window over all axes but the batch.
    v.dims[1] = x->dims[1];
    std::vector<int64_t> window(x->dims.begin() + 1, x->dims.end());
    window[0] = 1;
    l.kernel = triple(window, 1);
  } else if (kind == OpKind::kAvgPool) {
    l.global_pool = true;
  } else {
    l.kernel = triple({x->dims.begin() + 1, x->dims.end()}, 1);
  }
  set_value(out, std::move(v));
}

}  // namespace npusim::onnx_frontend
