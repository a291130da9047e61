// The JSON graph front end: reads a workload file (docs/workload_format.md) into the graph IR,
// every problem at once with its JSON pointer.
#include "compiler/frontend/json_graph.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <vector>

#include "compiler/ir/op_table.hpp"
#include "compiler/ir/shape_inference.hpp"
#include "support/error.hpp"
#include "support/json_reader.hpp"

namespace npusim {

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
    {"gelu_tanh", OpKind::kActivation, Activation::kGeluTanh},
    {"add", OpKind::kAdd, Activation::kNone},
    {"mul", OpKind::kMul, Activation::kNone},
    {"concat", OpKind::kConcat, Activation::kNone},
    {"flatten", OpKind::kReshape, Activation::kNone},
    {"reshape", OpKind::kReshape, Activation::kNone},
    {"softmax", OpKind::kSoftmax, Activation::kNone},
    {"layernorm", OpKind::kLayerNorm, Activation::kNone},
    {"batchnorm", OpKind::kBatchNorm, Activation::kNone},
    {"transpose", OpKind::kMove, Activation::kNone},
};

// Reads one layer's keys (types, ranges, unknown keys); shapes are checked by finalize_graph. A
// transpose's permutation goes to `perm` (its element table needs the input's shape).
Layer read_layer(ObjectReader& r, size_t index, const std::string& previous,
                 std::vector<int>& perm) {
  Layer l;
  l.name = r.string("name", fmt::format("layer{}", index));
  const auto op = r.choice_required(
      "op", {"conv2d",         "conv3d",    "dense",     "matmul",    "maxpool",  "avgpool",
             "global_avgpool", "relu",      "relu6",     "clip",      "sigmoid",  "tanh",
             "gelu",           "gelu_tanh", "add",       "mul",       "concat",   "flatten",
             "reshape",        "softmax",   "layernorm", "batchnorm", "transpose"});
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
  const OpInfo& info = op_info(l.kind);
  const size_t arity = static_cast<size_t>(info.min_inputs);
  const bool single = info.max_inputs == 1 || *op == "transpose";  // a move of one input
  const bool open_ended = !single && info.max_inputs == 0;         // concat: `arity` or more
  if (l.inputs.empty() && single) l.inputs.push_back(previous);
  if (open_ended ? l.inputs.size() < arity : l.inputs.size() != arity) {
    r.diagnostics().error(
        r.pointer_of("inputs"),
        open_ended
            ? fmt::format("expected a list of {} or more tensor names", arity)
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
    l.activation = *parse_activation(r.choice(
        "activation", "none", {"none", "relu", "relu6", "sigmoid", "tanh", "gelu", "gelu_tanh"}));
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
      if (l.kind == OpKind::kLayerNorm) l.rms = r.boolean("rms", false);
      break;
    case OpKind::kMove: {  // transpose
      l.move_op = "transpose";
      for (int64_t a : r.integer_list("perm", 1, 8, 0, 7, true)) perm.push_back(int(a));
      std::vector<int> sorted = perm;
      std::sort(sorted.begin(), sorted.end());
      for (size_t a = 0; a < sorted.size(); ++a) {
        if (sorted[a] != int(a)) {
          r.diagnostics().error(r.pointer_of("perm"),
                                fmt::format("expected a permutation of the axes 0 to {}, each once",
                                            perm.size() - 1));
          perm.clear();
          break;
        }
      }
      break;
    }
    case OpKind::kMul:
    case OpKind::kConcat:
    case OpKind::kSoftmax:
    case OpKind::kEmbedding:  // not a JSON op: the ONNX front end builds it
      break;
  }
  return l;
}

// A transpose's element table: output element (row-major over the permuted shape) j copies the
// input element whose coordinate along axis perm[a] is j's coordinate along axis a.
void fill_transpose(Layer& l, const TensorShape& in, const std::vector<int>& perm) {
  const int rank = in.rank();
  std::vector<uint64_t> in_stride(size_t(rank), 1);
  for (int a = rank - 2; a >= 0; --a) in_stride[a] = in_stride[a + 1] * uint64_t(in.dims[a + 1]);
  l.reshape_to.clear();
  for (int a : perm) l.reshape_to.push_back(in.dims[size_t(a)]);
  std::vector<int> at(size_t(rank), 0);  // the output coordinate of element j
  for (uint64_t j = 0; j < in.elements(); ++j) {
    uint64_t src = 0;
    for (int a = 0; a < rank; ++a) src += uint64_t(at[a]) * in_stride[size_t(perm[a])];
    l.move_from.push_back(MoveSource{0, int32_t(src)});
    for (int a = rank - 1; a >= 0 && ++at[a] == l.reshape_to[a]; --a) at[a] = 0;
  }
}

// Builds every transpose's element table. It needs the input's shape, so this walks the layers
// in order inferring shapes as finalize_graph will, which then reports every problem; a layer
// whose shape fails here only leaves the transposes that depend on it without a table.
void build_transposes(Graph& g, const std::vector<std::vector<int>>& perms,
                      const std::vector<std::string>& where, GraphDiagnostics& diag) {
  std::map<std::string, TensorShape> shapes{{g.input_name, g.input_shape}};
  for (size_t i = 0; i < g.layers.size(); ++i) {
    Layer& l = g.layers[i];
    l.in_shapes.clear();
    for (const auto& name : l.inputs) {
      auto it = shapes.find(name);
      if (it != shapes.end()) l.in_shapes.push_back(it->second);
    }
    if (l.in_shapes.size() != l.inputs.size()) continue;
    if (l.kind == OpKind::kMove) {
      const TensorShape& in = l.in_shapes[0];
      if (perms[i].empty()) continue;  // not a permutation: reported where it was read
      if (perms[i].size() != size_t(in.rank())) {
        diag.error(where[i] + "/perm",
                   fmt::format("expected {} axes, a permutation of the axes of input '{}' {}",
                               in.rank(), l.inputs[0], to_string(in)));
        continue;
      }
      // Every element gets a table entry; the ONNX importer's moves have the same bound.
      constexpr uint64_t kMaxTransposeElements = uint64_t(1) << 24;
      if (in.elements() > kMaxTransposeElements) {
        diag.error(where[i], fmt::format("input '{}' {} has more than {} elements per sample",
                                         l.inputs[0], to_string(in), kMaxTransposeElements));
        continue;
      }
      fill_transpose(l, in, perms[i]);
    }
    if (op_info(l.kind).infer_shape(l, [](const std::string&) { return false; })) {
      shapes[l.output] = l.out_shape;
    }
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
    for (int64_t d : in.integer_list("shape", 1, 4, 1, 1 << 24, true)) {
      g.input_shape.dims.push_back(static_cast<int>(d));
    }
    in.choice("dtype", "int8", {"int8"});
    in.choice("layout", "NHWC", {"NHWC"});
    g.input_scale = static_cast<float>(in.number("scale", 1.0 / 64, 1e-12, 1e12));
    in.finish();
  }
  std::vector<std::string> where;
  std::vector<std::vector<int>> perms;  // per layer: a transpose's permutation
  const json* layers = top.raw("layers");
  if (layers == nullptr || !layers->is_array() || layers->empty()) {
    diag.error("/layers", layers == nullptr ? "required key is missing"
                                            : "expected a non-empty list of layers");
  } else {
    std::string previous = g.input_name;
    for (size_t i = 0; i < layers->size(); ++i) {
      ObjectReader r(diag, &(*layers)[i], json_pointer_append("/layers", i), true);
      if (!r.present()) continue;
      Layer l = read_layer(r, i, previous, perms.emplace_back());
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
  build_transposes(g, perms, where, shapes);
  shapes.throw_if_errors();
  finalize_graph(g, shapes, where);
  return g;
}

}  // namespace npusim
