#include "compiler/passes/parameters.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numbers>

#include "support/error.hpp"

namespace npusim {

namespace {

constexpr uint64_t kSplitMixGamma = 0x9E3779B97F4A7C15ull;

// splitmix64: a tiny, portable generator, so values are identical on every platform.
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += kSplitMixGamma);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  int64_t uniform_int(int64_t lo, int64_t hi) {  // inclusive
    return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1));
  }
  float uniform(float lo, float hi) {
    return lo + (hi - lo) * static_cast<float>((next() >> 40) * (1.0 / (1ull << 24)));
  }
};

uint64_t hash_name(const std::string& s) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

void fill(std::vector<float>& v, size_t n, SplitMix64& rng, float lo, float hi) {
  if (!v.empty()) return;
  v.resize(n);
  for (auto& x : v) x = rng.uniform(lo, hi);
}

// Second moment E[y^2] of an activation's output for an input of second moment m (unit-variance
// zero-mean Gaussian inputs scaled by m; approximations good enough to keep networks stable).
double activation_moment(Activation a, double m) {
  switch (a) {
    case Activation::kNone:
      return m;
    case Activation::kRelu:
    case Activation::kRelu6:
    case Activation::kClip:
      return m / 2;
    case Activation::kSigmoid:
      return 0.25 + m / 16;
    case Activation::kTanh:
      return m / (1 + m);
    case Activation::kGelu:
    case Activation::kGeluTanh:
      return 0.4 * m;
    case Activation::kErf:  // erf(x) ~ 2x / sqrt(pi) near 0, bounded by 1
      return (4 * m / std::numbers::pi) / (1 + 4 * m / std::numbers::pi);
    case Activation::kRsqrt:  // of a positive input (a variance): about 1 / E[x]
      return m > 0 ? 1 / std::sqrt(m) : 1.0;
    case Activation::kHardSwish:  // relu-like for large x
      return m / 2;
    case Activation::kHardSigmoid:  // 0.5 + x / 6 in [-3, 3]
      return std::min(0.25 + m / 36, 1.0);
    case Activation::kSqrt:  // E[|x|] of a Gaussian, half of it positive
      return std::sqrt(m) * 0.8 / 2;
    case Activation::kReciprocal:
      return m > 0 ? 1 / m : 1.0;
    case Activation::kStep:  // 1 on the positive half
      return 0.5;
  }
  return m;
}

}  // namespace

// Weights are drawn uniformly and scaled so that every conv / dense layer's pre-activation
// output has unit second moment given the second moment of its input, propagated analytically
// through the graph (an analytic form of layer-sequential unit-variance initialization, Mishkin &
// Matas 2016). Residual networks without batch norm then keep their activations, and the logits
// that reach a softmax, in a realistic range. Given weights (ONNX) are kept as they are.
void materialize_parameters(Graph& graph, uint64_t seed, WeightStorage storage) {
  std::map<std::string, double> moment{{graph.input_name, 0.0}};
  {  // make_random_input: uniform int8 codes times the input scale
    const double s = graph.input_scale;
    moment[graph.input_name] = s * s * (128.0 * 128.0) / 3.0;
  }
  for (auto& l : graph.layers) {
    SplitMix64 rng{seed ^ hash_name(l.name)};
    const double m_in = l.inputs.empty() ? 1.0 : std::max(moment[l.inputs[0]], 1e-12);
    double m_out = m_in;
    if (l.has_weights()) {
      const double fan_in = static_cast<double>(std::max<uint64_t>(l.reduction(), 1));
      if (l.weights.empty()) {
        // Uniform(-a, a) has variance a^2 / 3: fan_in * m_in * a^2 / 3 = 1.
        const auto bound = static_cast<float>(std::sqrt(3.0 / (fan_in * m_in)));
        const uint64_t n = l.reduction() * l.filters;
        if (storage == WeightStorage::kOnDemand) {
          l.weight_draw = {true, rng.state, bound, {}};
          rng.state += n * kSplitMixGamma;  // the draws the weights would have taken
        } else {
          fill(l.weights, n, rng, -bound, bound);
        }
        m_out = 1.0;
      } else {
        double w2 = 0.0;
        for (float w : l.weights) w2 += double(w) * w;
        m_out = fan_in * m_in * w2 / static_cast<double>(l.weights.size());
      }
      if (l.use_bias) {
        fill(l.bias, l.filters, rng, -0.1f, 0.1f);
      } else if (l.bias.empty()) {
        l.bias.assign(l.filters, 0.0f);
      }
      m_out = activation_moment(l.activation, m_out);
    }
    switch (l.kind) {
      case OpKind::kMatMul:
        m_out = activation_moment(l.activation, double(l.reduction()) * m_in * moment[l.inputs[1]]);
        break;
      case OpKind::kActivation:
        m_out = activation_moment(l.activation, m_in);
        break;
      case OpKind::kAdd:
        m_out = activation_moment(l.activation, m_in + moment[l.inputs[1]]);
        break;
      case OpKind::kMul:
        m_out = m_in * moment[l.inputs[1]];
        break;
      case OpKind::kConcat: {
        double sum = 0.0, channels = 0.0;
        for (size_t i = 0; i < l.inputs.size(); ++i) {
          sum += moment[l.inputs[i]] * l.in_shapes[i].last();
          channels += l.in_shapes[i].last();
        }
        m_out = sum / std::max(channels, 1.0);
        break;
      }
      case OpKind::kSoftmax:
        m_out = 1.0 / std::max(l.out_shape.last(), 1);
        break;
      case OpKind::kLayerNorm:
      case OpKind::kBatchNorm: {
        const size_t c = l.out_shape.last();
        fill(l.gamma, c, rng, 0.8f, 1.2f);
        if (l.rms && l.beta.empty()) l.beta.assign(c, 0.0f);  // RMSNorm has no shift
        fill(l.beta, c, rng, -0.1f, 0.1f);
        if (l.kind == OpKind::kBatchNorm) {
          fill(l.mean, c, rng, -0.1f, 0.1f);
          fill(l.variance, c, rng, 0.5f, 1.5f);
        }
        m_out = 1.0;
        break;
      }
      default:
        break;
    }
    moment[l.output] = m_out;
  }
}

