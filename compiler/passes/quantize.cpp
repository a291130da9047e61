#include "compiler/passes/quantize.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "compiler/passes/parameters.hpp"
#include "compiler/passes/row_scales.hpp"
#include "compiler/passes/tensor_index.hpp"
#include "compiler/reference/reference.hpp"
#include "support/error.hpp"

namespace npusim {

namespace {
float max_abs(const std::vector<float>& v) {
  float m = 0.0f;
  for (float x : v) m = std::max(m, std::fabs(x));
  return m;
}

// The scale that maps the largest magnitude to 127 (or the user's fixed scale).
float choose_scale(float largest, const Layer& l) {
  if (l.fixed_output_scale > 0.0f) return l.fixed_output_scale;
  return largest > 0.0f ? largest / 127.0f : 1.0f / 127.0f;
}

// 256-entry table: int8 code at in_scale -> activation -> int8 code at out_scale.
std::vector<int8_t> make_lut(const Layer& l, float in_scale, float out_scale) {
  std::vector<int8_t> lut(256);
  for (int q = -128; q <= 127; ++q) {
    float y = apply_activation(l.activation, q * in_scale, l.clip_min, l.clip_max);
    // rsqrt of a negative code (a variance never has one): the largest code, as at 0.
    if (std::isnan(y)) y = std::numeric_limits<float>::infinity();
    lut[q + 128] = saturate_round(y / out_scale);
  }
  return lut;
}

float lut_output_scale(const Layer& l, float in_scale) {
  float m = 0.0f;
  for (int q = -128; q <= 127; ++q) {
    m = std::max(m,
                 std::fabs(apply_activation(l.activation, q * in_scale, l.clip_min, l.clip_max)));
  }
  return choose_scale(m, l);
}

bool clamp_only(Activation a) {
  return a == Activation::kNone || a == Activation::kRelu || a == Activation::kRelu6 ||
         a == Activation::kClip;
}

// The calibrated magnitude of a clamp-only activation's output for pre-activation values `real`.
float clamped_magnitude(const Layer& l, const std::vector<float>& real,
                        const CalibrationOptions& options) {
  if (options.method == CalibrationMethod::kMax) {
    // These activations are non-decreasing, so the largest |activation(x)| is at the smallest or
    // the largest x: two calls instead of one per element.
    float largest = 0.0f;
    if (!real.empty()) {
      const auto [lo_x, hi_x] = std::minmax_element(real.begin(), real.end());
      for (float x : {*lo_x, *hi_x}) {
        largest =
            std::max(largest, std::fabs(apply_activation(l.activation, x, l.clip_min, l.clip_max)));
      }
    }
    return largest;
  }
  std::vector<float> y(real.size());
  for (size_t i = 0; i < real.size(); ++i)
    y[i] = apply_activation(l.activation, real[i], l.clip_min, l.clip_max);
  return calibration_magnitude(y, options);
}

// 1/sqrt and 1/x have no bound over the codes (+inf at 0): the output scale comes from the values
// it is given (`real`, pre-activation; the finite results), or from the smallest positive code.
float rsqrt_output_scale(const Layer& l, float in_scale, const std::vector<float>& real,
                         const CalibrationOptions& options) {
  std::vector<float> y;
  for (float x : real) {
    const float v = apply_activation(l.activation, x, l.clip_min, l.clip_max);
    if (std::isfinite(v)) y.push_back(v);
  }
  if (y.empty()) y.push_back(apply_activation(l.activation, in_scale, l.clip_min, l.clip_max));
  return choose_scale(calibration_magnitude(y, options), l);
}

// Output scale, clamps and table of a layer whose real pre-activation values are `real`.
// Clamp-only activations saturate in the requantization; others requantize to an intermediate
// scale and go through a table.
float set_output_quantization(Layer& l, const std::vector<float>& real,
                              const CalibrationOptions& options) {
  if (clamp_only(l.activation)) {
    l.out_scale = choose_scale(clamped_magnitude(l, real, options), l);
    float lo = -128.0f, hi = 127.0f;
    if (l.activation == Activation::kRelu) lo = 0.0f;
    if (l.activation == Activation::kRelu6) lo = 0.0f, hi = std::round(6.0f / l.out_scale);
    if (l.activation == Activation::kClip) {
      lo = std::round(l.clip_min / l.out_scale);
      hi = std::round(l.clip_max / l.out_scale);
    }
    l.clamp_lo = static_cast<int8_t>(std::clamp(lo, -128.0f, 127.0f));
    l.clamp_hi = static_cast<int8_t>(std::clamp(hi, -128.0f, 127.0f));
    l.lut.clear();
    l.mid_scale = l.out_scale;
    return l.out_scale;
  }
  Layer plain = l;
  plain.fixed_output_scale = 0.0f;
  l.mid_scale = choose_scale(calibration_magnitude(real, options), plain);
  l.out_scale = has_unbounded_output(l.activation)
                    ? rsqrt_output_scale(l, l.mid_scale, real, options)
                    : lut_output_scale(l, l.mid_scale);
  l.lut = make_lut(l, l.mid_scale, l.out_scale);
  l.clamp_lo = -128;
  l.clamp_hi = 127;
  return l.mid_scale;
}

// --weight-group G (docs/compression.md): under the per-channel scale sw[j] (the channel's largest
// magnitude -> 126 = 7 x 18), each group of G consecutive weights along the reduction axis gets an
// integer scale s in [1, 18] (its largest magnitude / sw[j] / 7, rounded up) and its weights
// z x s, z in [-7, 7] rounded half away from zero: int4 values the DMA widens to int8 exactly, the
// symmetric form of QServe's progressive group quantization (Lin et al., 2024).
void quantize_int4_groups(Layer& l, const std::vector<float>& sw) {
  const size_t n = sw.size(), g = size_t(l.weight_group);
  const size_t groups = (l.reduction() + g - 1) / g;
  std::vector<float> group_max(groups * n, 0.0f);
  for_each_weight_row(l, [&](size_t r, const float* w) {
    float* m = group_max.data() + r / g * n;
    for (size_t j = 0; j < n; ++j) m[j] = std::max(m[j], std::fabs(w[j]));
  });
  l.group_scales.resize(groups * n);
  for (size_t i = 0; i < group_max.size(); ++i) {
    const float s = std::ceil(group_max[i] / sw[i % n] / 7.0f);
    l.group_scales[i] = static_cast<uint8_t>(std::clamp(s, 1.0f, 18.0f));
  }
  l.qweights.resize(l.reduction() * n);
  for_each_weight_row(l, [&](size_t r, const float* w) {
    int8_t* q = l.qweights.data() + r * n;
    const uint8_t* s = l.group_scales.data() + r / g * n;
    for (size_t j = 0; j < n; ++j) {
      q[j] = static_cast<int8_t>(saturate_round(w[j] / (sw[j] * float(s[j])), -7, 7) * s[j]);
    }
  });
}

QuantMultiplier multiplier(double m) {
  return quant_multiplier_from_real(std::clamp(m, 1e-12, 32767.0));
}

// Conv / dense / matmul: weights per output channel, bias on the accumulator's scale, output
// scale calibrated on the real accumulator values. `row_length` > 0: the layer may take per-row
// output scales in rows of that length (row_scales.hpp), each row requantized on its own through
// its channels' multipliers.
// Without calibration (timing only) nothing is computed and the weights are left empty: the
// lowering gives them their size and no contents (compiler/lowering/lowering_context.hpp), so a
// timing-only run holds no memory in proportion to them.
Tensor8 quantize_matrix_layer(Layer& l, int batch, const std::vector<const Tensor8*>& in,
                              const CalibrationOptions& options, bool calibrate, int row_length) {
  const int n = l.out_shape.last();
  std::vector<double> acc_scale(n);
  // Weights to be compressed are quantized even so: the compression depends on their values.
  if (l.has_weights() && !calibrate && !l.compress_weights) {
    std::vector<int8_t>().swap(l.qweights);
    std::fill(acc_scale.begin(), acc_scale.end(), double(l.in_scales[0]));
  } else if (l.has_weights()) {
    // Row by row (channel j is the column): one pass in memory order for the per-channel
    // maxima, one for the quantized weights. Generated weights are drawn here, once, and freed
    // after; those of a layer over 256 MiB as floats (VGG-16's fc6) are drawn once per pass.
    const bool drawn = draw_weights(l, uint64_t{64} << 20);
    std::vector<float> sw(n, 0.0f);
    for_each_weight_row(l, [&](size_t, const float* w) {
      for (int j = 0; j < n; ++j) sw[j] = std::max(sw[j], std::fabs(w[j]));
    });
    // int4 weights (--weight-dtype int4): the largest magnitude of a channel maps to 7, or with
    // group scales (--weight-group) to 126, the largest group scale times 7.
    const bool groups = l.int4_weights && l.weight_group > 0;
    const float q_max = groups ? 126.0f : l.int4_weights ? 7.0f : 127.0f;
    for (int j = 0; j < n; ++j) {
      sw[j] = sw[j] > 0.0f ? sw[j] / q_max : 1.0f;
      acc_scale[j] = double(l.in_scales[0]) * sw[j];
    }
    if (groups) {
      quantize_int4_groups(l, sw);
    } else {
      l.qweights.resize(l.reduction() * n);
      for_each_weight_row(l, [&](size_t r, const float* w) {
        int8_t* q = l.qweights.data() + r * n;
        for (int j = 0; j < n; ++j) q[j] = saturate_round(w[j] / sw[j]);
      });
    }
    if (drawn) std::vector<float>().swap(l.weights);
  } else {
    std::fill(acc_scale.begin(), acc_scale.end(), double(l.in_scales[0]) * l.in_scales[1]);
  }
  l.qbias.assign(n, 0);
  for (int j = 0; j < n && !l.bias.empty(); ++j) {
    l.qbias[j] = static_cast<int32_t>(std::clamp(std::round(l.bias[j] / acc_scale[j]), -2e9, 2e9));
  }
  const std::vector<int32_t> acc =
      calibrate ? reference_accumulate(l, batch, in) : std::vector<int32_t>();
  std::vector<float> real(acc.size());
  for (size_t r = 0; r < acc.size(); r += n) {  // row by row: no division per element
    for (int j = 0; j < n; ++j) {
      real[r + j] = static_cast<float>((double(acc[r + j]) + l.qbias[j]) * acc_scale[j]);
    }
  }
  const float requant_scale = set_output_quantization(l, real, options);
  l.out_row_scales.clear();
  if (row_length > 0) {
    l.out_row_scales = choose_row_scales(real, uint64_t(n), row_length, requant_scale, options);
  }
  l.requant.resize(n);
  for (int j = 0; j < n; ++j) {
    const float s = l.out_row_scales.empty() ? requant_scale : l.out_row_scales[j / row_length];
    l.requant[j] = multiplier(acc_scale[j] / s);
  }
  return calibrate ? reference_epilogue(l, acc) : Tensor8();
}

// With no calibration batch (timing only) every tensor is empty: each scale is the one of a
// tensor of zeros.
std::map<std::string, Tensor8> quantize(Graph& g, const std::vector<int8_t>* calibration_batch,
                                        int samples, const CalibrationOptions& options) {
  NPUSIM_CHECK(!g.quantized, "graph {} quantized twice", g.name);
  const bool calibrate = calibration_batch != nullptr;
  const uint64_t sample_bytes = g.input_shape.elements() * (g.input_ids ? 4 : 1);
  NPUSIM_CHECK(!calibrate || (samples >= 1 && calibration_batch->size() == sample_bytes * samples),
               "calibration batch of {} bytes for {} samples of {} bytes",
               calibrate ? calibration_batch->size() : 0, samples, sample_bytes);
  std::map<std::string, Tensor8> tensors{
      {g.input_name, calibrate ? *calibration_batch : Tensor8()}};
  const auto layer_values = [&](const Layer& l, const std::vector<const Tensor8*>& in) {
    return calibrate ? reference_layer(l, samples, in) : Tensor8();
  };
  std::map<std::string, float> scales{{g.input_name, g.input_scale}};
  // Per-row scales (row_scales.hpp) of the tensors that have them.
  std::map<std::string, std::vector<float>> row_scales;
  const TensorIndex index(g);
  for (auto& l : g.layers) {
    std::vector<const Tensor8*> in;
    l.in_scales.clear();
    l.in_row_scales.clear();
    l.out_row_scales.clear();
    for (size_t k = 0; k < l.inputs.size(); ++k) {
      const std::string& name = l.inputs[k];
      in.push_back(&tensors.at(name));
      l.in_scales.push_back(scales.at(name));
      if (auto r = row_scales.find(name); r != row_scales.end()) {
        l.in_row_scales.resize(l.inputs.size());
        l.in_row_scales[k] = r->second;
      }
    }
    // Only row-wise readers get row scales (row_scale_candidate checked them all).
    NPUSIM_CHECK(l.in_row_scales.empty() || l.kind == OpKind::kReshape ||
                     l.kind == OpKind::kLayerNorm || l.kind == OpKind::kAdd,
                 "layer {} ({}) reads a tensor with per-row scales", l.name, to_string(l.kind));
    Tensor8 y;
    switch (l.kind) {
      case OpKind::kConv:
      case OpKind::kDense:
      case OpKind::kMatMul:
        y = quantize_matrix_layer(l, samples, in, options, calibrate,
                                  calibrate ? row_scale_candidate(g, index, l) : 0);
        break;
      case OpKind::kAdd:
      case OpKind::kMul: {
        const Tensor8 &a = *in[0], &b = *in[1];
        std::vector<float> real(a.size());
        for (size_t i = 0; i < a.size(); ++i) {
          real[i] = l.kind == OpKind::kAdd ? a[i] * l.in_scale_at(0, i) + b[i] * l.in_scale_at(1, i)
                                           : a[i] * l.in_scales[0] * b[i] * l.in_scales[1];
        }
        const float s = set_output_quantization(l, real, options);
        if (l.kind == OpKind::kAdd && calibrate) {
          const int row_length = row_scale_candidate(g, index, l);
          if (row_length > 0) {
            l.out_row_scales =
                choose_row_scales(real, l.out_shape.elements(), row_length, s, options);
          }
        }
        l.input_ratios = l.kind == OpKind::kAdd
                             ? std::vector<float>{l.in_scales[0] / s, l.in_scales[1] / s}
                             : std::vector<float>{l.in_scales[0] * l.in_scales[1] / s};
        y = layer_values(l, in);
        break;
      }
      case OpKind::kConcat:
      case OpKind::kMove: {
        // A move's constants must be representable too (a Pad value, a constant operand).
        float largest = 0.0f;
        for (float c : l.move_constants) largest = std::max(largest, std::fabs(c));
        l.out_scale = l.fixed_output_scale > 0.0f
                          ? l.fixed_output_scale
                          : std::max(*std::max_element(l.in_scales.begin(), l.in_scales.end()),
                                     largest / 127.0f);
        l.input_ratios.clear();
        for (float s : l.in_scales) l.input_ratios.push_back(s / l.out_scale);
        y = layer_values(l, in);
        break;
      }
      case OpKind::kActivation:
        if (has_unbounded_output(l.activation)) {
          std::vector<float> real;
          for (int8_t q : *in[0]) real.push_back(q * l.in_scales[0]);
          l.out_scale = rsqrt_output_scale(l, l.in_scales[0], real, options);
        } else {
          l.out_scale = lut_output_scale(l, l.in_scales[0]);
        }
        l.lut = make_lut(l, l.in_scales[0], l.out_scale);
        y = layer_values(l, in);
        break;
      case OpKind::kSoftmax:
        l.out_scale = kSoftmaxOutputScale;
        y = layer_values(l, in);
        break;
      case OpKind::kLayerNorm: {
        const Tensor8& x = *in[0];
        const int n = l.out_shape.last();
        std::vector<float> real(x.size());
        for (size_t r = 0; r < x.size(); r += n) {
          layernorm_row(&x[r], n, l.in_scale_at(0, r), l.gamma.data(), l.beta.data(), l.epsilon,
                        &real[r], l.rms);
        }
        l.out_scale = choose_scale(calibration_magnitude(real, options), l);
        y = layer_values(l, in);
        break;
      }
      case OpKind::kEmbedding: {
        // The table on its own scale (largest magnitude -> 127), which the rows keep.
        const float largest = max_abs(l.weights);
        l.out_scale = l.fixed_output_scale > 0.0f ? l.fixed_output_scale
                      : largest > 0.0f            ? largest / 127.0f
                                                  : 1.0f / 127.0f;
        l.qweights.resize(l.weights.size());
        for (size_t i = 0; i < l.weights.size(); ++i)
          l.qweights[i] = saturate_round(l.weights[i] / l.out_scale);
        y = layer_values(l, in);
        break;
      }
      case OpKind::kMaxPool:
      case OpKind::kAvgPool:
      case OpKind::kReshape:
        l.out_scale = l.in_scales[0];
        if (!l.in_row_scales.empty()) l.out_row_scales = l.in_row_scales[0];
        y = layer_values(l, in);
        break;
      case OpKind::kBatchNorm:
        NPUSIM_CHECK(false, "batch norm {} left after optimize_graph", l.name);
    }
    scales[l.output] = l.out_scale;
    if (!l.out_row_scales.empty()) row_scales[l.output] = l.out_row_scales;
    tensors[l.output] = std::move(y);
  }
  g.quantized = true;
  return tensors;
}

}  // namespace

const char* to_string(CalibrationMethod method) {
  return method == CalibrationMethod::kMax ? "max" : "percentile";
}

float calibration_magnitude(const std::vector<float>& values, const CalibrationOptions& options) {
  if (options.method == CalibrationMethod::kMax || values.empty()) return max_abs(values);
  NPUSIM_CHECK(options.percentile > 0.0 && options.percentile <= 100.0,
               "calibration percentile {} outside (0, 100]", options.percentile);
  std::vector<float> m(values.size());
  for (size_t i = 0; i < values.size(); ++i) m[i] = std::fabs(values[i]);
  const double rank = std::ceil(options.percentile / 100.0 * double(m.size()));
  const size_t k = std::clamp<size_t>(static_cast<size_t>(rank), 1, m.size()) - 1;
  std::nth_element(m.begin(), m.begin() + k, m.end());
  return m[k];
}

void quantize_graph(Graph& g, const std::vector<int8_t>& calibration_input) {
  quantize_graph(g, calibration_input, g.batch, CalibrationOptions{});
}

void quantize_graph(Graph& g, const std::vector<int8_t>& calibration_batch, int samples,
                    const CalibrationOptions& options, std::map<std::string, Tensor8>* tensors) {
  std::map<std::string, Tensor8> all = quantize(g, &calibration_batch, samples, options);
  if (tensors != nullptr) *tensors = std::move(all);
}

void quantize_graph_for_timing(Graph& g) { quantize(g, nullptr, g.batch, CalibrationOptions{}); }

}  // namespace npusim

namespace npusim {

void prepare_bf16(Graph& g, bool weights) {
  NPUSIM_CHECK(!g.quantized, "graph {} prepared twice", g.name);
  for (auto& l : g.layers) {
    NPUSIM_CHECK(l.kind != OpKind::kBatchNorm, "batch norm {} left after optimize_graph", l.name);
    // Compression reads their values; int4 weights (W4A16) get theirs from prepare_w4a16.
    if (l.has_weights() && (weights || l.compress_weights) && !l.int4_weights) {
      const size_t n = size_t(l.filters);
      l.bf16_weights.resize(l.reduction() * n);
      for_each_weight_row(l, [&](size_t r, const float* w) {
        for (size_t j = 0; j < n; ++j) l.bf16_weights[r * n + j] = float_to_bf16_bits(w[j]);
      });
    }
    if (l.kind == OpKind::kEmbedding) {
      for (float w : l.weights) l.bf16_weights.push_back(float_to_bf16_bits(w));
    }
    l.in_scales.assign(l.inputs.size(), 1.0f);
    l.out_scale = 1.0f;
  }
  g.input_scale = 1.0f;
  g.dtype = DataType::kBf16;
  g.quantized = true;
}

}  // namespace npusim
