// ONNX ConvTranspose (1-D, 2-D, 3-D) on the matrix unit, as two IR layers (docs/onnx.md
// "ConvTranspose"):
//   1. a `move` (run by the DMA) that spreads the input out by the strides, putting stride - 1
//      zeros between neighbours, and pads it by (kernel extent - 1 - pads) on each side (plus
//      output_padding at the end; a negative amount crops);
//   2. an ordinary convolution, stride 1, the same dilations, with the kernel flipped along every
//      spatial axis and its two channel axes exchanged (per group).
// A transposed convolution scatters each input element times the kernel into the output; the
// convolution above gathers the same products, with zeros where no input element lands. The
// zeros cost matrix-unit cycles (they are multiplied like any value) but no MAC of the model's
// count is lost or added twice. A 1-D ConvTranspose ([N, C, L]) runs as a 2-D one of height 1.
#include <fmt/format.h>

#include <algorithm>

#include "compiler/frontend/onnx/onnx_importer.hpp"

namespace npusim::onnx_frontend {

namespace {

// Caps on the attributes, so that no size computed from them overflows (found necessary by the
// Pad fuzzing of onnx_movement.cpp); far beyond any real model's.
constexpr int64_t kMaxStride = 1024;
constexpr int64_t kMaxPad = int64_t(1) << 20;
constexpr int64_t kMaxMoveElements = int64_t(1) << 24;

bool in_range(const std::vector<int64_t>& v, int64_t lo, int64_t hi) {
  return std::all_of(v.begin(), v.end(), [&](int64_t e) { return e >= lo && e <= hi; });
}

}  // namespace

void OnnxImporter::import_conv_transpose(int i) {
  const Node& n = g_.node(i);
  const Value* x = activation(i, 0);
  if (!x) return;
  // [N, C, L] arrives as a plain value [C, L]; [N, C, (D,) H, W] as a feature map.
  const bool one_d = !x->channels_first && x->flat_from.empty() && x->dims.size() == 2;
  if (!one_d && !spatial_input(*x)) {
    return fail(i, fmt::format("expects a channels-first 1-D, 2-D or 3-D input (N, C, L), (N, C, "
                               "H, W) or (N, C, D, H, W); input '{}' is [N, {}]{}",
                               x->ir_name, fmt::join(x->dims, ", "),
                               x->channels_first ? "" : " (not a feature map)"));
  }
  if (!x->batched) {
    return fail(i, "runs on a batched feature map only (docs/onnx.md \"Rank mapping\")");
  }
  const Constant* w = constant(i, 1, "weights");
  if (!w) return;
  const Constant* b = optional_constant(i, 2, "bias");
  if (n.input_size() > 2 && !n.input(2).empty() && !b) return;
  const size_t s = x->dims.size() - 1;
  const int64_t cin = x->dims[0];
  const int64_t groups = attr_int(n, "group", 1);
  if (w->is_int || w->dims.size() != s + 2 ||
      std::any_of(w->dims.begin(), w->dims.end(), [](int64_t d) { return d < 1; })) {
    return fail(i, fmt::format("weights '{}' must be float with rank {} (C, O/group, kernel...) "
                               "and no empty dimension, got {}",
                               n.input(1), s + 2, dims_text(w->dims)));
  }
  if (groups < 1 || cin % groups != 0 || w->dims[0] != cin) {
    return fail(i, fmt::format("group {} does not fit {} input channels and weights {} "
                               "(expected [{}, O / group, ...] with {} divisible by group)",
                               groups, cin, dims_text(w->dims), cin, cin));
  }
  const int64_t og = w->dims[1], cg = cin / groups, cout = og * groups;
  std::vector<int64_t> kernel(w->dims.begin() + 2, w->dims.end());
  if (auto ks = attr_ints(n, "kernel_shape", kernel); ks != kernel) {
    return fail(i, fmt::format("kernel_shape {} disagrees with the weights {}", dims_text(ks),
                               dims_text(w->dims)));
  }
  if (b && (b->is_int || b->elements() != static_cast<uint64_t>(cout))) {
    return fail(i, fmt::format("bias '{}' must be {} floats, got shape {}", n.input(2), cout,
                               dims_text(b->dims)));
  }
  const std::string auto_pad = attr_string(n, "auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER" &&
      auto_pad != "VALID") {
    return fail(i, fmt::format("auto_pad '{}': expected NOTSET, SAME_UPPER, SAME_LOWER or VALID",
                               auto_pad));
  }
  const auto strides = attr_ints(n, "strides", std::vector<int64_t>(s, 1));
  const auto dilation = attr_ints(n, "dilations", std::vector<int64_t>(s, 1));
  auto pads = attr_ints(n, "pads", std::vector<int64_t>(2 * s, 0));
  const auto out_pad = attr_ints(n, "output_padding", std::vector<int64_t>(s, 0));
  if (strides.size() != s || !in_range(strides, 1, kMaxStride)) {
    return fail(i, fmt::format("strides {} must be {} values in [1, {}]", dims_text(strides), s,
                               kMaxStride));
  }
  if (dilation.size() != s || !in_range(dilation, 1, kMaxStride)) {
    return fail(i, fmt::format("dilations {} must be {} values in [1, {}]", dims_text(dilation), s,
                               kMaxStride));
  }
  if (pads.size() != 2 * s || !in_range(pads, 0, kMaxPad)) {
    return fail(
        i, fmt::format("pads {} must be {} values in [0, {}]", dims_text(pads), 2 * s, kMaxPad));
  }
  if (out_pad.size() != s || !in_range(out_pad, 0, kMaxStride)) {
    return fail(i, fmt::format("output_padding {} must be {} values in [0, {}]", dims_text(out_pad),
                               s, kMaxStride));
  }
  for (size_t a = 0; a < s; ++a) {
    if (out_pad[a] >= std::max(strides[a], dilation[a])) {
      return fail(i, fmt::format("output_padding {} must be less than the stride or the dilation "
                                 "along each axis (strides {}, dilations {})",
                                 dims_text(out_pad), dims_text(strides), dims_text(dilation)));
    }
  }
  if (std::any_of(kernel.begin(), kernel.end(), [](int64_t k) { return k > kMaxPad; })) {
    return fail(
        i, fmt::format("kernel {} is larger than {} along an axis", dims_text(kernel), kMaxPad));
  }
  std::vector<int64_t> in(x->dims.begin() + 1, x->dims.end());
  // output_shape (or auto_pad SAME_*, whose output is input * stride) sets the pads, as the ONNX
  // specification of ConvTranspose states: the total padding split in two halves, the odd one at
  // the end for SAME_UPPER, at the start otherwise. VALID: no padding.
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  std::vector<int64_t> shape = attr_ints(n, "output_shape", {});
  if (shape.size() == s + 2) shape.erase(shape.begin(), shape.begin() + 2);  // [N, C, ...] given
  if (!shape.empty() || same) {
    if (shape.empty()) {
      for (size_t a = 0; a < s; ++a) shape.push_back(in[a] * strides[a]);
    }
    if (shape.size() != s || !in_range(shape, 1, kMaxMoveElements)) {
      return fail(
          i, fmt::format("output_shape {} must be {} sizes in [1, 2^24]", dims_text(shape), s));
    }
    for (size_t a = 0; a < s; ++a) {
      const int64_t total =
          strides[a] * (in[a] - 1) + out_pad[a] + (kernel[a] - 1) * dilation[a] + 1 - shape[a];
      if (total < 0) {
        return fail(
            i, fmt::format("output_shape {} is larger than the input {} can give with "
                           "kernel {} and strides {}",
                           dims_text(shape), dims_text(in), dims_text(kernel), dims_text(strides)));
      }
      const bool upper = auto_pad != "SAME_LOWER";
      pads[a] = upper ? total / 2 : total - total / 2;
      pads[s + a] = total - pads[a];
    }
  } else if (auto_pad == "VALID") {
    pads.assign(2 * s, 0);
  }

  // Per spatial axis: the input size, the spread and padded size z, where input element j sits in
  // z (at lead + j * stride), and the output size.
  std::vector<int64_t> z(s), lead(s), out(s);
  int64_t elements = cin;
  for (size_t a = 0; a < s; ++a) {
    const int64_t reach = (kernel[a] - 1) * dilation[a];  // kernel extent - 1
    out[a] = strides[a] * (in[a] - 1) + out_pad[a] + reach + 1 - pads[a] - pads[s + a];
    if (out[a] < 1) {
      return fail(
          i, fmt::format("the output would be empty along spatial axis {} (input {}, "
                         "kernel {}, strides {}, pads {})",
                         a, dims_text(in), dims_text(kernel), dims_text(strides), dims_text(pads)));
    }
    lead[a] = reach - pads[a];
    z[a] = out[a] + reach;
    if (z[a] > kMaxMoveElements || elements > kMaxMoveElements / z[a]) {
      return fail(i, fmt::format("the spread input would hold more than 2^24 elements (input {}, "
                                 "strides {})",
                                 dims_text(in), dims_text(strides)));
    }
    elements *= z[a];
  }
  // Unique IR tensor names for the two intermediate results.
  const std::string out_name = n.output(0);
  const auto fresh = [&](const std::string& base) {
    std::string name = base;
    for (int k = 2; is_activation(name) || is_constant(name); ++k)
      name = fmt::format("{}{}", base, k);
    return name;
  };

  // 1. The spread input: a feature map [C, (D,) H, W] ([C, 1, Z] for 1-D).
  Value spread;
  spread.channels_first = true;
  spread.dims.push_back(cin);
  if (one_d) spread.dims.push_back(1);
  spread.dims.insert(spread.dims.end(), z.begin(), z.end());
  const std::vector<int64_t> x_ir = ir_elements(*x), spread_ir = ir_elements(spread);
  std::vector<MoveSource> from(static_cast<size_t>(elements), MoveSource{-1, 0});
  std::vector<int64_t> at(s, 0);
  const int64_t positions = elements / cin, in_positions = product(in);
  for (int64_t p = 0; p < positions; ++p) {
    // `at`: the position in z (row-major over the spatial axes); its input element, if any.
    int64_t source = 0;
    bool lands = true;
    for (size_t a = 0; a < s; ++a) {
      const int64_t offset = at[a] - lead[a];
      if (offset < 0 || offset % strides[a] != 0 || offset / strides[a] >= in[a]) {
        lands = false;
        break;
      }
      source = source * in[a] + offset / strides[a];
    }
    if (lands) {
      for (int64_t c = 0; c < cin; ++c) {
        const int64_t to = c * positions + p, src = c * in_positions + source;
        from[static_cast<size_t>(spread_ir[static_cast<size_t>(to)])] = {
            0, static_cast<int32_t>(x_ir[static_cast<size_t>(src)])};
      }
    }
    for (size_t a = s; a-- > 0;) {
      if (++at[a] < z[a]) break;
      at[a] = 0;
    }
  }
  const std::string spread_name = fresh(out_name + "_spread");
  Layer& move = add_layer(i, OpKind::kMove, {x->ir_name}, spread_name);
  move.reshape_to = ir_dims(spread);
  move.move_from = MoveTable(from);
  move.move_constants = {0.0f};
  move.move_op = "ConvTranspose";
  set_value(spread_name, spread);

  // 2. The convolution: stride 1, the flipped kernel, channels exchanged per group.
  const std::string conv_name = one_d ? fresh(out_name + "_map") : out_name;
  Layer& l = add_layer(i, OpKind::kConv, {spread_name}, conv_name);
  std::vector<int64_t> k2 = kernel, d2 = dilation;
  if (one_d) k2.insert(k2.begin(), 1), d2.insert(d2.begin(), 1);
  l.filters = static_cast<int>(cout);
  l.groups = static_cast<int>(groups);
  l.kernel = triple(k2, 1);
  l.strides = {1, 1, 1};
  l.dilation = triple(d2, 1);
  l.pads_begin = {0, 0, 0};
  l.pads_end = {0, 0, 0};
  // ONNX [C][O/g][k...] -> IR [k...][C/g][O], the taps reversed (a row-major flat tap index
  // reversed is every axis reversed).
  const int64_t taps = product(kernel);
  l.weights.assign(w->values.size(), 0.0f);
  for (int64_t g = 0; g < groups; ++g) {
    for (int64_t c = 0; c < cg; ++c) {
      for (int64_t o = 0; o < og; ++o) {
        for (int64_t t = 0; t < taps; ++t) {
          l.weights[static_cast<size_t>((t * cg + c) * cout + g * og + o)] =
              w->values[static_cast<size_t>(((g * cg + c) * og + o) * taps + (taps - 1 - t))];
        }
      }
    }
  }
  l.use_bias = b != nullptr;
  l.bias = b ? b->values : std::vector<float>(static_cast<size_t>(cout), 0.0f);
  Value conv;
  conv.channels_first = true;
  conv.dims.push_back(cout);
  if (one_d) conv.dims.push_back(1);
  conv.dims.insert(conv.dims.end(), out.begin(), out.end());
  set_value(conv_name, conv);
  if (!one_d) return;

  // 1-D: the map [C, 1, L] back to [C, L], as a 1-D tensor arrives.
  const Value& map = values_.at(conv_name);
  MoveOperand op{&map, nullptr, {1, cout, 1, out[0]}};
  MoveSpec spec;
  spec.dims = {1, cout, out[0]};
  spec.source = [](const std::vector<int64_t>& o, std::vector<int64_t>& from_at) {
    from_at = {0, o[1], 0, o[2]};
    return 0;
  };
  emit_move(i, out_name, "ConvTranspose", {op}, spec);
}

}  // namespace npusim::onnx_frontend
