#include "compiler/passes/training_step.hpp"

#include <fmt/format.h>

#include "compiler/ir/op_table.hpp"
#include "compiler/ir/shape_inference.hpp"
#include "support/error.hpp"

namespace npusim {

void check_trainable(const Graph& g, const std::string& origin) {
  if (g.outputs.size() != 1 || g.layers.empty() || g.layers.back().kind != OpKind::kSoftmax ||
      g.layers.back().output != g.outputs[0]) {
    throw UserError(fmt::format(
        "{}: training needs a classifier whose one output is a final softmax (its loss is the "
        "softmax cross-entropy)",
        origin));
  }
  if (g.input_ids) {
    throw UserError(fmt::format("{}: training does not take token ids as input yet", origin));
  }
  for (size_t i = 0; i + 1 < g.layers.size(); ++i) {
    const Layer& l = g.layers[i];
    if (op_info(l.kind).backward == nullptr) {
      throw UserError(fmt::format(
          "{}: layer '{}' ({}): training has no backward rule for {} yet (docs/training.md lists "
          "the operators it differentiates)",
          origin, l.name, to_string(l.kind), to_string(l.kind)));
    }
    if (l.kind == OpKind::kActivation && l.activation != Activation::kRelu) {
      throw UserError(
          fmt::format("{}: layer '{}': training has no backward rule for activation '{}' yet",
                      origin, l.name, to_string(l.activation)));
    }
    if (l.has_weights() && l.activation != Activation::kNone && l.activation != Activation::kRelu) {
      throw UserError(fmt::format(
          "{}: layer '{}': training has no backward rule for its fused activation '{}' yet", origin,
          l.name, to_string(l.activation)));
    }
  }
}

std::vector<float> minus_onehot(const std::vector<int>& labels, int classes) {
  std::vector<float> v(labels.size() * size_t(classes), 0.0f);
  for (size_t i = 0; i < labels.size(); ++i) {
    NPUSIM_CHECK(labels[i] >= 0 && labels[i] < classes, "training: label {} of {} classes",
                 labels[i], classes);
    v[i * size_t(classes) + size_t(labels[i])] = -1.0f;
  }
  return v;
}

TrainingStep build_training_step(const Graph& fwd, int batch, const std::vector<int>& labels,
                                 int mean_over) {
  NPUSIM_CHECK(batch >= 1 && labels.size() == size_t(batch), "training: {} labels for batch {}",
               labels.size(), batch);
  if (mean_over == 0) mean_over = batch;
  NPUSIM_CHECK(mean_over >= batch, "training: the mean over {} samples of a batch of {}", mean_over,
               batch);
  TrainingStep t;
  Graph& g = t.graph;
  g.name = fwd.name + ".train_step";
  g.description = fmt::format("one training step of {} at batch {}", fwd.name, batch);
  g.batch = 1;
  g.input_name = fwd.input_name;
  g.input_shape.dims = {batch};
  g.input_shape.dims.insert(g.input_shape.dims.end(), fwd.input_shape.dims.begin(),
                            fwd.input_shape.dims.end());
  BackwardBuilder b(g);
  b.batch = batch;
  for (const Layer& f : fwd.layers) {
    bool needs = f.has_weights();
    for (const std::string& in : f.inputs) needs = needs || b.needs_gradient.count(in) > 0;
    if (needs) b.needs_gradient.insert(f.output);
  }
  b.sample_shape[fwd.input_name] = fwd.input_shape;
  for (const Layer& f : fwd.layers) b.sample_shape[f.output] = f.out_shape;

  // The forward pass: the same layers on [batch] + sample shapes.
  for (const Layer& f : fwd.layers) {
    Layer l = f;
    l.in_shapes.clear();
    l.out_shape = {};
    if (l.kind == OpKind::kReshape) l.reshape_to = b.step_dims(f.output);
    // Its window is resolved ([1, H, W]); on [batch, H, W, C] a global pool would take the batch.
    l.global_pool = false;
    t.forward_layers.insert(l.name);
    g.layers.push_back(std::move(l));
  }
  const Layer& softmax = fwd.layers.back();
  t.logits = softmax.inputs[0];
  t.classes = softmax.out_shape.last();
  NPUSIM_CHECK(softmax.out_shape.rank() == 1, "training: softmax {} of shape {}", softmax.name,
               to_string(softmax.out_shape));

  // Softmax cross-entropy, mean over the batch: dL/dlogits = (softmax - onehot) / mean_over. The
  // labels are the constants of a move whose every element is constant j (a run of the constants
  // block): another batch's labels change those bytes, not the move's boxes.
  const std::vector<int> dims{batch, t.classes};
  std::vector<int32_t> each(size_t(batch) * t.classes);
  for (size_t j = 0; j < each.size(); ++j) each[j] = int32_t(j);
  t.labels_layer = b.add(constant_move("loss.minus_onehot", softmax.output, dims,
                                       minus_onehot(labels, t.classes), each));
  const std::string& minus_labels = t.labels_layer;
  Layer diff;
  diff.name = diff.output = "loss.softmax_minus_onehot";
  diff.kind = OpKind::kAdd;
  diff.inputs = {softmax.output, minus_labels};
  const std::string d = b.add(std::move(diff));
  const std::string inv_batch =
      b.add(constant_move("loss.inverse_batch", softmax.output, dims, {1.0f / float(mean_over)},
                          std::vector<int32_t>(size_t(batch) * t.classes, 0)));
  Layer mean;
  mean.name = mean.output = "loss.grad_logits";
  mean.kind = OpKind::kMul;
  mean.inputs = {d, inv_batch};
  b.gradient[t.logits] = b.add(std::move(mean));

  // The backward pass: every layer before the softmax, last first.
  for (size_t i = fwd.layers.size() - 1; i-- > 0;) {
    const Layer& l = fwd.layers[i];
    const BackwardRule rule = op_info(l.kind).backward;
    NPUSIM_CHECK(rule != nullptr, "training: layer {} has no backward rule", l.name);
    rule(b, l);
  }
  t.parameters = b.parameters;
  for (const Layer& f : fwd.layers) {
    if (f.has_weights()) t.weight_uses.push_back({f.name, f.name, false});
  }
  t.weight_uses.insert(t.weight_uses.end(), b.weight_uses.begin(), b.weight_uses.end());
  g.outputs.push_back(t.logits);
  for (const ParameterGradient& p : t.parameters) g.outputs.push_back(p.tensor);

  std::vector<std::string> where;
  for (const Layer& l : g.layers) where.push_back(fmt::format("layer '{}'", l.name));
  GraphDiagnostics diag(g.name);
  finalize_graph(g, diag, where);
  return t;
}

}  // namespace npusim
