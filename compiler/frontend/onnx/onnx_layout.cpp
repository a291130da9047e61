#include "compiler/frontend/onnx/onnx_layout.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "compiler/frontend/onnx/onnx_tensor.hpp"

namespace npusim::onnx_frontend {

int64_t onnx_rank(const Value& v) { return int64_t(v.dims.size()) + (v.batched ? 1 : 0); }

int sample_axis(const Value& v, int64_t onnx_axis) {
  const int64_t rank = onnx_rank(v);
  const int64_t a = onnx_axis < 0 ? onnx_axis + rank : onnx_axis;
  if (a < 0 || a >= rank) return -2;
  return static_cast<int>(v.batched ? a - 1 : a);
}

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

void flatten_value(const Value& x, Value& v) {
  v.dims = {product(x.dims)};
  v.channels_first = false;
  v.flat_from.clear();
  if (x.channels_first && x.dims[0] > 1 && product(x.dims, 1) > 1) v.flat_from = x.dims;
  if (!x.flat_from.empty()) v.flat_from = x.flat_from;
}

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

}  // namespace npusim::onnx_frontend
