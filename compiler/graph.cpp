#include "compiler/graph.hpp"

#include <cmath>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "support/embedded_files.hpp"
#include "support/error.hpp"
#include "support/json_reader.hpp"

namespace npusim {

std::string to_string(const TensorShape& s) { return fmt::format("{}x{}x{}", s.h, s.w, s.c); }

const char* to_string(OpKind kind) {
  switch (kind) {
    case OpKind::kConv2d: return "conv2d";
    case OpKind::kDense: return "dense";
    case OpKind::kMaxPool: return "maxpool";
    case OpKind::kRelu: return "relu";
    case OpKind::kFlatten: return "flatten";
    case OpKind::kSoftmax: return "softmax";
  }
  return "?";
}

uint64_t Layer::macs(int batch) const {
  if (kind != OpKind::kConv2d && kind != OpKind::kDense) return 0;
  return uint64_t(batch) * out_shape.h * out_shape.w * out_shape.c * reduction();
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

namespace {

// Output size and padding of one spatial dimension, TensorFlow's "valid" / "same" rules.
struct SpatialResult {
  int out = 0;
  int pad_before = 0, pad_after = 0;
};

SpatialResult spatial(int in, int kernel, int stride, int dilation, const std::string& padding,
                      int explicit_before, int explicit_after) {
  SpatialResult r;
  int effective = dilation * (kernel - 1) + 1;
  if (padding == "same") {
    r.out = (in + stride - 1) / stride;
    int total = std::max((r.out - 1) * stride + effective - in, 0);
    r.pad_before = total / 2;
    r.pad_after = total - r.pad_before;
  } else {
    r.pad_before = padding == "explicit" ? explicit_before : 0;
    r.pad_after = padding == "explicit" ? explicit_after : 0;
    int span = in + r.pad_before + r.pad_after - effective;
    r.out = span < 0 ? 0 : span / stride + 1;
  }
  return r;
}

std::string known_tensor_names(const std::map<std::string, TensorShape>& shapes) {
  std::string names;
  for (const auto& entry : shapes) {
    if (!names.empty()) names += ", ";
    names += entry.first;
  }
  return names;
}

TensorShape read_shape(ObjectReader& r, const std::string& key) {
  auto dims = r.integer_list(key, 1, 3, 1, 1 << 20, true);
  TensorShape s;
  if (dims.size() == 1) s.c = static_cast<int>(dims[0]);
  if (dims.size() == 2) {
    r.diagnostics().error(r.pointer_of(key),
                          "expected [features] or [height, width, channels], got 2 dimensions");
  }
  if (dims.size() == 3) s = {static_cast<int>(dims[0]), static_cast<int>(dims[1]),
                             static_cast<int>(dims[2])};
  return s;
}

void read_pair(ObjectReader& r, const std::string& key, int fallback, int min, int max, int& a,
               int& b, bool required) {
  auto v = r.integer_list(key, 2, 2, min, max, required);
  if (v.size() == 2) {
    a = static_cast<int>(v[0]);
    b = static_cast<int>(v[1]);
  } else {
    a = b = fallback;
  }
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
    g.input_shape = read_shape(in, "shape");
    in.choice("dtype", "int8", {"int8"});
    in.choice("layout", "NHWC", {"NHWC"});
    g.input_scale = static_cast<float>(in.number("scale", 1.0 / 64, 1e-12, 1e12));
    in.finish();
  }

  std::map<std::string, TensorShape> shapes{{g.input_name, g.input_shape}};
  std::map<std::string, float> scales{{g.input_name, g.input_scale}};
  std::string previous = g.input_name;
  const json* layers = top.raw("layers");
  if (layers == nullptr || !layers->is_array() || layers->empty()) {
    diag.error("/layers", layers == nullptr ? "required key is missing"
                                            : "expected a non-empty list of layers");
  } else {
    for (size_t i = 0; i < layers->size(); ++i) {
      std::string ptr = json_pointer_append("/layers", i);
      ObjectReader r(diag, &(*layers)[i], ptr, true);
      if (!r.present()) continue;
      Layer l;
      l.name = r.string("name", fmt::format("layer{}", i));
      auto op = r.choice_required(
          "op", {"conv2d", "dense", "maxpool", "relu", "flatten", "softmax"});
      auto inputs = r.string_list("inputs", false);
      if (inputs.size() > 1) diag.error(r.pointer_of("inputs"), "expected exactly one input tensor");
      l.input = inputs.empty() ? previous : inputs[0];
      l.output = r.string("output", l.name);
      bool ok = op.has_value();
      if (ok && shapes.count(l.input) == 0) {
        diag.error(inputs.empty() ? ptr : json_pointer_append(r.pointer_of("inputs"), size_t{0}),
                   fmt::format("unknown tensor '{}' (tensors defined before this layer: {})",
                               l.input, known_tensor_names(shapes)));
        ok = false;
      }
      if (shapes.count(l.output) != 0) {
        diag.error(r.pointer_of("output"), fmt::format("tensor '{}' is already defined", l.output));
      }
      TensorShape in = ok ? shapes[l.input] : TensorShape{};
      l.in_shape = in;
      l.in_scale = ok ? scales[l.input] : 1.0f;
      l.out_scale = l.in_scale;
      std::string padding = "valid";
      if (op == "conv2d" || op == "maxpool") {
        bool conv = op == "conv2d";
        if (conv) l.filters = static_cast<int>(r.integer_required("filters", 1, 1 << 16).value_or(1));
        read_pair(r, conv ? "kernel" : "pool", 1, 1, 4096, l.kernel_h, l.kernel_w, true);
        read_pair(r, "strides", 0, 1, 4096, l.stride_h, l.stride_w, false);
        if (l.stride_h == 0) {
          l.stride_h = conv ? 1 : l.kernel_h;
          l.stride_w = conv ? 1 : l.kernel_w;
        }
        if (conv) read_pair(r, "dilation", 1, 1, 4096, l.dilation_h, l.dilation_w, false);
        padding = r.choice("padding", "valid", {"valid", "same", "explicit"});
        auto pads = r.integer_list("pads", 4, 4, 0, 4096, padding == "explicit");
        if (!pads.empty() && padding != "explicit") {
          diag.error(r.pointer_of("pads"), "pads are only allowed with \"padding\": \"explicit\"");
        }
        if (ok && !in.flat() && in.c > 0) {
          auto y = spatial(in.h, l.kernel_h, l.stride_h, l.dilation_h, padding,
                           pads.empty() ? 0 : int(pads[0]), pads.empty() ? 0 : int(pads[1]));
          auto x = spatial(in.w, l.kernel_w, l.stride_w, l.dilation_w, padding,
                           pads.empty() ? 0 : int(pads[2]), pads.empty() ? 0 : int(pads[3]));
          l.pad_top = y.pad_before, l.pad_bottom = y.pad_after;
          l.pad_left = x.pad_before, l.pad_right = x.pad_after;
          if (!conv && (l.pad_top >= l.kernel_h || l.pad_left >= l.kernel_w ||
                        l.pad_bottom >= l.kernel_h || l.pad_right >= l.kernel_w)) {
            diag.error(r.pointer_of("pads"), "pooling padding must be smaller than the window");
          }
          if (y.out <= 0 || x.out <= 0) {
            diag.error(ptr, fmt::format("impossible shape: a {}x{} window (dilation {}x{}) does "
                                        "not fit the {} input with padding {},{},{},{}",
                                        l.kernel_h, l.kernel_w, l.dilation_h, l.dilation_w,
                                        to_string(in), l.pad_top, l.pad_bottom, l.pad_left,
                                        l.pad_right));
            ok = false;
          }
          l.out_shape = {y.out, x.out, conv ? l.filters : in.c};
        } else if (ok) {
          diag.error(json_pointer_append(r.pointer_of("inputs"), size_t{0}),
                     fmt::format("{} needs a height x width x channels input, '{}' is flat ({})",
                                 *op, l.input, to_string(in)));
          ok = false;
        }
      }
      if (op == "conv2d" || op == "dense") {
        l.kind = op == "conv2d" ? OpKind::kConv2d : OpKind::kDense;
        l.relu = r.choice("activation", "none", {"none", "relu"}) == "relu";
        l.use_bias = r.boolean("use_bias", true);
      }
      if (op == "conv2d") l.kind = OpKind::kConv2d;
      if (op == "maxpool") l.kind = OpKind::kMaxPool;
      if (op == "dense") {
        l.filters = static_cast<int>(r.integer_required("units", 1, 1 << 20).value_or(1));
        if (ok && !in.flat()) {
          diag.error(ptr, fmt::format("dense needs a flat input, '{}' is {}: add a flatten layer "
                                      "before it",
                                      l.input, to_string(in)));
          ok = false;
        }
        l.out_shape = {1, 1, l.filters};
      }
      if (op == "relu") {
        l.kind = OpKind::kRelu;
        l.out_shape = in;
      }
      if (op == "flatten") {
        l.kind = OpKind::kFlatten;
        l.out_shape = {1, 1, static_cast<int>(in.elements())};
      }
      if (op == "softmax") {
        l.kind = OpKind::kSoftmax;
        l.out_shape = in;
        l.out_scale = kSoftmaxOutputScale;
        if (ok && !in.flat()) {
          diag.error(ptr, fmt::format("softmax needs a flat input, '{}' is {}", l.input,
                                      to_string(in)));
        }
      }
      r.finish();
      if (ok) {
        shapes[l.output] = l.out_shape;
        scales[l.output] = l.out_scale;
      }
      previous = l.output;
      g.layers.push_back(std::move(l));
    }
  }
  g.outputs = top.string_list("outputs", false);
  if (g.outputs.empty() && !g.layers.empty()) g.outputs.push_back(g.layers.back().output);
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    if (shapes.count(g.outputs[i]) == 0 && diag.ok()) {
      diag.error(json_pointer_append("/outputs", i),
                 fmt::format("unknown tensor '{}'", g.outputs[i]));
    }
  }
  top.finish();
  diag.throw_if_errors();
  return g;
}

Graph load_workload(const std::string& spec, std::optional<int> batch) {
  Graph g;
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
  int64_t uniform(int64_t lo, int64_t hi) {  // inclusive
    return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1));
  }
};

