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
  const int64_t given = attr_int(n, "axis", opset >= 13 ? -1 : 1);
  const int a = sample_axis(*x, given);
  const std::string what = fmt::format("axis {} on input {}", given, dims_text(x->dims));
  if (a == -2) return fail(i, what + ": out of range");
  if (a == -1) return batch_axis_needed(i, what + ": softmax along axis 0");
  const auto ua = static_cast<size_t>(a);
  const std::string out = n.output(0);
  if (x->channels_first) {
    // The IR's softmax on a channels-last map runs over the channel axis.
    if (opset >= 13 && a != 0) return softmax_along_axis(i, *x, ua, out);
    if (a != 0 || (opset < 13 && product(x->dims, 1) != 1)) {
      return fail(i, fmt::format("{} (channels first): npusim's softmax runs over the channel "
                                 "axis of a feature map only (axis 1)",
                                 what));
    }
    Value v = *x;
    add_layer(i, OpKind::kSoftmax, {x->ir_name}, out);
    return set_value(out, std::move(v));
  }
  // Softmax over the elements from axis a on (before opset 13), or over axis a when the axes
  // after it have size 1: a softmax over the last axis of the tensor viewed as [outer, inner].
  const int64_t inner =
      opset < 13 ? product(x->dims, ua) : (product(x->dims, ua + 1) == 1 ? x->dims[ua] : 0);
  if (inner == 0) return softmax_along_axis(i, *x, ua, out);  // moved last and back
  const std::vector<int> dims = ir_dims(*x);
  const std::vector<int> view{static_cast<int>(product(x->dims) / inner), static_cast<int>(inner)};
  const bool reshape = dims.back() != inner;
  std::string in = x->ir_name;
  if (reshape) {
    in = out + "_rows";
    add_layer(i, OpKind::kReshape, {x->ir_name}, in).reshape_to = view;
  }
  add_layer(i, OpKind::kSoftmax, {in}, reshape ? out + "_softmax" : out);
  if (reshape) add_layer(i, OpKind::kReshape, {out + "_softmax"}, out).reshape_to = dims;
  Value v = *x;
  set_value(out, std::move(v));
}

void OnnxImporter::import_layer_norm(int i) {
  const Node& n = g_.node(i);
  const Value* x = activation(i, 0);
  if (!x) return;
  if (attr_int(n, "stash_type", 1) != 1) {
    return fail(i, fmt::format("stash_type {}: only 1 (float statistics) is supported",
                               attr_int(n, "stash_type", 1)));
  }
  const Constant* scale = constant(i, 1, "scale");
  if (!scale) return;
  const Constant* bias = optional_constant(i, 2, "bias");
  if (n.input_size() > 2 && !n.input(2).empty() && !bias) return;
  add_norm(i, x, scale, bias, attr_int(n, "axis", -1), attr_float(n, "epsilon", 1e-5f), false);
}

// RMSNorm found as its composition (find_rms_norm_patterns): over the last axis, gamma the
// pattern's weight (none: ones).
void OnnxImporter::import_rms_norm(int i, const RmsNormPattern& p) {
  auto x = values_.find(p.x);
  if (x == values_.end()) {
    return fail(i, fmt::format("RMSNorm input '{}' is not a run-time tensor", p.x));
  }
  const Constant* scale = nullptr;
  if (!p.scale.empty()) {
    auto c = constants_.find(p.scale);
    if (c == constants_.end()) {
      return fail(i, fmt::format("RMSNorm weight '{}' is not a constant", p.scale));
    }
    scale = &c->second;
  }
  add_norm(i, &x->second, scale, nullptr, -1, p.epsilon, true);
}

