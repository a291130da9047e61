#include "compiler/passes/training_step.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "compiler/ir/op_table.hpp"
#include "compiler/ir/shape_inference.hpp"
#include "support/error.hpp"

namespace npusim {

const char* to_string(TrainingLoss loss) {
  return loss == TrainingLoss::kCrossEntropy ? "xent" : "mse";
}

TrainingLoss training_loss(const Graph& g, const std::string& requested,
                           const std::string& origin) {
  const bool classifier = g.outputs.size() == 1 && !g.layers.empty() &&
                          g.layers.back().kind == OpKind::kSoftmax &&
                          g.layers.back().output == g.outputs[0];
  if (requested == "auto") {
    return classifier ? TrainingLoss::kCrossEntropy : TrainingLoss::kMeanSquaredError;
  }
  if (requested == "xent") {
    if (!classifier) {
      throw UserError(fmt::format(
          "{}: --loss xent needs a classifier whose one output is a final softmax; this "
          "workload's output is not one (--loss mse trains it against float targets)",
          origin));
    }
    return TrainingLoss::kCrossEntropy;
  }
  if (requested == "mse") {
    if (classifier) {
      throw UserError(
          fmt::format("{}: --loss mse: the workload's output is a final softmax, whose loss is the "
                      "cross-entropy (--loss xent)",
                      origin));
    }
    return TrainingLoss::kMeanSquaredError;
  }
  throw UserError(fmt::format("--loss '{}': expected xent, mse or auto", requested));
}

void check_trainable(const Graph& g, const std::string& origin, TrainingLoss loss) {
  const bool mse = loss == TrainingLoss::kMeanSquaredError;
  if (mse && (g.outputs.size() != 1 || g.layers.empty() || g.layers.back().output != g.outputs[0] ||
              g.layers.back().kind == OpKind::kSoftmax)) {
    throw UserError(fmt::format(
        "{}: the mean squared error trains a workload whose one output is its last layer's, not "
        "a softmax",
        origin));
  }
  if (!mse &&
      (g.outputs.size() != 1 || g.layers.empty() || g.layers.back().kind != OpKind::kSoftmax ||
       g.layers.back().output != g.outputs[0])) {
    throw UserError(fmt::format(
        "{}: training needs a classifier whose one output is a final softmax (its loss is the "
        "softmax cross-entropy)",
        origin));
  }
  if (g.input_ids) {
    throw UserError(fmt::format("{}: training does not take token ids as input yet", origin));
  }
  for (size_t i = 0; i + (mse ? 0 : 1) < g.layers.size(); ++i) {
    const Layer& l = g.layers[i];
    if (op_info(l.kind).backward == nullptr) {
      throw UserError(fmt::format(
          "{}: layer '{}' ({}): training has no backward rule for {} yet (docs/training.md lists "
          "the operators it differentiates)",
          origin, l.name, to_string(l.kind), to_string(l.kind)));
    }
    const bool differentiable =
        l.activation == Activation::kRelu || l.activation == Activation::kGelu;
    if (l.kind == OpKind::kActivation && !differentiable) {
      throw UserError(
          fmt::format("{}: layer '{}': training has no backward rule for activation '{}' yet",
                      origin, l.name, to_string(l.activation)));
    }
    if ((l.has_weights() || l.kind == OpKind::kMatMul || l.kind == OpKind::kAdd) &&
        l.activation != Activation::kNone && !differentiable) {
      throw UserError(fmt::format(
          "{}: layer '{}': training has no backward rule for its fused activation '{}' yet", origin,
          l.name, to_string(l.activation)));
    }
  }
}

std::vector<float> minus_targets(const std::vector<float>& targets) {
  std::vector<float> v(targets.size());
  for (size_t i = 0; i < v.size(); ++i) v[i] = -targets[i];
  return v;
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

namespace {

// A forward move of the step graph: the same element table for each of the `batch` samples, the
// leading dimension of its inputs and output.
void batch_move(Layer& l, const Layer& f, int batch) {
  l.reshape_to = {batch};
  l.reshape_to.insert(l.reshape_to.end(), f.out_shape.dims.begin(), f.out_shape.dims.end());
  l.move_from.clear();
  for (int n = 0; n < batch; ++n) {
    for (const MoveRun& r : f.move_from.runs()) {
      const int64_t offset =
          r.input < 0 ? 0 : int64_t(n) * int64_t(f.in_shapes.at(size_t(r.input)).elements());
      NPUSIM_CHECK(std::max<int64_t>(r.first, r.at(r.count - 1).element) + offset <= INT32_MAX,
                   "training: move {} is too large", f.name);
      l.move_from.append(r.input, int32_t(r.first + offset), r.stride, r.count);
    }
  }
}

// The step graph's header and the forward pass: the same layers on [batch] + sample shapes.
void add_forward(const Graph& fwd, int batch, TrainingStep& t, BackwardBuilder& b) {
  Graph& g = t.graph;
  g.name = fwd.name + ".train_step";
  g.description = fmt::format("one training step of {} at batch {}", fwd.name, batch);
  g.batch = 1;
  g.input_name = fwd.input_name;
  g.input_shape.dims = {batch};
  g.input_shape.dims.insert(g.input_shape.dims.end(), fwd.input_shape.dims.begin(),
                            fwd.input_shape.dims.end());
  b.batch = batch;
  for (const Layer& f : fwd.layers) {
    bool needs = f.has_weights() || f.kind == OpKind::kLayerNorm;
    for (const std::string& in : f.inputs) needs = needs || b.needs_gradient.count(in) > 0;
    if (needs) b.needs_gradient.insert(f.output);
  }
  b.sample_shape[fwd.input_name] = fwd.input_shape;
  for (const Layer& f : fwd.layers) b.sample_shape[f.output] = f.out_shape;
  for (const Layer& f : fwd.layers) {
    Layer l = f;
    l.in_shapes.clear();
    l.out_shape = {};
    if (l.kind == OpKind::kReshape) l.reshape_to = b.step_dims(f.output);
    if (l.kind == OpKind::kMove) batch_move(l, f, batch);
    // Its window is resolved ([1, H, W]); on [batch, H, W, C] a global pool would take the batch.
    l.global_pool = false;
    t.forward_layers.insert(l.name);
    g.layers.push_back(std::move(l));
  }
}

// The backward rules of the forward layers [0, end), last first; the step's outputs.
void add_backward(const Graph& fwd, size_t end, TrainingStep& t, BackwardBuilder& b) {
  for (size_t i = end; i-- > 0;) {
    const Layer& l = fwd.layers[i];
    const BackwardRule rule = op_info(l.kind).backward;
    NPUSIM_CHECK(rule != nullptr, "training: layer {} has no backward rule", l.name);
    rule(b, l);
  }
  Graph& g = t.graph;
  t.parameters = b.parameters;
  for (const Layer& f : fwd.layers) {
    if (f.has_weights() || f.kind == OpKind::kLayerNorm) {
      t.weight_uses.push_back({f.name, f.name, false});
    }
  }
  t.weight_uses.insert(t.weight_uses.end(), b.weight_uses.begin(), b.weight_uses.end());
  g.outputs.push_back(t.logits);
  for (const ParameterGradient& p : t.parameters) g.outputs.push_back(p.tensor);

  std::vector<std::string> where;
  for (const Layer& l : g.layers) where.push_back(fmt::format("layer '{}'", l.name));
  GraphDiagnostics diag(g.name);
  finalize_graph(g, diag, where);
}

Layer binary_layer(const std::string& name, OpKind kind, const std::string& a,
                   const std::string& c) {
  Layer l;
  l.name = l.output = name;
  l.kind = kind;
  l.inputs = {a, c};
  return l;
}

}  // namespace

TrainingStep build_training_step(const Graph& fwd, int batch, const std::vector<int>& labels,
                                 int mean_over) {
  NPUSIM_CHECK(batch >= 1 && labels.size() == size_t(batch), "training: {} labels for batch {}",
               labels.size(), batch);
  if (mean_over == 0) mean_over = batch;
  NPUSIM_CHECK(mean_over >= batch, "training: the mean over {} samples of a batch of {}", mean_over,
               batch);
  TrainingStep t;
  BackwardBuilder b(t.graph);
  add_forward(fwd, batch, t, b);
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
  const std::string d = b.add(
      binary_layer("loss.softmax_minus_onehot", OpKind::kAdd, softmax.output, t.labels_layer));
  const std::string inv_batch =
      b.add(constant_move("loss.inverse_batch", softmax.output, dims, {1.0f / float(mean_over)},
                          std::vector<int32_t>(size_t(batch) * t.classes, 0)));
  b.gradient[t.logits] = b.add(binary_layer("loss.grad_logits", OpKind::kMul, d, inv_batch));
  add_backward(fwd, fwd.layers.size() - 1, t, b);
  return t;
}

TrainingStep build_regression_step(const Graph& fwd, int batch, const std::vector<float>& targets,
                                   int mean_over) {
  const Layer& last = fwd.layers.back();
  const uint64_t n = last.out_shape.elements();
  NPUSIM_CHECK(batch >= 1 && targets.size() == uint64_t(batch) * n,
               "training: {} targets for batch {} of {} outputs", targets.size(), batch, n);
  if (mean_over == 0) mean_over = batch;
  NPUSIM_CHECK(mean_over >= batch, "training: the mean over {} samples of a batch of {}", mean_over,
               batch);
  TrainingStep t;
  t.loss = TrainingLoss::kMeanSquaredError;
  BackwardBuilder b(t.graph);
  add_forward(fwd, batch, t, b);
  t.logits = last.output;
  t.classes = int(n);

  // Mean squared error over every element: dL/dy = (y - target) x 2 / (mean_over x n), the
  // targets the constants of a move (as the labels above), the difference and the scale on the
  // vector unit.
  const std::vector<int> dims = b.step_dims(last.output);
  std::vector<int32_t> each(targets.size());
  for (size_t j = 0; j < each.size(); ++j) each[j] = int32_t(j);
  t.labels_layer =
      b.add(constant_move("loss.minus_target", last.output, dims, minus_targets(targets), each));
  const std::string d =
      b.add(binary_layer("loss.output_minus_target", OpKind::kAdd, last.output, t.labels_layer));
  const std::string scale = b.add(constant_move("loss.two_over_elements", last.output, dims,
                                                {2.0f / (float(mean_over) * float(n))},
                                                std::vector<int32_t>(targets.size(), 0)));
  b.gradient[t.logits] = b.add(binary_layer("loss.grad_output", OpKind::kMul, d, scale));
  add_backward(fwd, fwd.layers.size(), t, b);
  return t;
}

}  // namespace npusim
