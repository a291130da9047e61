#include "compiler/passes/row_scales.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace npusim {

namespace {

// The row length of the layer norms among the readers of `tensor` (through reshapes), 0 if none,
// -1 if some reader is not row-wise or the layer norms differ.
int row_wise_readers(const Graph& g, const TensorIndex& index, const std::string& tensor,
                     int depth) {
  if (index.is_output(tensor) || depth > 16) return -1;
  int length = 0;
  for (const auto& [position, operand] : index.readers(tensor)) {
    const Layer& r = g.layers[size_t(position)];
    int n = 0;
    if (r.kind == OpKind::kReshape) {
      n = row_wise_readers(g, index, r.output, depth + 1);
      if (n < 0) return -1;
    } else if (r.kind == OpKind::kLayerNorm) {
      n = r.in_shapes[0].last();
    } else if (r.kind != OpKind::kAdd || r.in_shapes[0] != r.in_shapes[1]) {
      return -1;
    }
    if (n > 0 && length > 0 && n != length) return -1;
    length = std::max(length, n);
  }
  return length;
}

}  // namespace

int row_scale_candidate(const Graph& g, const TensorIndex& index, const Layer& l) {
  const bool affine = l.kind == OpKind::kConv && l.groups == l.filters && l.filters > 0 &&
                      l.out_shape.elements() == uint64_t(l.filters);
  const bool add = l.kind == OpKind::kAdd && l.in_shapes[0] == l.in_shapes[1];
  if (!(affine || add) || l.activation != Activation::kNone || l.fixed_output_scale != 0.0f ||
      !l.epilogue.empty()) {
    return 0;
  }
  const uint64_t elements = l.out_shape.elements();
  const int n = row_wise_readers(g, index, l.output, 0);
  return n > 0 && elements % uint64_t(n) == 0 && elements / uint64_t(n) >= 2 ? n : 0;
}

std::vector<float> choose_row_scales(const std::vector<float>& real, uint64_t sample_elements,
                                     int row_length, float tensor_scale,
                                     const CalibrationOptions& options) {
  if (real.empty() || sample_elements == 0) return {};
  const uint64_t rows = sample_elements / uint64_t(row_length);
  const uint64_t samples = real.size() / sample_elements;
  std::vector<float> scales(rows, tensor_scale);
  bool any = false;
  std::vector<float> values;
  for (uint64_t r = 0; r < rows; ++r) {
    values.clear();
    for (uint64_t s = 0; s < samples; ++s) {
      const float* row = real.data() + s * sample_elements + r * uint64_t(row_length);
      values.insert(values.end(), row, row + row_length);
    }
    const float magnitude = calibration_magnitude(values, options);
    if (magnitude * kSmallRowRatio < tensor_scale * 127.0f) {
      scales[r] = std::max(magnitude / 127.0f, tensor_scale / kSmallestRowScaleRatio);
      any = true;
    }
  }
  return any ? scales : std::vector<float>();
}

}  // namespace npusim
