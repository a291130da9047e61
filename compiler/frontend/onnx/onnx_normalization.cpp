// ONNX translators of normalizations: Softmax, LayerNormalization, BatchNormalization.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "compiler/frontend/onnx/onnx_importer.hpp"

namespace npusim::onnx_frontend {

void OnnxImporter::import_softmax(int i) {
  const Node& n = g_.node(i);
  const Value* x = activation(i, 0);
  if (!x) return;
  const int opset = opset_;
  const int64_t rank = static_cast<int64_t>(x->dims.size()) + 1;  // with the batch
  int64_t axis = attr_int(n, "axis", opset >= 13 ? -1 : 1);
  if (axis < 0) axis += rank;
  // Before opset 13 Softmax normalises over every axis from `axis` on; that matches the IR's
  // softmax over the last (plain) or channel (channels first) axis when the extra axes have
  // size 1.
  bool ok = false;
  if (axis >= 1 && axis < rank) {
    const size_t a = static_cast<size_t>(axis - 1);  // per-sample index
    if (x->channels_first) {
      ok = a == 0 && (opset >= 13 || product(x->dims, 1) == 1);
    } else {
      ok = opset >= 13 ? a + 1 == x->dims.size() : product(x->dims, a) == x->dims.back();
    }
  }
  if (!ok) {
    return fail(
        i, fmt::format("axis {} on input [N, {}]{}: npusim's softmax runs over the "
                       "{} axis only (axis {})",
                       attr_int(n, "axis", opset >= 13 ? -1 : 1), fmt::join(x->dims, ", "),
                       x->channels_first ? " (channels first)" : "",
                       x->channels_first ? "channel" : "last", x->channels_first ? 1 : rank - 1));
  }
  const std::string out = n.output(0);
  Value v = *x;
  add_layer(i, OpKind::kSoftmax, {x->ir_name}, out);
  set_value(out, std::move(v));
}

void OnnxImporter::import_layer_norm(int i) {
  const Node& n = g_.node(i);
  const Value* x = activation(i, 0);
  if (!x) return;
  if (!extra_outputs_unused(i)) return;
  const Constant* scale = constant(i, 1, "scale");
  if (!scale) return;
  const Constant* bias = optional_constant(i, 2, "bias");
  if (n.input_size() > 2 && !n.input(2).empty() && !bias) return;
  const int64_t rank = static_cast<int64_t>(x->dims.size()) + 1;
  int64_t axis = attr_int(n, "axis", -1);
  if (axis < 0) axis += rank;
  if (x->channels_first || axis != rank - 1) {
    return fail(i, fmt::format("axis {} on input [N, {}]{}: npusim normalises over the last axis "
                               "of a (N, features) or (N, rows, features) tensor only",
                               attr_int(n, "axis", -1), fmt::join(x->dims, ", "),
                               x->channels_first ? " (channels first)" : ""));
  }
  const int64_t f = x->dims.back();
  for (const Constant* c : {scale, bias}) {
    if (c && (c->is_int || c->elements() != static_cast<uint64_t>(f))) {
      return fail(i, fmt::format("scale and bias must have {} floats, got shape {}", f,
                                 dims_text(c->dims)));
    }
  }
  std::vector<int64_t> map;
  if (!x->flat_from.empty()) map = onnx_index_of_ir_index(x->flat_from);
  const std::string out = n.output(0);
  Value v = *x;
  Layer& l = add_layer(i, OpKind::kLayerNorm, {x->ir_name}, out);
  l.epsilon = attr_float(n, "epsilon", 1e-5f);
  l.gamma = permuted(scale->values, map);
  l.beta = bias ? permuted(bias->values, map) : std::vector<float>(static_cast<size_t>(f), 0.0f);
  set_value(out, std::move(v));
}

void OnnxImporter::import_batch_norm(int i) {
  const Node& n = g_.node(i);
  const Value* x = activation(i, 0);
  if (!x) return;
  if (!extra_outputs_unused(i)) return;
  if (attr_int(n, "training_mode", 0) != 0) {
    return fail(i, "training_mode 1 is not supported (inference only)");
  }
  if (!x->channels_first && x->dims.size() != 1) {
    return fail(i, fmt::format("input [N, {}]: npusim normalises the channels of a feature map or "
                               "the features of an (N, features) tensor",
                               fmt::join(x->dims, ", ")));
  }
  const int64_t channels = x->dims[0];
  const char* roles[4] = {"scale", "bias", "mean", "variance"};
  const Constant* params[4];
  for (int k = 0; k < 4; ++k) {
    params[k] = constant(i, k + 1, roles[k]);
    if (!params[k]) return;
    if (params[k]->is_int || params[k]->elements() != static_cast<uint64_t>(channels)) {
      return fail(i, fmt::format("{} '{}' must have {} floats (one per channel), got shape {}",
                                 roles[k], n.input(k + 1), channels, dims_text(params[k]->dims)));
    }
  }
  const Layer* producer = x->layer >= 0 ? &graph_.layers[static_cast<size_t>(x->layer)] : nullptr;
  if (!producer || !producer->has_weights() || ir_readers(x->ir_name) != 1) {
    return fail(i, fmt::format("input '{}' must come from a Conv, Gemm or MatMul whose output "
                               "nothing else reads: npusim folds batch normalization into it",
                               n.input(0)));
  }
  std::vector<int64_t> map;
  if (!x->flat_from.empty()) map = onnx_index_of_ir_index(x->flat_from);
  const std::string out = n.output(0);
  Value v = *x;
  Layer& l = add_layer(i, OpKind::kBatchNorm, {x->ir_name}, out);
  l.epsilon = attr_float(n, "epsilon", 1e-5f);
  l.gamma = permuted(params[0]->values, map);
  l.beta = permuted(params[1]->values, map);
  l.mean = permuted(params[2]->values, map);
  l.variance = permuted(params[3]->values, map);
  set_value(out, std::move(v));
}

}  // namespace npusim::onnx_frontend