// A layer norm (RMSNorm when `rms`) of x over the axes from `given` on; scale null: ones.
void OnnxImporter::add_norm(int i, const Value* x, const Constant* scale, const Constant* bias,
                            int64_t given, float epsilon, bool rms) {
  const Node& n = g_.node(i);
  const int a = sample_axis(*x, given);
  const std::string what = fmt::format("axis {} on input {}", given, dims_text(x->dims));
  if (a == -2) return fail(i, what + ": out of range");
  if (a == -1) return batch_axis_needed(i, what + ": a normalization over axis 0");
  if (x->channels_first) {
    // A feature map ([C, (D,) H, W], channels last in the IR) is normalised in ONNX order: a
    // layout move first.
    const std::string name = n.output(0) + "_onnx_order";
    add_relayout(*x, false, name, where(i));
    Value v = *x;
    v.channels_first = false;
    set_value(name, std::move(v));
    x = &values_.at(name);
  }
  // Over the axes from `a` on: the tensor viewed as [outer, inner] when they are not just the last.
  const std::vector<int64_t> normalized(x->dims.begin() + a, x->dims.end());
  const int64_t inner = product(normalized);
  if (!x->flat_from.empty() && static_cast<size_t>(a) + 1 != x->dims.size()) {
    return fail(i, what + ": the input is a flattened channels-first feature map");
  }
  Value params_shape;  // scale and bias broadcast to the normalized axes
  params_shape.batched = false;
  params_shape.dims = normalized;
  std::vector<float> gamma(static_cast<size_t>(inner), 1.0f),
      beta(static_cast<size_t>(inner), 0.0f);
  std::string problem = scale ? broadcast_to(params_shape, *scale, gamma) : "";
  if (problem.empty() && bias) problem = broadcast_to(params_shape, *bias, beta);
  if (!problem.empty()) return fail(i, "scale / bias: " + problem);
  std::vector<int64_t> map;
  if (!x->flat_from.empty()) map = onnx_index_of_ir_index(x->flat_from);
  const std::string out = n.output(0);
  const std::vector<int> dims = ir_dims(*x);
  const bool reshape = normalized.size() > 1;
  std::string in = x->ir_name;
  if (reshape) {
    in = out + "_rows";
    add_layer(i, OpKind::kReshape, {x->ir_name}, in).reshape_to = {
        static_cast<int>(product(x->dims) / inner), static_cast<int>(inner)};
  }
  Layer& l = add_layer(i, OpKind::kLayerNorm, {in}, reshape ? out + "_normalized" : out);
  l.epsilon = epsilon;
  l.rms = rms;
  l.gamma = permuted(gamma, map);
  l.beta = permuted(beta, map);
  if (reshape) add_layer(i, OpKind::kReshape, {out + "_normalized"}, out).reshape_to = dims;
  const Value xv = *x;  // set_value may move values_
  set_value(out, Value(xv));
  if (!rms) layer_norm_statistics(i, xv, static_cast<size_t>(a), in, inner, epsilon);
}

