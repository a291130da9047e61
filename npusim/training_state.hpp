// What npusim train (npusim/train.cpp) keeps between steps on the host: the fp32 master weights,
// the optimizer and its fp32 state, and the data set with its batch order. The step program
// reads the weights rounded to bf16 (the matrix unit's inputs); the update applies the simulated
// gradients to the fp32 masters, as mixed-precision training on TPUs does.
#pragma once

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/backward_rules.hpp"
#include "compiler/ir/graph.hpp"
#include "compiler/lowering/optimizer_update.hpp"

namespace npusim {

// One layer's parameters in PyTorch's layout: dense weight [out, in], convolution weight [out,
// cin, kh, kw] (in = cin x kh x kw), bias [out] (empty without one); a layer norm's gamma as its
// weight [out] and beta as its bias (in = 1).
struct LayerParameters {
  int in = 0, out = 0;
  bool conv = false;
  bool norm = false;
  int cin = 0, kh = 1, kw = 1;  // conv
  std::vector<float> weight, bias;
  // The index in `weight` of the forward weights' row r ([kh][kw][cin] for a convolution, the
  // input for dense) and column o.
  size_t index(int r, int o) const;
};
using Parameters = std::map<std::string, LayerParameters>;

// Keras' defaults for every dense and convolution layer of `g`: Glorot-uniform weights (bound
// sqrt(6 / (fan_in + fan_out)), the fans times the kernel's size for a convolution) drawn from
// `seed`, zero biases; layer norms gamma 1 and beta 0.
Parameters initial_parameters(const Graph& g, uint64_t seed);
// The parameters into the layers' real-valued weights ([in][out]) and biases.
void set_layer_weights(Graph& g, const Parameters& p);
// DIR/<layer>.weight.npy and .bias.npy, float32 (`flag` names the option in messages).
void save_parameters(const std::string& flag, const std::string& dir, const Parameters& p);

// The gradient tensor of the step graph (compiler/ir/backward_rules.hpp) as a weight and a bias
// gradient shaped like `like`.
LayerParameters split_gradient(const ParameterGradient& g, const std::vector<float>& values,
                               const LayerParameters& like);

// SGD; momentum (v = mu v + g, w -= lr v, as torch.optim.SGD); Adam with bias correction (eps
// added to the square root of the corrected second moment). Keras' constants: mu 0.9, beta1 0.9,
// beta2 0.999, eps 1e-7. All fp32, each operation rounded once (the optimizer's update on the
// chip, compiler/lowering/optimizer_update.hpp, performs the same operations in the same order).
class Optimizer {
 public:
  Optimizer(const std::string& kind, float lr);  // kind checked by the caller
  void step(Parameters& p, const Parameters& gradients);
  // fp32 values of state per parameter value: 0, 1 or 2.
  int state_per_parameter() const;
  const OptimizerConstants& constants() const { return k_; }
  // Adam's bias corrections of step t (from 1): 1 - beta1^t and 1 - beta2^t in fp32.
  static std::pair<float, float> bias_corrections(int t);

 private:
  void update(std::vector<float>& w, const std::vector<float>& g, std::vector<float>& m,
              std::vector<float>& v) const;
  OptimizerConstants k_;
  int t_ = 0;
  std::map<std::string, std::vector<float>> m_, v_;
};

// Samples (real values, the model's input layout, one after the other) and integer labels, or
// (regression, the mean squared error) float targets of target_elements each.
struct DataSet {
  std::vector<float> x;
  std::vector<int> y;
  std::vector<float> targets;
  uint64_t sample_elements = 0, target_elements = 0;
  size_t size() const { return target_elements > 0 ? targets.size() / target_elements : y.size(); }
};
// DIR/x.npy (float [N, ...] of sample_elements each) and DIR/y.npy (integers [N] in [0,
// classes)); `flag` and the path name the file in messages.
DataSet read_data_set(const std::string& flag, const std::string& dir, uint64_t sample_elements,
                      int classes);
// `n` random samples (uniform in [0, 1)) with random labels, from `seed`.
DataSet random_data_set(uint64_t n, uint64_t sample_elements, int classes, uint64_t seed);
// The same for regression: DIR/y.npy holds float targets [N, ...] of target_elements each (the
// workload's output); random targets are uniform in [-1, 1).
DataSet read_regression_set(const std::string& flag, const std::string& dir,
                            uint64_t sample_elements, uint64_t target_elements);
DataSet random_regression_set(uint64_t n, uint64_t sample_elements, uint64_t target_elements,
                              uint64_t seed);

// Batches in file order, wrapping around; with `shuffle`, a fresh seeded permutation per pass.
class BatchOrder {
 public:
  BatchOrder(size_t n, bool shuffle, uint64_t seed);
  std::vector<size_t> next(int batch);

 private:
  std::vector<size_t> order_;
  size_t pos_;
  bool shuffle_;
  std::mt19937_64 rng_;
};

}  // namespace npusim
