#include "compiler/ir/graph.hpp"

#include <fmt/format.h>

#include "support/error.hpp"

namespace npusim {

uint64_t TensorShape::elements() const {
  uint64_t n = 1;
  for (int d : dims) n *= static_cast<uint64_t>(d);
  return n;
}

TensorShape make_shape(std::initializer_list<int> dims) { return TensorShape{dims}; }

std::string to_string(const TensorShape& s) {
  std::string out;
  for (int d : s.dims) {
    if (!out.empty()) out += 'x';
    out += std::to_string(d);
  }
  return out.empty() ? "scalar" : out;
}

const char* to_string(OpKind kind) {
  switch (kind) {
    case OpKind::kConv:
      return "conv";
    case OpKind::kDense:
      return "dense";
    case OpKind::kMatMul:
      return "matmul";
    case OpKind::kMaxPool:
      return "maxpool";
    case OpKind::kAvgPool:
      return "avgpool";
    case OpKind::kActivation:
      return "activation";
    case OpKind::kAdd:
      return "add";
    case OpKind::kMul:
      return "mul";
    case OpKind::kConcat:
      return "concat";
    case OpKind::kReshape:
      return "reshape";
    case OpKind::kSoftmax:
      return "softmax";
    case OpKind::kLayerNorm:
      return "layernorm";
    case OpKind::kBatchNorm:
      return "batchnorm";
  }
  return "?";
}

int Layer::input_channels_per_group() const {
  return in_shapes.empty() ? 0 : in_shapes[0].last() / std::max(groups, 1);
}

uint64_t Layer::reduction() const {
  switch (kind) {
    case OpKind::kConv:
      return uint64_t(kernel[0]) * kernel[1] * kernel[2] * input_channels_per_group();
    case OpKind::kDense:
      return in_shapes.empty() ? 0 : in_shapes[0].last();
    case OpKind::kMatMul:
      return in_shapes.empty() ? 0 : in_shapes[0].last();
    default:
      return 0;
  }
}

uint64_t Layer::macs(int batch) const {
  if (kind != OpKind::kConv && kind != OpKind::kDense && kind != OpKind::kMatMul) return 0;
  return uint64_t(batch) * out_shape.elements() * reduction();
}

const Layer* Graph::producer(const std::string& tensor) const {
  for (const auto& l : layers) {
    if (l.output == tensor) return &l;
  }
  return nullptr;
}

TensorShape Graph::shape_of(const std::string& tensor) const {
  const Layer* p = producer(tensor);
  return p ? p->out_shape : input_shape;
}

float Graph::scale_of(const std::string& tensor) const {
  const Layer* p = producer(tensor);
  return p ? p->out_scale : input_scale;
}

uint64_t Graph::total_macs() const {
  uint64_t total = 0;
  for (const auto& l : layers) total += l.macs(batch);
  return total;
}

}  // namespace npusim
