// The training step as one graph (issue 23, docs/training.md), as XLA trains: the forward graph
// differentiated by the operator table's backward rules (compiler/ir/backward_rules.hpp) into one
// graph that computes the logits (or the predictions) and every parameter's gradient of the loss
// (the mean softmax cross-entropy against integer labels, or the mean squared error against
// targets), compiled and lowered like any other graph.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "compiler/ir/backward_rules.hpp"
#include "compiler/ir/graph.hpp"

namespace npusim {

// kCrossEntropy: a classifier whose one output is a final softmax, against integer labels.
// kMeanSquaredError: any one output (the last layer's), against float targets of its shape, the
// mean over every element of the batch's outputs (torch.nn.MSELoss's default).
enum class TrainingLoss { kCrossEntropy, kMeanSquaredError };
const char* to_string(TrainingLoss loss);  // "xent", "mse"
// The loss of `forward`: `requested` is "xent", "mse" or "auto" (cross-entropy where the one
// output is a final softmax, else the mean squared error). Throws UserError (prefixed with
// `origin`) on another word or a loss the graph does not fit.
TrainingLoss training_loss(const Graph& forward, const std::string& requested,
                           const std::string& origin);

struct TrainingStep {
  // Batch 1, the training batch the leading dimension of every tensor; input [batch] + the
  // forward input's sample shape; outputs the logits, then each parameter gradient.
  Graph graph;
  TrainingLoss loss = TrainingLoss::kCrossEntropy;
  // The tensor the loss reads: the final softmax's input (the logits), or for the mean squared
  // error the output itself (the predictions).
  std::string logits;
  std::vector<ParameterGradient> parameters;  // in backward order
  // Every layer whose weights are parameters: the forward layers' own, then the backward's.
  std::vector<WeightUse> weight_uses;
  // The move of constants that holds -onehot(labels) [batch, classes] (or -targets [batch, ...]),
  // in output order: the one layer that depends on the batch's labels (its constants only, not
  // its data movement).
  std::string labels_layer;
  std::set<std::string> forward_layers;  // the step's layers of the forward pass
  int classes = 0;  // cross-entropy: the classes; mean squared error: the output's elements
};

// What a forward graph must be to be trained: finalized, ending in a softmax that is its one
// output (cross-entropy) or with the last layer's output its one output (mean squared error),
// every other layer with a backward rule. Throws UserError naming the first layer that is not,
// prefixed with `origin` (the workload).
void check_trainable(const Graph& forward, const std::string& origin,
                     TrainingLoss loss = TrainingLoss::kCrossEntropy);

// -onehot(labels) [labels.size(), classes], row-major: the labels_layer's constants.
std::vector<float> minus_onehot(const std::vector<int>& labels, int classes);
// -targets: the labels_layer's constants of a mean-squared-error step.
std::vector<float> minus_targets(const std::vector<float>& targets);

// `forward` passes check_trainable and holds the real-valued weights and biases of every layer
// that has them; labels: `batch` classes in [0, classes). `mean_over`: the samples the loss is the
// mean over (0: `batch`). Data parallelism (docs/training.md) builds each core's step on its share
// of the batch with the mean over the whole batch, so the cores' gradients sum to the batch's.
TrainingStep build_training_step(const Graph& forward, int batch, const std::vector<int>& labels,
                                 int mean_over = 0);

// The same for the mean squared error: `targets` holds `batch` samples of the output's shape;
// dL/dy = 2 (y - target) / (mean_over x the output's elements per sample).
TrainingStep build_regression_step(const Graph& forward, int batch,
                                   const std::vector<float>& targets, int mean_over = 0);

}  // namespace npusim
