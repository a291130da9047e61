#include "compiler/graph.hpp"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "compiler/onnx_import.hpp"
#include "support/embedded_files.hpp"
#include "support/error.hpp"
#include "support/json_reader.hpp"

namespace npusim {

uint64_t TensorShape::elements() const {
  uint64_t n = 1;
  for (int d : dims) n *= static_cast<uint64_t>(d);
  return n;
}

TensorShape make_shape(std::initializer_list<int> dims) { return TensorShape{dims}; }

std::string to_string(const TensorShape& s) {
  std::string out;
  for (int d : s.dims) {
    if (!out.empty()) out += 'x';
    out += std::to_string(d);
  }
  return out.empty() ? "scalar" : out;
}

const char* to_string(OpKind kind) {
  switch (kind) {
    case OpKind::kConv:
      return "conv";
    case OpKind::kDense:
      return "dense";
    case OpKind::kMatMul:
      return "matmul";
    case OpKind::kMaxPool:
      return "maxpool";
    case OpKind::kAvgPool:
      return "avgpool";
    case OpKind::kActivation:
      return "activation";
    case OpKind::kAdd:
      return "add";
    case OpKind::kMul:
      return "mul";
    case OpKind::kConcat:
      return "concat";
    case OpKind::kReshape:
      return "reshape";
    case OpKind::kSoftmax:
      return "softmax";
    case OpKind::kLayerNorm:
      return "layernorm";
    case OpKind::kBatchNorm:
      return "batchnorm";
  }
  return "?";
}

int Layer::input_channels_per_group() const {
  return in_shapes.empty() ? 0 : in_shapes[0].last() / std::max(groups, 1);
}

uint64_t Layer::reduction() const {
  switch (kind) {
    case OpKind::kConv:
      return uint64_t(kernel[0]) * kernel[1] * kernel[2] * input_channels_per_group();
    case OpKind::kDense:
      return in_shapes.empty() ? 0 : in_shapes[0].last();
    case OpKind::kMatMul:
      return in_shapes.empty() ? 0 : in_shapes[0].last();
    default:
      return 0;
  }
}

uint64_t Layer::macs(int batch) const {
  if (kind != OpKind::kConv && kind != OpKind::kDense && kind != OpKind::kMatMul) return 0;
  return uint64_t(batch) * out_shape.elements() * reduction();
}

const Layer* Graph::producer(const std::string& tensor) const {
  for (const auto& l : layers) {
    if (l.output == tensor) return &l;
  }
  return nullptr;
}

TensorShape Graph::shape_of(const std::string& tensor) const {
  const Layer* p = producer(tensor);
  return p ? p->out_shape : input_shape;
}

float Graph::scale_of(const std::string& tensor) const {
  const Layer* p = producer(tensor);
  return p ? p->out_scale : input_scale;
}

uint64_t Graph::total_macs() const {
  uint64_t total = 0;
  for (const auto& l : layers) total += l.macs(batch);
  return total;
}

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

namespace {

void read_triple(ObjectReader& r, const std::string& key, int rank, std::array<int, 3>& out,
                 int fallback, bool required) {
  auto v = r.integer_list(key, rank, rank, 1, 1 << 16, required);
  if (v.empty()) {
    out = {1, fallback, fallback};
    if (rank == 3) out[0] = fallback;
    return;
  }
  out = {1, static_cast<int>(v[rank - 2]), static_cast<int>(v[rank - 1])};
  if (rank == 3) out[0] = static_cast<int>(v[0]);
}

struct OpSpec {
  const char* name;
  OpKind kind;
  Activation activation;
};

constexpr OpSpec kOps[] = {
    {"conv2d", OpKind::kConv, Activation::kNone},
    {"conv3d", OpKind::kConv, Activation::kNone},
    {"dense", OpKind::kDense, Activation::kNone},
    {"matmul", OpKind::kMatMul, Activation::kNone},
    {"maxpool", OpKind::kMaxPool, Activation::kNone},
    {"avgpool", OpKind::kAvgPool, Activation::kNone},
    {"global_avgpool", OpKind::kAvgPool, Activation::kNone},
    {"relu", OpKind::kActivation, Activation::kRelu},
    {"relu6", OpKind::kActivation, Activation::kRelu6},
    {"clip", OpKind::kActivation, Activation::kClip},
    {"sigmoid", OpKind::kActivation, Activation::kSigmoid},
    {"tanh", OpKind::kActivation, Activation::kTanh},
    {"gelu", OpKind::kActivation, Activation::kGelu},
    {"add", OpKind::kAdd, Activation::kNone},
    {"mul", OpKind::kMul, Activation::kNone},
    {"concat", OpKind::kConcat, Activation::kNone},
    {"flatten", OpKind::kReshape, Activation::kNone},
    {"reshape", OpKind::kReshape, Activation::kNone},
    {"softmax", OpKind::kSoftmax, Activation::kNone},
    {"layernorm", OpKind::kLayerNorm, Activation::kNone},
    {"batchnorm", OpKind::kBatchNorm, Activation::kNone},
};

// Reads one layer's keys (types, ranges, unknown keys); shapes are checked by finalize_graph.
Layer read_layer(ObjectReader& r, size_t index, const std::string& previous) {
  Layer l;
  l.name = r.string("name", fmt::format("layer{}", index));
  const auto op = r.choice_required(
      "op", {"conv2d", "conv3d", "dense",   "matmul",  "maxpool", "avgpool",   "global_avgpool",
             "relu",   "relu6",  "clip",    "sigmoid", "tanh",    "gelu",      "add",
             "mul",    "concat", "flatten", "reshape", "softmax", "layernorm", "batchnorm"});
  l.inputs = r.string_list("inputs", false);
  l.output = r.string("output", l.name);
  l.fixed_output_scale = static_cast<float>(r.number("output_scale", 0.0, 0.0, 1e12));
  if (!op) return l;
  for (const auto& spec : kOps) {
    if (*op == spec.name) {
      l.kind = spec.kind;
      l.activation = spec.activation;
    }
  }
  size_t arity = 1;
  if (l.kind == OpKind::kMatMul || l.kind == OpKind::kAdd || l.kind == OpKind::kMul) arity = 2;
  if (l.inputs.empty() && arity == 1) l.inputs.push_back(previous);
  if (l.kind == OpKind::kConcat ? l.inputs.size() < 2 : l.inputs.size() != arity) {
    r.diagnostics().error(
        r.pointer_of("inputs"),
        l.kind == OpKind::kConcat
            ? std::string("expected a list of 2 or more tensor names")
            : fmt::format("expected a list of {} tensor name{}", arity, arity == 1 ? "" : "s"));
  }
  const bool three_d = *op == "conv3d";
  const int rank = three_d ? 3 : 2;
  auto read_padding = [&] {
    const std::string padding = r.choice("padding", "valid", {"valid", "same", "explicit"});
    l.same_padding = padding == "same";
    auto pads = r.integer_list("pads", 2 * rank, 2 * rank, 0, 1 << 16, padding == "explicit");
    if (!pads.empty() && padding != "explicit") {
      r.diagnostics().error(r.pointer_of("pads"),
                            "pads are only allowed with \"padding\": \"explicit\"");
    }
    if (pads.size() == size_t(2 * rank)) {
      for (int a = 0; a < rank; ++a) {
        l.pads_begin[3 - rank + a] = static_cast<int>(pads[2 * a]);
        l.pads_end[3 - rank + a] = static_cast<int>(pads[2 * a + 1]);
      }
    }
  };
  auto read_activation = [&] {
    l.activation = *parse_activation(
        r.choice("activation", "none", {"none", "relu", "relu6", "sigmoid", "tanh", "gelu"}));
  };
  switch (l.kind) {
    case OpKind::kConv:
      l.filters = static_cast<int>(r.integer_required("filters", 1, 1 << 16).value_or(1));
      read_triple(r, "kernel", rank, l.kernel, 1, true);
      read_triple(r, "strides", rank, l.strides, 1, false);
      read_triple(r, "dilation", rank, l.dilation, 1, false);
      read_padding();
      l.groups = static_cast<int>(r.integer("groups", 1, 1, 1 << 16));
      read_activation();
      l.use_bias = r.boolean("use_bias", true);
      break;
    case OpKind::kDense:
      l.filters = static_cast<int>(r.integer_required("units", 1, 1 << 20).value_or(1));
      read_activation();
      l.use_bias = r.boolean("use_bias", true);
      break;
    case OpKind::kMatMul:
      l.transpose_b = r.boolean("transpose_b", false);
      read_activation();
      break;
    case OpKind::kMaxPool:
    case OpKind::kAvgPool: {
      if (*op == "global_avgpool") {
        l.global_pool = true;
        break;
      }
      auto pool = r.integer_list("pool", 2, 3, 1, 1 << 16, true);
      const int prank = pool.size() == 3 ? 3 : 2;
      if (!pool.empty()) {
        l.kernel = {1, static_cast<int>(pool[prank - 2]), static_cast<int>(pool[prank - 1])};
        if (prank == 3) l.kernel[0] = static_cast<int>(pool[0]);
      }
      std::array<int, 3> strides{};
      read_triple(r, "strides", prank, strides, 0, false);
      l.strides = strides[1] == 0 ? l.kernel : strides;
      const std::string padding = r.choice("padding", "valid", {"valid", "same", "explicit"});
      l.same_padding = padding == "same";
      auto pads = r.integer_list("pads", 2 * prank, 2 * prank, 0, 1 << 16, padding == "explicit");
      for (int a = 0; a < prank && pads.size() == size_t(2 * prank); ++a) {
        l.pads_begin[3 - prank + a] = static_cast<int>(pads[2 * a]);
        l.pads_end[3 - prank + a] = static_cast<int>(pads[2 * a + 1]);
      }
      if (l.kind == OpKind::kAvgPool) l.count_include_pad = r.boolean("count_include_pad", false);
      break;
    }
    case OpKind::kActivation:
      if (l.activation == Activation::kClip) {
        l.clip_min = static_cast<float>(r.number_required("min", -1e9, 1e9).value_or(0.0));
        l.clip_max = static_cast<float>(r.number_required("max", -1e9, 1e9).value_or(6.0));
        if (l.clip_min >= l.clip_max) {
          r.diagnostics().error(r.pointer_of("max"), "expected max > min");
        }
      }
      break;
    case OpKind::kAdd:
      read_activation();
      break;
    case OpKind::kReshape:
      if (*op == "reshape") {
        for (int64_t d : r.integer_list("shape", 1, 4, 1, 1 << 30, true)) {
          l.reshape_to.push_back(static_cast<int>(d));
        }
      }
      break;
    case OpKind::kLayerNorm:
    case OpKind::kBatchNorm:
      l.epsilon = static_cast<float>(r.number("epsilon", 1e-5, 0.0, 1.0));
      break;
    case OpKind::kMul:
    case OpKind::kConcat:
    case OpKind::kSoftmax:
      break;
  }
  return l;
}

}  // namespace

Graph parse_workload(const json& root, const std::string& origin) {
  JsonDiagnostics diag(origin);
  ObjectReader top(diag, &root, "", true);
  Graph g;
  auto version = top.integer_required("schema_version", 1, 1000);
  if (version && *version != kWorkloadSchemaVersion) {
    diag.error("/schema_version", fmt::format("expected {} (the version this npusim reads), got {}",
                                              kWorkloadSchemaVersion, *version));
  }
  g.name = top.string("name", "network");
  g.description = top.string("description", "");
  g.batch = static_cast<int>(top.integer("batch", 1, 1, 65536));
  {
    ObjectReader in = top.object("input", true);
    g.input_name = in.string("name", "input");
    for (int64_t d : in.integer_list("shape", 1, 4, 1, 1 << 24, true)) {
      g.input_shape.dims.push_back(static_cast<int>(d));
    }
    in.choice("dtype", "int8", {"int8"});
    in.choice("layout", "NHWC", {"NHWC"});
    g.input_scale = static_cast<float>(in.number("scale", 1.0 / 64, 1e-12, 1e12));
    in.finish();
  }
  std::vector<std::string> where;
  const json* layers = top.raw("layers");
  if (layers == nullptr || !layers->is_array() || layers->empty()) {
    diag.error("/layers", layers == nullptr ? "required key is missing"
                                            : "expected a non-empty list of layers");
  } else {
    std::string previous = g.input_name;
    for (size_t i = 0; i < layers->size(); ++i) {
      ObjectReader r(diag, &(*layers)[i], json_pointer_append("/layers", i), true);
      if (!r.present()) continue;
      Layer l = read_layer(r, i, previous);
      r.finish();
      previous = l.output;
      where.push_back(r.pointer());
      g.layers.push_back(std::move(l));
    }
  }
  g.outputs = top.string_list("outputs", false);
  if (g.outputs.empty() && !g.layers.empty()) g.outputs.push_back(g.layers.back().output);
  top.finish();
  diag.throw_if_errors();

  // Shapes: the same checks an ONNX import gets; messages use the layers' JSON pointers.
  GraphDiagnostics shapes(origin);
  for (auto& w : where) {
    w = w.empty() ? "/" : w;
  }
  finalize_graph(g, shapes, where);
  return g;
}

Graph load_workload(const std::string& spec, std::optional<int> batch) {
  Graph g;
  if (spec.size() > 5 && spec.compare(spec.size() - 5, 5, ".onnx") == 0) {
    if (!std::filesystem::exists(spec))
      throw UserError(fmt::format("--workload '{}': no such file", spec));
    g = import_onnx(spec, batch);
    g.channels_first_io = true;
    return g;
  }
  if (const EmbeddedFile* zoo = find_embedded_file("zoo", spec)) {
    std::string origin = fmt::format("workloads/zoo/{}.json", spec);
    g = parse_workload(parse_json_text(zoo->text, origin), origin);
  } else if (std::filesystem::exists(spec)) {
    g = parse_workload(parse_json_file(spec), spec);
  } else {
    throw UserError(fmt::format("--workload '{}': no such file and no such zoo network (zoo: {})",
                                spec, embedded_file_names_joined("zoo")));
  }
  if (batch) g.batch = *batch;
  return g;
}

namespace {

// splitmix64: a tiny, portable generator, so values are identical on every platform.
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  int64_t uniform_int(int64_t lo, int64_t hi) {  // inclusive
    return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1));
  }
  float uniform(float lo, float hi) {
    return lo + (hi - lo) * static_cast<float>((next() >> 40) * (1.0 / (1ull << 24)));
  }
};

