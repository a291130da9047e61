// Elementwise arithmetic with a constant operand (Add, Sub, Mul, Div with numpy broadcasting) and
// a BatchNormalization that has no Conv / Gemm / MatMul to fold into: y = x * scale + shift, with
// scale and shift broadcast to x. It becomes a depthwise 1x1 convolution (docs/onnx.md): one
// channel per distinct (scale, shift) position, reshaped around it when x is not a [1, P, C] map.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "compiler/frontend/onnx/onnx_importer.hpp"
#include "support/error.hpp"

namespace npusim::onnx_frontend {

namespace {

// The ONNX shape of v without the batch axis, in ONNX order.
std::vector<int64_t> onnx_sample_shape(const Value& v) { return v.dims; }

// Index of the IR (channels-last) element for every ONNX-order element of a sample.
std::vector<size_t> ir_index_of_onnx(const Value& v) {
  const std::vector<int64_t>& d = v.dims;
  const size_t n = static_cast<size_t>(product(d));
  std::vector<size_t> map(n);
  for (size_t e = 0; e < n; ++e) map[e] = e;
  if (!v.channels_first) return map;
  const size_t c = static_cast<size_t>(d[0]), spatial = n / c;
  for (size_t ch = 0; ch < c; ++ch)
    for (size_t p = 0; p < spatial; ++p) map[ch * spatial + p] = p * c + ch;
  return map;
}

}  // namespace

std::string OnnxImporter::broadcast_to(const Value& x, const Constant& c, std::vector<float>& out) {
  if (c.is_int) return "the constant must be float";
  const std::vector<int64_t> sample = onnx_sample_shape(x);
  const int64_t rank = onnx_rank(x);
  const int64_t crank = static_cast<int64_t>(c.dims.size());
  if (crank > rank) {
    return fmt::format(
        "the constant {} has more axes than the tensor {}: the result would be "
        "larger than the tensor (npusim broadcasts constants only)",
        dims_text(c.dims), dims_text(sample));
  }
  // Constant axis k lines up with ONNX axis k + rank - crank.
  std::vector<int64_t> cdim(sample.size(), 1);
  for (int64_t k = 0; k < crank; ++k) {
    const int axis = sample_axis(x, k + rank - crank);
    const int64_t d = c.dims[static_cast<size_t>(k)];
    if (axis == -1) {
      if (d != 1) {
        needs_whole_tensor_ = true;  // docs/onnx.md "Rank mapping"
        return fmt::format(
            "the constant {} differs along the batch axis 0 (npusim then runs the model as "
            "one whole tensor: docs/onnx.md \"Rank mapping\")",
            dims_text(c.dims));
      }
      continue;
    }
    if (d != 1 && d != sample[static_cast<size_t>(axis)]) {
      return fmt::format("the constant {} does not broadcast to the tensor's shape {}",
                         dims_text(c.dims), dims_text(sample));
    }
    cdim[static_cast<size_t>(axis)] = d;
  }
  const size_t n = static_cast<size_t>(product(sample));
  out.assign(n, 0.0f);
  for (size_t e = 0; e < n; ++e) {
    size_t rest = e, ci = 0, stride = 1;
    for (size_t a = sample.size(); a-- > 0;) {
      const size_t idx = rest % static_cast<size_t>(sample[a]);
      rest /= static_cast<size_t>(sample[a]);
      if (cdim[a] != 1) ci += idx * stride;
      stride *= static_cast<size_t>(cdim[a]);
    }
    out[e] = c.values[ci];
  }
  return "";
}

void OnnxImporter::import_affine(int i, const Value& x, std::vector<float> scale,
                                 std::vector<float> shift, const std::string& output) {
  if (!x.flat_from.empty()) {
    return fail(i,
                "the input is a flattened channels-first feature map: its element order in "
                "npusim (H, W, C) differs from ONNX's; apply the constant before the Flatten");
  }
  // To the IR's element order.
  const std::vector<size_t> map = ir_index_of_onnx(x);
  NPUSIM_CHECK(scale.size() == map.size() && shift.size() == map.size(),
               "import_affine: {} scales and {} shifts for {} elements", scale.size(), shift.size(),
               map.size());
  std::vector<float> w(scale.size()), b(shift.size());
  for (size_t e = 0; e < map.size(); ++e) {
    w[map[e]] = scale[e];
    b[map[e]] = shift[e];
  }
  const std::vector<int> dims = ir_dims(x);
  const size_t n = w.size();
  // One channel per position of the last IR axis when scale and shift repeat along the others.
  size_t channels = dims.empty() ? 1 : static_cast<size_t>(dims.back());
  for (size_t e = 0; e < n && channels != n; ++e) {
    if (w[e] != w[e % channels] || b[e] != b[e % channels]) channels = n;
  }
  w.resize(channels);
  b.resize(channels);
  // A feature map [H, W, C] with per-channel constants is a conv input as it is.
  const std::vector<int> conv_dims =
      dims.size() == 3 && channels == static_cast<size_t>(dims.back())
          ? dims
          : std::vector<int>{1, static_cast<int>(n / channels), static_cast<int>(channels)};
  const std::string out = output.empty() ? g_.node(i).output(0) : output;
  std::string in = x.ir_name;
  const bool reshape = dims != conv_dims;
  if (reshape) {
    in = out + "_as_map";
    add_layer(i, OpKind::kReshape, {x.ir_name}, in).reshape_to = conv_dims;
  }
  Layer& l = add_layer(i, OpKind::kConv, {in}, reshape ? out + "_affine" : out);
  l.filters = static_cast<int>(channels);
  l.groups = static_cast<int>(channels);
  l.weights = std::move(w);
  l.bias = std::move(b);
  l.use_bias = true;
  if (reshape) add_layer(i, OpKind::kReshape, {l.output}, out).reshape_to = dims;
  Value v = x;
  set_value(out, std::move(v));
}

// x op c or c op x with c a constant: Add and Sub shift, Mul and Div scale (Div by c only).
void OnnxImporter::import_binary_constant(int i, const Value& x, const Constant& c,
                                          bool constant_first, char op) {
  std::vector<float> values;
  if (std::string problem = broadcast_to(x, c, values); !problem.empty()) return fail(i, problem);
  std::vector<float> scale(values.size(), 1.0f), shift(values.size(), 0.0f);
  for (size_t e = 0; e < values.size(); ++e) {
    const float v = values[e];
    switch (op) {
      case '+':
        shift[e] = v;
        break;
      case '-':
        if (constant_first) {
          scale[e] = -1.0f;
          shift[e] = v;
        } else {
          shift[e] = -v;
        }
        break;
      case '*':
        scale[e] = v;
        break;
      default:  // '/'
        if (constant_first) {
          return fail(i, "dividing a constant by a run-time tensor is not supported");
        }
        if (v == 0.0f) return fail(i, "division by a constant that holds 0");
        scale[e] = 1.0f / v;
    }
  }
  import_affine(i, x, std::move(scale), std::move(shift));
}

}  // namespace npusim::onnx_frontend