void for_each_weight_row(const Layer& l, const std::function<void(size_t, const float*)>& f) {
  const size_t n = size_t(l.filters), rows = l.reduction();
  if (!l.weight_draw.pending) {
    NPUSIM_CHECK(l.weights.size() == rows * n, "layer {}: {} weights, expected {}", l.name,
                 l.weights.size(), rows * n);
    for (size_t r = 0; r < rows; ++r) f(r, l.weights.data() + r * n);
    return;
  }
  SplitMix64 rng{l.weight_draw.rng_state};
  const float lo = -l.weight_draw.bound, hi = l.weight_draw.bound;
  std::vector<float> row(n);
  for (size_t r = 0; r < rows; ++r) {
    for (float& w : row) w = rng.uniform(lo, hi);
    for (const auto& factor : l.weight_draw.column_factors) {
      for (size_t j = 0; j < n; ++j) row[j] *= factor[j];
    }
    f(r, row.data());
  }
}

bool draw_weights(Layer& l, uint64_t max_values) {
  const size_t n = size_t(l.filters);
  if (!l.weight_draw.pending || l.reduction() * n > max_values) return false;
  std::vector<float> w(l.reduction() * n);
  for_each_weight_row(
      l, [&](size_t r, const float* row) { std::copy(row, row + n, w.begin() + long(r * n)); });
  l.weights = std::move(w);
  l.weight_draw = {};
  return true;
}

void scale_weight_columns(Layer& l, const std::vector<float>& factor) {
  const size_t n = size_t(l.filters);
  NPUSIM_CHECK(factor.size() == n, "layer {}: {} channel factors for {} channels", l.name,
               factor.size(), n);
  if (l.weight_draw.pending) {
    l.weight_draw.column_factors.push_back(factor);
    return;
  }
  for (size_t i = 0; i < l.weights.size(); i += n) {
    for (size_t j = 0; j < n; ++j) l.weights[i + j] *= factor[j];
  }
}

std::vector<int8_t> make_random_input(const Graph& graph, uint64_t seed) {
  SplitMix64 rng{seed ^ hash_name("input:" + graph.input_name)};
  std::vector<int8_t> x(graph.input_shape.elements() * graph.batch);
  for (auto& v : x) v = static_cast<int8_t>(rng.uniform_int(-128, 127));
  return x;
}

std::vector<int32_t> make_random_ids(const Graph& graph, uint64_t seed, int32_t vocab) {
  NPUSIM_CHECK(vocab >= 1, "ids drawn from an empty vocabulary");
  SplitMix64 rng{seed ^ hash_name("ids:" + graph.input_name)};
  std::vector<int32_t> x(graph.input_shape.elements() * graph.batch);
  for (auto& v : x) v = static_cast<int32_t>(rng.uniform_int(0, vocab - 1));
  return x;
}

}  // namespace npusim