uint64_t hash_name(const std::string& s) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

void fill(std::vector<float>& v, size_t n, SplitMix64& rng, float lo, float hi) {
  if (!v.empty()) return;
  v.resize(n);
  for (auto& x : v) x = rng.uniform(lo, hi);
}

// Second moment E[y^2] of an activation's output for an input of second moment m (unit-variance
// zero-mean Gaussian inputs scaled by m; approximations good enough to keep networks stable).
double activation_moment(Activation a, double m) {
  switch (a) {
    case Activation::kNone:
      return m;
    case Activation::kRelu:
    case Activation::kRelu6:
    case Activation::kClip:
      return m / 2;
    case Activation::kSigmoid:
      return 0.25 + m / 16;
    case Activation::kTanh:
      return m / (1 + m);
    case Activation::kGelu:
      return 0.4 * m;
  }
  return m;
}

}  // namespace

// Weights are drawn uniformly and scaled so that every conv / dense layer's pre-activation
// output has unit second moment given the second moment of its input, propagated analytically
// through the graph (an analytic form of layer-sequential unit-variance initialization, Mishkin &
// Matas 2016). Residual networks without batch norm then keep their activations, and the logits
// that reach a softmax, in a realistic range. Given weights (ONNX) are kept as they are.
void materialize_parameters(Graph& graph, uint64_t seed) {
  std::map<std::string, double> moment{{graph.input_name, 0.0}};
  {  // make_random_input: uniform int8 codes times the input scale
    const double s = graph.input_scale;
    moment[graph.input_name] = s * s * (128.0 * 128.0) / 3.0;
  }
  for (auto& l : graph.layers) {
    SplitMix64 rng{seed ^ hash_name(l.name)};
    const double m_in = l.inputs.empty() ? 1.0 : std::max(moment[l.inputs[0]], 1e-12);
    double m_out = m_in;
    if (l.has_weights()) {
      const double fan_in = static_cast<double>(std::max<uint64_t>(l.reduction(), 1));
      if (l.weights.empty()) {
        // Uniform(-a, a) has variance a^2 / 3: fan_in * m_in * a^2 / 3 = 1.
        const auto bound = static_cast<float>(std::sqrt(3.0 / (fan_in * m_in)));
        fill(l.weights, l.reduction() * l.filters, rng, -bound, bound);
        m_out = 1.0;
      } else {
        double w2 = 0.0;
        for (float w : l.weights) w2 += double(w) * w;
        m_out = fan_in * m_in * w2 / static_cast<double>(l.weights.size());
      }
      if (l.use_bias) {
        fill(l.bias, l.filters, rng, -0.1f, 0.1f);
      } else if (l.bias.empty()) {
        l.bias.assign(l.filters, 0.0f);
      }
      m_out = activation_moment(l.activation, m_out);
    }
    switch (l.kind) {
      case OpKind::kMatMul:
        m_out = activation_moment(l.activation, double(l.reduction()) * m_in * moment[l.inputs[1]]);
        break;
      case OpKind::kActivation:
        m_out = activation_moment(l.activation, m_in);
        break;
      case OpKind::kAdd:
        m_out = activation_moment(l.activation, m_in + moment[l.inputs[1]]);
        break;
      case OpKind::kMul:
        m_out = m_in * moment[l.inputs[1]];
        break;
      case OpKind::kConcat: {
        double sum = 0.0, channels = 0.0;
        for (size_t i = 0; i < l.inputs.size(); ++i) {
          sum += moment[l.inputs[i]] * l.in_shapes[i].last();
          channels += l.in_shapes[i].last();
        }
        m_out = sum / std::max(channels, 1.0);
        break;
      }
      case OpKind::kSoftmax:
        m_out = 1.0 / std::max(l.out_shape.last(), 1);
        break;
      case OpKind::kLayerNorm:
      case OpKind::kBatchNorm: {
        const size_t c = l.out_shape.last();
        fill(l.gamma, c, rng, 0.8f, 1.2f);
        fill(l.beta, c, rng, -0.1f, 0.1f);
        if (l.kind == OpKind::kBatchNorm) {
          fill(l.mean, c, rng, -0.1f, 0.1f);
          fill(l.variance, c, rng, 0.5f, 1.5f);
        }
        m_out = 1.0;
        break;
      }
      default:
        break;
    }
    moment[l.output] = m_out;
  }
}

std::vector<int8_t> make_random_input(const Graph& graph, uint64_t seed) {
  SplitMix64 rng{seed ^ hash_name("input:" + graph.input_name)};
  std::vector<int8_t> x(graph.input_shape.elements() * graph.batch);
  for (auto& v : x) v = static_cast<int8_t>(rng.uniform_int(-128, 127));
  return x;
}

}  // namespace npusim
