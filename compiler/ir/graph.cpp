#include "compiler/ir/graph.hpp"

#include <algorithm>

#include "compiler/ir/op_table.hpp"
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

const char* to_string(OpKind kind) { return op_info(kind).name; }

int Layer::input_channels_per_group() const {
  return in_shapes.empty() ? 0 : in_shapes[0].last() / std::max(groups, 1);
}

uint64_t Layer::reduction() const {
  if (op_info(kind).unit != OpUnit::kMatrix || in_shapes.empty()) return 0;
  if (kind == OpKind::kConv) {
    return uint64_t(kernel[0]) * kernel[1] * kernel[2] * input_channels_per_group();
  }
  return in_shapes[0].last();  // dense, matmul: the last dimension of the first input
}

uint64_t Layer::macs(int batch) const {
  if (op_info(kind).unit != OpUnit::kMatrix) return 0;
  return uint64_t(batch) * out_shape.elements() * reduction();
}

namespace {

// The scale of `element` of a tensor whose samples have `sample` elements in rows.size() rows.
float row_scale(const std::vector<float>& rows, uint64_t sample, uint64_t element) {
  return rows[(element % sample) / (sample / rows.size())];
}

}  // namespace

float Layer::in_scale_at(size_t k, uint64_t element) const {
  if (k >= in_row_scales.size() || in_row_scales[k].empty()) return in_scales[k];
  return row_scale(in_row_scales[k], in_shapes[k].elements(), element);
}

float Layer::input_ratio_at(size_t k, uint64_t element) const {
  const bool in_rows = k < in_row_scales.size() && !in_row_scales[k].empty();
  if (!in_rows && out_row_scales.empty()) return input_ratios[k];
  // The ratio to the scale before any table, as input_ratios (quantize.cpp); an add with per-row
  // output scales has no table.
  const float out =
      out_row_scales.empty() ? mid_scale : row_scale(out_row_scales, out_shape.elements(), element);
  return in_scale_at(k, element) / out;
}

bool Layer::has_weights() const { return op_info(kind).has_weights; }

const Layer* Graph::producer(const std::string& tensor) const {
  for (const auto& l : layers) {
    if (l.output == tensor) return &l;
  }
  return nullptr;
}

TensorShape Graph::shape_of(const std::string& tensor) const {
  const Layer* p = producer(tensor);
  return p ? p->last_stage().out_shape : input_shape;
}

float Graph::scale_of(const std::string& tensor) const {
  const Layer* p = producer(tensor);
  return p ? p->last_stage().out_scale : input_scale;
}

uint64_t Graph::total_macs() const {
  uint64_t total = 0;
  for (const auto& l : layers) total += l.macs(batch);
  return total;
}

}  // namespace npusim
