// Shape inference and graph checks shared by every front end (docs/workload_format.md).
#include "compiler/ir/shape_inference.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "compiler/ir/op_table.hpp"
#include "support/error.hpp"

namespace npusim {

void GraphDiagnostics::error(const std::string& where, const std::string& message) {
  messages_.push_back(fmt::format("{}: {}: {}", origin_, where, message));
}

void GraphDiagnostics::throw_if_errors() const {
  if (!messages_.empty()) throw UserErrors(messages_);
}

namespace {

std::string tensor_names(const std::map<std::string, TensorShape>& shapes) {
  std::string names;
  for (const auto& entry : shapes) {
    if (!names.empty()) names += ", ";
    names += entry.first;
  }
  return names;
}

// Shape rule of the layer's op (compiler/ir/op_table.hpp); false (after reporting) when the
// layer's shape is impossible.
bool infer_layer(Layer& l, const std::string& where, GraphDiagnostics& diag) {
  return op_info(l.kind).infer_shape(l, [&](const std::string& message) {
    diag.error(where, message);
    return false;
  });
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
