#include "npusim/training_state.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>

#include "support/error.hpp"
#include "support/npy.hpp"

namespace npusim {

namespace {

// Uniform in [0, 1) from the top 24 bits: the same values on every platform.
float unit_uniform(std::mt19937_64& rng) { return float(rng() >> 40) * (1.0f / float(1 << 24)); }

}  // namespace

size_t LayerParameters::index(int r, int o) const {
  if (!conv) return size_t(o) * size_t(in) + size_t(r);
  const int i = r / (kw * cin), j = (r / cin) % kw, ci = r % cin;
  return ((size_t(o) * size_t(cin) + size_t(ci)) * size_t(kh) + size_t(i)) * size_t(kw) + size_t(j);
}

Parameters initial_parameters(const Graph& g, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Parameters p;
  for (const Layer& l : g.layers) {
    if (l.kind == OpKind::kLayerNorm) {  // PyTorch's: gamma 1, beta 0
      LayerParameters& lp = p[l.name];
      lp.in = 1;
      lp.out = l.out_shape.last();
      lp.norm = true;
      lp.weight.assign(size_t(lp.out), 1.0f);
      lp.bias.assign(size_t(lp.out), 0.0f);
      continue;
    }
    if (!l.has_weights()) continue;
    NPUSIM_CHECK(l.kind == OpKind::kDense || l.kind == OpKind::kConv,
                 "training: no initializer for layer {}", l.name);
    LayerParameters& lp = p[l.name];
    lp.out = l.filters;
    lp.in = int(l.reduction());
    float fan_in = float(lp.in), fan_out = float(lp.out);
    if (l.kind == OpKind::kConv) {
      lp.conv = true;
      lp.kh = l.kernel[1];
      lp.kw = l.kernel[2];
      lp.cin = l.input_channels_per_group();
      fan_out *= float(lp.kh * lp.kw);
    }
    const float bound = std::sqrt(6.0f / (fan_in + fan_out));
    lp.weight.resize(size_t(lp.in) * lp.out);
    for (float& w : lp.weight) w = (2.0f * unit_uniform(rng) - 1.0f) * bound;
    if (l.use_bias) lp.bias.assign(size_t(lp.out), 0.0f);
  }
  return p;
}

void set_layer_weights(Graph& g, const Parameters& p) {
  for (Layer& l : g.layers) {
    const auto it = p.find(l.name);
    if (it == p.end()) continue;
    const LayerParameters& lp = it->second;
    if (lp.norm) {
      l.gamma = lp.weight;
      l.beta = lp.bias;
      continue;
    }
    l.weights.resize(lp.weight.size());
    for (int r = 0; r < lp.in; ++r) {
      for (int o = 0; o < lp.out; ++o)
        l.weights[size_t(r) * lp.out + o] = lp.weight[lp.index(r, o)];
    }
    l.bias = lp.bias;
    l.weight_draw = {};
  }
}

void save_parameters(const std::string& flag, const std::string& dir, const Parameters& p) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw UserError(fmt::format("{} '{}': cannot create it: {}", flag, dir, ec.message()));
  for (const auto& [name, lp] : p) {
    const std::vector<int64_t> shape = lp.conv ? std::vector<int64_t>{lp.out, lp.cin, lp.kh, lp.kw}
                                       : lp.norm ? std::vector<int64_t>{lp.out}
                                                 : std::vector<int64_t>{lp.out, lp.in};
    write_npy_float32(dir + "/" + name + ".weight.npy", shape, lp.weight);
    if (!lp.bias.empty()) write_npy_float32(dir + "/" + name + ".bias.npy", {lp.out}, lp.bias);
  }
}