// LayerNormalization's optional outputs Mean and InvStdDev (stash_type 1: in float), from the
// rows [outer, inner] the normalization reads, as layers of their own: the mean m = rows * (1 / n)
// (a dense layer); the centred rows d = rows + m * (-1, ..., -1) (the mean spread over the row by
// a dense layer, then an add); InvStdDev = rsqrt((d * d) * (1 / n) + epsilon). Both outputs get
// x's shape with the normalized axes kept as 1.
void OnnxImporter::layer_norm_statistics(int i, const Value& x, size_t a, const std::string& rows,
                                         int64_t inner, float epsilon) {
  const Node& n = g_.node(i);
  auto used = [&](int k) {
    return n.output_size() > k && !n.output(k).empty() && consumers_[n.output(k)] > 0;
  };
  if (!used(1) && !used(2)) return;
  Value stat = x;
  for (size_t k = a; k < stat.dims.size(); ++k) stat.dims[k] = 1;
  stat.flat_from.clear();
  const std::vector<int> stat_ir = ir_dims(stat);
  const auto count = static_cast<size_t>(inner);
  const float share = 1.0f / static_cast<float>(inner);
  const std::string& base = n.output(0);
  auto dense = [&](const std::string& in, const std::string& out, int64_t units,
                   std::vector<float> weights, float bias) {
    Layer& l = add_layer(i, OpKind::kDense, {in}, out);
    l.filters = static_cast<int>(units);
    l.weights = std::move(weights);
    l.use_bias = bias != 0.0f;
    l.bias.assign(static_cast<size_t>(units), bias);
    return out;
  };
  // The IR shape of a statistic, the rows' last axis reduced to 1; reshaped to ONNX's unless
  // that is the same.
  std::vector<int> reduced = ir_dims(x);
  if (rows != x.ir_name) reduced = {static_cast<int>(product(x.dims) / inner), 1};
  reduced.back() = 1;
  const bool same = reduced == stat_ir;
  auto ir_name = [&](int k) { return same ? n.output(k) : n.output(k) + "_rows"; };
  auto publish = [&](int k) {  // output k, once the layer writing ir_name(k) is in
    if (!same) add_layer(i, OpKind::kReshape, {ir_name(k)}, n.output(k)).reshape_to = stat_ir;
    set_value(n.output(k), Value(stat));
  };
  const std::string mean =
      dense(rows, used(1) ? ir_name(1) : base + "_mean", 1, std::vector<float>(count, share), 0.0f);
  if (used(1)) publish(1);
  if (!used(2)) return;
  const std::string minus_mean =
      dense(mean, base + "_minus_mean", inner, std::vector<float>(count, -1.0f), 0.0f);
  add_layer(i, OpKind::kAdd, {rows, minus_mean}, base + "_centred");
  add_layer(i, OpKind::kMul, {base + "_centred", base + "_centred"}, base + "_squares");
  const std::string var =
      dense(base + "_squares", base + "_variance", 1, std::vector<float>(count, share), epsilon);
  add_layer(i, OpKind::kActivation, {var}, ir_name(2)).activation = Activation::kRsqrt;
  publish(2);
}

void OnnxImporter::import_batch_norm(int i) {
  const Node& n = g_.node(i);
  const Value* x = activation(i, 0);
  if (!x) return;
  if (!extra_outputs_unused(i)) return;
  if (attr_int(n, "training_mode", 0) != 0) {
    return fail(i, "training_mode 1 is not supported (inference only)");
  }
  // The channel axis is ONNX axis 1.
  const int ca = sample_axis(*x, 1);
  if (ca < 0) {
    return fail(i, fmt::format("input {} has no channel axis 1", dims_text(x->dims)));
  }
  const int64_t channels = x->dims[static_cast<size_t>(ca)];
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
  // Folding scales the producer's output channels: the channel axis must be its last IR axis.
  const bool channels_last_in_ir =
      x->channels_first || static_cast<size_t>(ca) + 1 == x->dims.size();
  if (!producer || !producer->has_weights() || ir_readers(x->ir_name) != 1 ||
      !channels_last_in_ir) {
    // Nothing to fold into: y = x * gamma / sqrt(var + eps) + (beta - mean * that), per channel,
    // as a depthwise 1x1 conv.
    const float eps = attr_float(n, "epsilon", 1e-5f);
    Constant scale, shift;
    scale.dims.assign(static_cast<size_t>(onnx_rank(*x) - 1), 1);  // (C, 1, ..., 1)
    scale.dims[0] = channels;
    shift.dims = scale.dims;
    for (int64_t c = 0; c < channels; ++c) {
      const float s = params[0]->values[c] / std::sqrt(params[3]->values[c] + eps);
      scale.values.push_back(s);
      shift.values.push_back(params[1]->values[c] - params[2]->values[c] * s);
    }
    std::vector<float> s, b;
    std::string problem = broadcast_to(*x, scale, s);
    if (problem.empty()) problem = broadcast_to(*x, shift, b);
    if (!problem.empty()) return fail(i, problem);
    return import_affine(i, *x, std::move(s), std::move(b));
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
