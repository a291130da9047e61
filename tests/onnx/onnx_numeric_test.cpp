// ONNX models through the compiler in process: import, optimize (batch-norm folding, activation
// fusion), int8 quantization calibrated on the input, and the functional reference; the
// dequantized outputs are compared with make_models.py's independent numpy float results.
//
// Tolerance: int8 with calibrated scales; every output element must be within 8% of the largest
// magnitude of the float result. A wrong weight layout, padding side or flatten order moves
// values by the order of the whole range and fails this by far.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

#include "compiler/frontend/onnx_import.hpp"
#include "compiler/passes/fusion.hpp"
#include "compiler/passes/parameters.hpp"
#include "compiler/passes/quantize.hpp"
#include "compiler/reference/reference.hpp"
#include "compiler/reference/reference_bf16.hpp"
#include "onnx_test_models.hpp"

namespace npusim {
namespace {

using onnx_test::FloatArray;
using onnx_test::load_array;
using onnx_test::model_path;

constexpr double kRelativeTolerance = 0.08;
constexpr double kBf16RelativeTolerance = 0.02;

// Nearest bf16 (round half to even on the upper 16 bits of the float).
float round_to_bf16(float x) {
  uint32_t bits = std::bit_cast<uint32_t>(x);
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  return std::bit_cast<float>(bits & 0xFFFF0000u);
}

// Largest |got - want| over the elements, relative to the largest |want|; `worst` its index.
double relative_error(const std::vector<float>& got, const std::vector<float>& want,
                      size_t* worst) {
  float range = 0.0f;
  for (float v : want) range = std::max(range, std::fabs(v));
  double largest = 0.0;
  *worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double error = std::fabs(got[i] - want[i]);
    if (error > largest) {
      largest = error;
      *worst = i;
    }
  }
  return range > 0.0f ? largest / range : largest;
}

// [N, C, S...] -> [N, S..., C]; arrays of rank 3 or less are unchanged.
FloatArray to_channels_last(const FloatArray& a) {
  if (a.shape.size() < 4) return a;
  const int64_t n = a.shape[0], c = a.shape[1];
  int64_t s = 1;
  for (size_t i = 2; i < a.shape.size(); ++i) s *= a.shape[i];
  FloatArray out;
  out.shape = {n};
  out.shape.insert(out.shape.end(), a.shape.begin() + 2, a.shape.end());
  out.shape.push_back(c);
  out.values.resize(a.values.size());
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t ci = 0; ci < c; ++ci) {
      for (int64_t si = 0; si < s; ++si) {
        out.values[static_cast<size_t>((b * s + si) * c + ci)] =
            a.values[static_cast<size_t>((b * c + ci) * s + si)];
      }
    }
  }
  return out;
}

struct Case {
  const char* model;
  std::vector<const char*> outputs;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.model; }

class OnnxNumeric : public testing::TestWithParam<Case> {};

TEST_P(OnnxNumeric, QuantizedReferenceMatchesNumpyWithinTolerance) {
  const Case c = GetParam();
  FloatArray x = to_channels_last(load_array(c.model, "input"));
  const int batch = static_cast<int>(x.shape[0]);
  Graph g = import_onnx(model_path(c.model), batch);

  float largest = 0.0f;
  for (float v : x.values) largest = std::max(largest, std::fabs(v));
  g.input_scale = largest / 127.0f;
  std::vector<int8_t> q(x.values.size());
  for (size_t i = 0; i < q.size(); ++i) {
    q[i] = static_cast<int8_t>(std::clamp(std::lround(x.values[i] / g.input_scale), -127L, 127L));
  }
  optimize_graph(g);
  quantize_graph(g, q);
  auto tensors = run_reference(g, q);

  for (const char* name : c.outputs) {
    FloatArray want = load_array(c.model, name);
    if (!g.io_in_onnx_order.count(name)) want = to_channels_last(want);
    ASSERT_TRUE(tensors.count(name)) << name;
    const auto& got = tensors.at(name);
    ASSERT_EQ(got.size(), want.values.size()) << name;
    std::vector<int64_t> ir_shape{batch};
    for (int d : g.shape_of(name).dims) ir_shape.push_back(d);
    EXPECT_EQ(ir_shape, want.shape) << name;
    const float scale = g.scale_of(name);
    float range = 0.0f;
    for (float v : want.values) range = std::max(range, std::fabs(v));
    size_t worst = 0;
    double worst_error = 0.0;
    for (size_t i = 0; i < got.size(); ++i) {
      const double error = std::fabs(got[i] * scale - want.values[i]);
      if (error > worst_error) {
        worst_error = error;
        worst = i;
      }
    }
    EXPECT_LE(worst_error, kRelativeTolerance * range)
        << c.model << " output " << name << ": element " << worst << " is " << got[worst] * scale
        << ", numpy says " << want.values[worst] << " (range " << range << ")";
  }
}