LayerParameters split_gradient(const ParameterGradient& g, const std::vector<float>& values,
                               const LayerParameters& like) {
  const int extra = g.has_bias ? 1 : 0;
  NPUSIM_CHECK(
      values.size() == size_t(g.out) * size_t(g.in + extra) && g.in == like.in && g.out == like.out,
      "training: gradient {} has {} values for {} x {}", g.tensor, values.size(), g.in, g.out);
  LayerParameters d = like;
  d.bias.clear();
  // values(r, o): row r of the forward weights, output o; r == in is the bias.
  auto at = [&](int r, int o) {
    return g.outputs_first ? values[size_t(o) * size_t(g.in + extra) + size_t(r)]
                           : values[size_t(r) * size_t(g.out) + size_t(o)];
  };
  for (int r = 0; r < g.in; ++r) {
    for (int o = 0; o < g.out; ++o) d.weight[like.index(r, o)] = at(r, o);
  }
  for (int o = 0; g.has_bias && o < g.out; ++o) d.bias.push_back(at(g.in, o));
  return d;
}

Optimizer::Optimizer(const std::string& kind, float lr) {
  using Kind = OptimizerConstants::Kind;
  k_.kind = kind == "adam" ? Kind::kAdam : kind == "momentum" ? Kind::kMomentum : Kind::kSgd;
  k_.lr = lr;
  k_.momentum = 0.9f;
  k_.beta1 = 0.9f;
  k_.beta2 = 0.999f;
  k_.eps = 1e-7f;
  k_.one_minus_beta1 = float(1.0 - 0.9);
  k_.one_minus_beta2 = float(1.0 - 0.999);
}

int Optimizer::state_per_parameter() const { return k_.state_per_parameter(); }

std::pair<float, float> Optimizer::bias_corrections(int t) {
  return {float(1.0 - std::pow(0.9, t)), float(1.0 - std::pow(0.999, t))};
}

void Optimizer::update(std::vector<float>& w, const std::vector<float>& g, std::vector<float>& m,
                       std::vector<float>& v) const {
  NPUSIM_CHECK(w.size() == g.size(), "training: {} weights, {} gradients", w.size(), g.size());
  using Kind = OptimizerConstants::Kind;
  const float lr = k_.lr;
  if (k_.kind == Kind::kSgd) {
    for (size_t i = 0; i < w.size(); ++i) w[i] -= lr * g[i];
    return;
  }
  m.resize(w.size(), 0.0f);
  if (k_.kind == Kind::kMomentum) {
    for (size_t i = 0; i < w.size(); ++i) {
      m[i] = k_.momentum * m[i] + g[i];
      w[i] -= lr * m[i];
    }
    return;
  }
  v.resize(w.size(), 0.0f);
  const float b1 = k_.beta1, b2 = k_.beta2, eps = k_.eps;
  const float one_minus_b1 = k_.one_minus_beta1, one_minus_b2 = k_.one_minus_beta2;
  const auto [c1, c2] = bias_corrections(t_);
  for (size_t i = 0; i < w.size(); ++i) {
    m[i] = b1 * m[i] + one_minus_b1 * g[i];
    v[i] = b2 * v[i] + one_minus_b2 * g[i] * g[i];
    const float mhat = m[i] / c1, vhat = v[i] / c2;
    w[i] -= lr * mhat / (std::sqrt(vhat) + eps);
  }
}

void Optimizer::step(Parameters& p, const Parameters& gradients) {
  ++t_;
  for (auto& [name, lp] : p) {
    const auto g = gradients.find(name);
    NPUSIM_CHECK(g != gradients.end(), "training: no gradient for layer {}", name);
    update(lp.weight, g->second.weight, m_[name + ".weight"], v_[name + ".weight"]);
    if (!lp.bias.empty()) update(lp.bias, g->second.bias, m_[name + ".bias"], v_[name + ".bias"]);
  }
}

namespace {

// DIR/x.npy, checked; y.npy's path and array.
DataSet read_samples(const std::string& flag, const std::string& dir, uint64_t sample_elements,
                     std::string& yp, NpyArray& y, int64_t& n) {
  const std::string xp = dir + "/x.npy";
  yp = dir + "/y.npy";
  if (!std::filesystem::exists(xp) || !std::filesystem::exists(yp)) {
    throw UserError(fmt::format("{} '{}': expected x.npy and y.npy in it", flag, dir));
  }
  const NpyArray x = read_npy(xp);
  y = read_npy(yp);
  DataSet d;
  d.sample_elements = sample_elements;
  if (x.shape.empty() || x.shape[0] < 1 || x.elements() != uint64_t(x.shape[0]) * sample_elements) {
    throw UserError(
        fmt::format("{} {}: expected [N, ...] with {} values per sample (the "
                    "workload's input), got {} values",
                    flag, xp, sample_elements, x.elements()));
  }
  n = x.shape[0];
  d.x = npy_to_float32(x, flag + " " + xp);
  return d;
}

}  // namespace