uint64_t hash_name(const std::string& s) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// Typical magnitudes: activations ~ 40 (std, in int8 units), weights uniform in [-127, 127]
// (std ~ 73). Scaling the accumulator by 1 / (73 sqrt(K)) keeps output activations near the same
// spread, so deep networks neither saturate nor vanish without calibration data.
constexpr double kActivationStd = 40.0;
constexpr double kWeightStd = 73.3;

}  // namespace

void materialize_parameters(Graph& graph, uint64_t seed) {
  for (auto& l : graph.layers) {
    if (l.kind != OpKind::kConv2d && l.kind != OpKind::kDense) continue;
    SplitMix64 rng{seed ^ hash_name(l.name)};
    const uint64_t k = l.reduction();
    const uint64_t n = static_cast<uint64_t>(l.filters);
    l.weights.resize(k * n);
    for (auto& w : l.weights) w = static_cast<int8_t>(rng.uniform(-127, 127));
    const double acc_std = std::sqrt(static_cast<double>(k)) * kActivationStd * kWeightStd;
    l.bias.assign(n, 0);
    if (l.use_bias) {
      auto bound = static_cast<int64_t>(acc_std / 4);
      for (auto& b : l.bias) b = static_cast<int32_t>(rng.uniform(-bound, bound));
    }
    const double m = kActivationStd / acc_std;
    l.requant = quant_multiplier_from_real(m);
  }
  // Propagate scales through scale-preserving layers.
  std::map<std::string, float> scales{{graph.input_name, graph.input_scale}};
  for (auto& l : graph.layers) {
    l.in_scale = scales[l.input];
    if (l.kind == OpKind::kConv2d || l.kind == OpKind::kDense) {
      // int8(out) = acc * m and weights have scale 1/127, so real(out) = int8(out) * in / 127 / m.
      l.out_scale = static_cast<float>(l.in_scale / 127.0 / l.requant.real());
    } else if (l.kind == OpKind::kSoftmax) {
      l.out_scale = kSoftmaxOutputScale;
    } else {
      l.out_scale = l.in_scale;
    }
    scales[l.output] = l.out_scale;
  }
}

std::vector<int8_t> make_random_input(const Graph& graph, uint64_t seed) {
  SplitMix64 rng{seed ^ hash_name("input:" + graph.input_name)};
  std::vector<int8_t> x(graph.input_shape.elements() * graph.batch);
  for (auto& v : x) v = static_cast<int8_t>(rng.uniform(-128, 127));
  return x;
}

}  // namespace npusim
