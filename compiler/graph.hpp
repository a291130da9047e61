// The graph IR: a network as a list of layers in topological order, with shapes inferred and
// int8 parameters materialized. docs/workload_format.md documents the JSON form.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "arch/quant.hpp"

namespace npusim {

constexpr int kWorkloadSchemaVersion = 1;

// One sample's tensor, NHWC without the batch: dense features are h = w = 1, c = features.
struct TensorShape {
  int h = 1, w = 1, c = 1;
  uint64_t elements() const { return uint64_t(h) * w * c; }
  bool flat() const { return h == 1 && w == 1; }
  bool operator==(const TensorShape&) const = default;
};
std::string to_string(const TensorShape& shape);

enum class OpKind { kConv2d, kDense, kMaxPool, kRelu, kFlatten, kSoftmax };
const char* to_string(OpKind kind);

struct Layer {
  std::string name;
  OpKind kind = OpKind::kRelu;
  std::string input;   // tensor consumed
  std::string output;  // tensor produced

  // conv2d / dense / maxpool attributes
  int filters = 0;  // conv2d filters, dense units
  int kernel_h = 1, kernel_w = 1;  // conv kernel or pool window
  int stride_h = 1, stride_w = 1;
  int dilation_h = 1, dilation_w = 1;
  int pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
  bool relu = false;  // fused activation of conv2d / dense
  bool use_bias = true;

  // Resolved by shape inference.
  TensorShape in_shape, out_shape;
  float in_scale = 1.0f, out_scale = 1.0f;  // real value = int8 value * scale

  // Materialized parameters (conv2d, dense): weights [kh][kw][cin][cout], i.e. K x N row-major.
  std::vector<int8_t> weights;
  std::vector<int32_t> bias;  // N values (zeros when use_bias is false)
  QuantMultiplier requant;

  uint64_t reduction() const { return uint64_t(kernel_h) * kernel_w * in_shape.c; }  // K
  uint64_t macs(int batch) const;
};

struct Graph {
  std::string name;
  std::string description;
  int batch = 1;
  std::string input_name;
  TensorShape input_shape;
  float input_scale = 1.0f / 64;
  std::vector<Layer> layers;
  std::vector<std::string> outputs;

  const Layer* producer(const std::string& tensor) const;  // null for the graph input
  TensorShape shape_of(const std::string& tensor) const;
  float scale_of(const std::string& tensor) const;
  uint64_t total_macs() const;
};

// Parses and checks a workload (all problems at once, "origin: /json/pointer: expected ...").
Graph parse_workload(const nlohmann::json& root, const std::string& origin);
// `spec` is a zoo name or a path to a JSON file. `batch` overrides the file's batch.
Graph load_workload(const std::string& spec, std::optional<int> batch);

// Deterministic pseudo-random int8 weights, int32 biases and requantization scales from `seed`.
// Each layer's values depend only on the seed and the layer's name.
void materialize_parameters(Graph& graph, uint64_t seed);
// A deterministic pseudo-random input batch (batch x h x w x c int8, NHWC).
std::vector<int8_t> make_random_input(const Graph& graph, uint64_t seed);

}  // namespace npusim