DataSet read_regression_set(const std::string& flag, const std::string& dir,
                            uint64_t sample_elements, uint64_t target_elements) {
  std::string yp;
  NpyArray y;
  int64_t n = 0;
  DataSet d = read_samples(flag, dir, sample_elements, yp, y, n);
  if (y.shape.empty() || y.shape[0] != n || y.elements() != uint64_t(n) * target_elements ||
      (y.dtype != "float32" && y.dtype != "float64")) {
    throw UserError(fmt::format(
        "{} {}: expected float targets [{}, ...] with {} values per sample (the workload's "
        "output; the mean squared error trains against them)",
        flag, yp, n, target_elements));
  }
  d.targets = npy_to_float32(y, flag + " " + yp);
  d.target_elements = target_elements;
  return d;
}

DataSet random_regression_set(uint64_t n, uint64_t sample_elements, uint64_t target_elements,
                              uint64_t seed) {
  DataSet d = random_data_set(n, sample_elements, 1, seed);
  std::mt19937_64 rng(seed ^ 0x7A26E75ull);
  d.y.clear();
  d.target_elements = target_elements;
  d.targets.resize(n * target_elements);
  for (float& v : d.targets) v = 2.0f * unit_uniform(rng) - 1.0f;
  return d;
}

DataSet read_data_set(const std::string& flag, const std::string& dir, uint64_t sample_elements,
                      int classes) {
  std::string yp;
  NpyArray y;
  int64_t n = 0;
  DataSet d = read_samples(flag, dir, sample_elements, yp, y, n);
  if (y.shape.size() != 1 || y.shape[0] != n || (y.dtype != "int64" && y.dtype != "int32")) {
    throw UserError(fmt::format(
        "{} {}: expected int32 or int64 labels [{}] (one per sample of x.npy)", flag, yp, n));
  }
  for (uint64_t i = 0; i < y.elements(); ++i) {
    const int64_t label = npy_integer_at(y, i);
    if (label < 0 || label >= classes) {
      throw UserError(
          fmt::format("{} {}: label {} at index {} is outside [0, {}) (the "
                      "workload's classes)",
                      flag, yp, label, i, classes));
    }
    d.y.push_back(int(label));
  }
  return d;
}

DataSet random_data_set(uint64_t n, uint64_t sample_elements, int classes, uint64_t seed) {
  std::mt19937_64 rng(seed ^ 0x5EEDDA7Aull);
  DataSet d;
  d.sample_elements = sample_elements;
  d.x.resize(n * sample_elements);
  for (float& v : d.x) v = unit_uniform(rng);
  for (uint64_t i = 0; i < n; ++i) d.y.push_back(int(rng() % uint64_t(classes)));
  return d;
}

BatchOrder::BatchOrder(size_t n, bool shuffle, uint64_t seed)
    : order_(n), pos_(n), shuffle_(shuffle), rng_(seed) {
  std::iota(order_.begin(), order_.end(), size_t{0});
}

std::vector<size_t> BatchOrder::next(int batch) {
  std::vector<size_t> idx;
  while (idx.size() < size_t(batch)) {
    if (pos_ == order_.size()) {
      pos_ = 0;
      if (shuffle_) std::shuffle(order_.begin(), order_.end(), rng_);
    }
    const size_t take = std::min(size_t(batch) - idx.size(), order_.size() - pos_);
    idx.insert(idx.end(), order_.begin() + ptrdiff_t(pos_),
               order_.begin() + ptrdiff_t(pos_ + take));
    pos_ += take;
  }
  return idx;
}

}  // namespace npusim
