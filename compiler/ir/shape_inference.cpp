// Shape inference and graph checks shared by every front end (docs/workload_format.md).
#include "compiler/ir/shape_inference.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "support/error.hpp"

namespace npusim {

void GraphDiagnostics::error(const std::string& where, const std::string& message) {
  messages_.push_back(fmt::format("{}: {}: {}", origin_, where, message));
}

void GraphDiagnostics::throw_if_errors() const {
  if (!messages_.empty()) throw UserErrors(messages_);
}

namespace {

// Output size of one spatial axis; fills the padding for "same" (TensorFlow: the odd pixel after).
int spatial_out(int in, int kernel, int stride, int dilation, bool same, int& pad_begin,
                int& pad_end) {
  const int effective = dilation * (kernel - 1) + 1;
  if (same) {
    const int out = (in + stride - 1) / stride;
    const int total = std::max((out - 1) * stride + effective - in, 0);
    pad_begin = total / 2;
    pad_end = total - pad_begin;
    return out;
  }
  const int span = in + pad_begin + pad_end - effective;
  return span < 0 ? 0 : span / stride + 1;
}

std::string tensor_names(const std::map<std::string, TensorShape>& shapes) {
  std::string names;
  for (const auto& entry : shapes) {
    if (!names.empty()) names += ", ";
    names += entry.first;
  }
  return names;
}

// Shape rules of each op; returns false (after reporting) when the layer's shape is impossible.
bool infer_layer(Layer& l, const std::string& where, GraphDiagnostics& diag) {
  const auto& in = l.in_shapes;
  const TensorShape& x = in[0];
  auto fail = [&](const std::string& message) {
    diag.error(where, message);
    return false;
  };
  switch (l.kind) {
    case OpKind::kConv:
    case OpKind::kMaxPool:
    case OpKind::kAvgPool: {
      if (x.rank() != 3 && x.rank() != 4) {
        return fail(
            fmt::format("{} needs a [height, width, channels] or [depth, height, width, "
                        "channels] input, '{}' is {}",
                        to_string(l.kind), l.inputs[0], to_string(x)));
      }
      const int c = x.last();
      std::array<int, 3> size{x.d(), x.h(), x.w()};
      if (x.rank() == 3 &&
          (l.kernel[0] != 1 || l.strides[0] != 1 || l.pads_begin[0] != 0 || l.pads_end[0] != 0)) {
        return fail("a 3-D window needs a [depth, height, width, channels] input");
      }
      if (l.global_pool) {
        l.kernel = size;
        l.strides = {1, 1, 1};
        l.pads_begin = l.pads_end = {0, 0, 0};
      }
      std::array<int, 3> out{};
      for (int a = 0; a < 3; ++a) {
        out[a] = spatial_out(size[a], l.kernel[a], l.strides[a], l.dilation[a], l.same_padding,
                             l.pads_begin[a], l.pads_end[a]);
      }
      if (out[0] <= 0 || out[1] <= 0 || out[2] <= 0) {
        return fail(
            fmt::format("impossible shape: a {}x{}x{} window (dilation {}x{}x{}) does not "
                        "fit the {} input with padding {},{},{} / {},{},{}",
                        l.kernel[0], l.kernel[1], l.kernel[2], l.dilation[0], l.dilation[1],
                        l.dilation[2], to_string(x), l.pads_begin[0], l.pads_begin[1],
                        l.pads_begin[2], l.pads_end[0], l.pads_end[1], l.pads_end[2]));
      }
      if (l.kind != OpKind::kConv) {
        for (int a = 0; a < 3; ++a) {
          if (l.pads_begin[a] >= l.kernel[a] || l.pads_end[a] >= l.kernel[a]) {
            return fail("pooling padding must be smaller than the window");
          }
        }
      }
      int channels = c;
      if (l.kind == OpKind::kConv) {
        if (c % l.groups != 0 || l.filters % l.groups != 0) {
          return fail(
              fmt::format("groups ({}) must divide the input channels ({}) and the filters "
                          "({})",
                          l.groups, c, l.filters));
        }
        channels = l.filters;
      }
      l.out_shape.dims = x.rank() == 4 ? std::vector<int>{out[0], out[1], out[2], channels}
                                       : std::vector<int>{out[1], out[2], channels};
      return true;
    }
    case OpKind::kDense:
      l.out_shape = x;
      l.out_shape.dims.back() = l.filters;
      return true;
    case OpKind::kMatMul: {
      const TensorShape& b = in[1];
      if (x.rank() < 2 || b.rank() != x.rank()) {
        return fail(fmt::format("matmul needs two inputs of the same rank >= 2, got {} and {}",
                                to_string(x), to_string(b)));
      }
      for (int i = 0; i + 2 < x.rank(); ++i) {
        if (x.dims[i] != b.dims[i]) {
          return fail(fmt::format("matmul leading dimensions differ: {} and {}", to_string(x),
                                  to_string(b)));
        }
      }
      const int k_b = l.transpose_b ? b.last() : b.dims[b.rank() - 2];
      const int n = l.transpose_b ? b.dims[b.rank() - 2] : b.last();
      if (k_b != x.last()) {
        return fail(fmt::format("matmul inner dimensions differ: {} x {}{}", to_string(x),
                                to_string(b), l.transpose_b ? " (transposed)" : ""));
      }
      l.out_shape = x;
      l.out_shape.dims.back() = n;
      return true;
    }
    case OpKind::kAdd:
    case OpKind::kMul:
      if (in[1] != x) {
        return fail(fmt::format("{} needs inputs of the same shape, got {} and {}",
                                to_string(l.kind), to_string(x), to_string(in[1])));
      }
      l.out_shape = x;
      return true;
    case OpKind::kConcat: {
      l.out_shape = x;
      l.out_shape.dims.back() = 0;
      for (const auto& s : in) {
        TensorShape a = s, b = x;
        a.dims.back() = b.dims.back() = 0;
        if (a != b) {
          return fail(
              fmt::format("concat inputs must match in all but the last dimension, got {} "
                          "and {}",
                          to_string(x), to_string(s)));
        }
        l.out_shape.dims.back() += s.last();
      }
      return true;
    }
    case OpKind::kReshape: {
      if (l.reshape_to.empty()) {
        l.out_shape.dims = {static_cast<int>(x.elements())};
        return true;
      }
      l.out_shape.dims = l.reshape_to;
      if (l.out_shape.elements() != x.elements()) {
        return fail(fmt::format("cannot reshape {} ({} elements) to {} ({} elements)", to_string(x),
                                x.elements(), to_string(l.out_shape), l.out_shape.elements()));
      }
      return true;
    }
    case OpKind::kActivation:
    case OpKind::kSoftmax:
    case OpKind::kLayerNorm:
    case OpKind::kBatchNorm:
      l.out_shape = x;
      return true;
  }
  return true;
}

// Parameter sizes that the file gave must match the inferred shapes.
void check_parameters(const Layer& l, const std::string& where, GraphDiagnostics& diag) {
  auto expect = [&](const std::vector<float>& v, uint64_t n, const char* what) {
    if (!v.empty() && v.size() != n) {
      diag.error(where, fmt::format("{} has {} values, expected {}", what, v.size(), n));
    }
  };
  if (l.has_weights()) {
    expect(l.weights, l.reduction() * l.filters, "weights");
    expect(l.bias, static_cast<uint64_t>(l.filters), "bias");
  }
  if (l.kind == OpKind::kLayerNorm || l.kind == OpKind::kBatchNorm) {
    const uint64_t c = l.out_shape.last();
    expect(l.gamma, c, "gamma");
    expect(l.beta, c, "beta");
    expect(l.mean, c, "mean");
    expect(l.variance, c, "variance");
  }
}

}  // namespace

void finalize_graph(Graph& g, GraphDiagnostics& diag,
                    const std::vector<std::string>& where_of_layer) {
  std::map<std::string, TensorShape> shapes{{g.input_name, g.input_shape}};
  std::map<std::string, int> readers;
  std::set<std::string> failed;  // outputs of layers whose shape could not be inferred
  if (g.input_shape.dims.empty() || g.input_shape.elements() == 0) {
    diag.error("input", "the input shape must have at least one dimension and no zero");
  }
  for (size_t i = 0; i < g.layers.size(); ++i) {
    Layer& l = g.layers[i];
    const std::string& where = where_of_layer[i];
    bool ok = true;
    l.in_shapes.clear();
    for (const auto& name : l.inputs) {
      auto it = shapes.find(name);
      if (failed.count(name) != 0) {
        ok = false;  // already reported where that tensor failed
      } else if (it == shapes.end()) {
        diag.error(where, fmt::format("unknown tensor '{}' (tensors defined before this layer: {})",
                                      name, tensor_names(shapes)));
        ok = false;
      } else {
        l.in_shapes.push_back(it->second);
        ++readers[name];
      }
    }
    if (shapes.count(l.output) != 0) {
      diag.error(where, fmt::format("tensor '{}' is already defined", l.output));
    }
    if (ok && infer_layer(l, where, diag)) {
      check_parameters(l, where, diag);
      shapes[l.output] = l.out_shape;
    } else {
      failed.insert(l.output);
    }
  }
  // Batch norm must be foldable: it follows a conv / dense without activation, sole reader.
  for (size_t i = 0; i < g.layers.size(); ++i) {
    const Layer& l = g.layers[i];
    if (l.kind != OpKind::kBatchNorm || l.inputs.empty()) continue;
    const Layer* p = g.producer(l.inputs[0]);
    if (p == nullptr || !p->has_weights() || p->activation != Activation::kNone ||
        readers[l.inputs[0]] != 1) {
      diag.error(where_of_layer[i],
                 "batchnorm must directly follow a conv or dense layer without activation whose "
                 "output nothing else reads (it is folded into that layer)");
    }
  }
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    if (shapes.count(g.outputs[i]) == 0 && failed.count(g.outputs[i]) == 0) {
      diag.error(fmt::format("/outputs/{}", i), fmt::format("unknown tensor '{}'", g.outputs[i]));
    }
  }
  diag.throw_if_errors();
}

}  // namespace npusim