// The bf16 path: weights and every layer's output in bf16, fp32 arithmetic inside.
TEST_P(OnnxNumeric, Bf16ReferenceMatchesNumpyWithinTolerance) {
  const Case c = GetParam();
  FloatArray x = to_channels_last(load_array(c.model, "input"));
  const int batch = static_cast<int>(x.shape[0]);
  Graph g = import_onnx(model_path(c.model), batch);
  g.dtype = DataType::kBf16;
  optimize_graph(g);
  prepare_bf16(g);
  for (float& v : x.values) v = round_to_bf16(v);
  auto tensors = run_reference_bf16(g, x.values);
  for (const char* name : c.outputs) {
    FloatArray want = load_array(c.model, name);
    if (!g.io_in_onnx_order.count(name)) want = to_channels_last(want);
    ASSERT_TRUE(tensors.count(name)) << name;
    const auto& got = tensors.at(name);
    ASSERT_EQ(got.size(), want.values.size()) << name;
    size_t worst;
    EXPECT_LE(relative_error(got, want.values, &worst), kBf16RelativeTolerance)
        << c.model << " output " << name << ": element " << worst << " is " << got[worst]
        << ", numpy says " << want.values[worst];
  }
}

INSTANTIATE_TEST_SUITE_P(
    Models, OnnxNumeric,
    testing::Values(Case{"cnn", {"probs"}}, Case{"mlp", {"logits"}}, Case{"flatten_dense", {"y"}},
                    Case{"conv_grouped", {"y"}}, Case{"conv_depthwise", {"y"}},
                    Case{"conv3d", {"y"}}, Case{"pools", {"cat", "max", "max_ceil", "avg_ceil"}},
                    Case{"activations", {"relu6", "clip", "sum"}}, Case{"sequence", {"y"}},
                    Case{"reduce_squeeze", {"y1", "y2"}}, Case{"aliases", {"y"}},
                    Case{"pad_conv", {"y"}}, Case{"opset11", {"y"}},
                    Case{"flatten_layernorm", {"y"}}, Case{"attention", {"y"}},
                    Case{"scale_fold", {"y", "gap"}}, Case{"arith_consts", {"y", "d"}},
                    Case{"bn_alone", {"y", "e"}}, Case{"reduce_rows", {"feat_mean", "y"}},
                    Case{"layernorm_axes", {"y"}}, Case{"matmul_ranks", {"y1", "y2"}},
                    Case{"bn_rows", {"y"}}, Case{"rms_norm", {"y1", "y2"}}),
    [](const testing::TestParamInfo<Case>& param_info) {
      return std::string(param_info.param.model);
    });

// make_movement_models.py: data movement and exporter-style blocks.
INSTANTIATE_TEST_SUITE_P(Movement, OnnxNumeric,
                         testing::Values(Case{"movement",
                                              {"sliced", "reversed", "split_a", "split_b", "up",
                                               "up_sizes", "cat_c", "cat_h", "xt", "nhwc", "padded",
                                               "reflected", "edged", "gathered", "flat_hw", "unsq",
                                               "flat"}},
                                         Case{"resnet_block", {"logits", "logits2"}},
                                         Case{"bert_attention", {"y", "cls", "probs"}},
                                         Case{"mobilenet_block", {"y", "reflect_relu"}}),
                         [](const testing::TestParamInfo<Case>& param_info) {
                           return std::string(param_info.param.model);
                         });

}  // namespace
}  // namespace npusim
