#include "compiler/ir/backward_rules.hpp"

#include <fmt/format.h>

#include "compiler/ir/op_table.hpp"
#include "support/error.hpp"

namespace npusim {

namespace {

Layer make_layer(const std::string& name, OpKind kind, std::vector<std::string> inputs) {
  Layer l;
  l.name = name;
  l.kind = kind;
  l.inputs = std::move(inputs);
  l.output = name;
  return l;
}

// dL/dx = dL/dy * step(y) for y = relu(x): y > 0 exactly where x > 0.
std::string relu_backward(BackwardBuilder& b, const std::string& prefix, const std::string& y,
                          const std::string& gy) {
  Layer mask = make_layer(prefix + ".relu_mask", OpKind::kActivation, {y});
  mask.activation = Activation::kStep;
  const std::string m = b.add(std::move(mask));
  return b.add(make_layer(prefix + ".relu_grad", OpKind::kMul, {gy, m}));
}

[[noreturn]] void no_rule(const Layer& l, const std::string& what) {
  throw UserError(fmt::format("layer '{}' ({}): training has no backward rule for {} yet", l.name,
                              to_string(l.kind), what));
}

}  // namespace

std::vector<int> BackwardBuilder::step_dims(const std::string& tensor) const {
  const auto it = sample_shape.find(tensor);
  NPUSIM_CHECK(it != sample_shape.end(), "training: no shape for tensor {}", tensor);
  std::vector<int> dims{batch};
  dims.insert(dims.end(), it->second.dims.begin(), it->second.dims.end());
  return dims;
}

std::string BackwardBuilder::add(Layer layer) {
  NPUSIM_CHECK(layer.output == layer.name, "training: layer {} writes {}", layer.name,
               layer.output);
  step.layers.push_back(std::move(layer));
  return step.layers.back().name;
}

void BackwardBuilder::accumulate(const std::string& tensor, const std::string& g) {
  auto it = gradient.find(tensor);
  if (it == gradient.end()) {
    gradient.emplace(tensor, g);
    return;
  }
  it->second = add(make_layer(g + ".sum", OpKind::kAdd, {it->second, g}));
}

Layer transpose_move(const std::string& name, const std::string& input, int rows, int cols) {
  Layer l = make_layer(name, OpKind::kMove, {input});
  l.move_op = "transpose";
  l.reshape_to = {cols, rows};
  l.move_from.resize(size_t(rows) * size_t(cols));
  for (int c = 0; c < cols; ++c) {
    for (int r = 0; r < rows; ++r) l.move_from[size_t(c) * rows + r] = {0, r * cols + c};
  }
  return l;
}

Layer ones_column_move(const std::string& name, const std::string& input, int rows, int cols) {
  Layer l = make_layer(name, OpKind::kMove, {input});
  l.move_op = "append_ones";
  l.reshape_to = {rows, cols + 1};
  l.move_constants = {1.0f};
  l.move_from.reserve(size_t(rows) * size_t(cols + 1));
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) l.move_from.push_back({0, r * cols + c});
    l.move_from.push_back({-1, 0});
  }
  return l;
}

Layer constant_move(const std::string& name, const std::string& anchor, std::vector<int> dims,
                    std::vector<float> values, std::vector<int32_t> index) {
  Layer l = make_layer(name, OpKind::kMove, {anchor});
  l.move_op = "constant";
  l.reshape_to = std::move(dims);
  l.move_constants = std::move(values);
  l.move_from.reserve(index.size());
  for (int32_t i : index) l.move_from.push_back({-1, i});
  return l;
}

// y = act(x W + b) over the last dimension; the R = batch x (rows per sample) rows at once:
//   dL/dz = dL/dy (* step(y) for ReLU)
//   [dW^T | db] = (dL/dz)^T [x | 1]        on the matrix unit ([out, R] x [R, in + 1])
//   dL/dx = dL/dz W^T                      a dense layer with the transposed weights
void backward_dense(BackwardBuilder& b, const Layer& l) {
  const auto gy = b.gradient.find(l.output);
  if (gy == b.gradient.end()) return;  // the loss does not depend on it
  std::string gz = gy->second;
  if (l.activation == Activation::kRelu) {
    gz = relu_backward(b, l.name, l.output, gz);
  } else if (l.activation != Activation::kNone) {
    no_rule(l, fmt::format("its fused activation '{}'", to_string(l.activation)));
  }
  const TensorShape& x = l.in_shapes.at(0);
  const int in = x.last(), out = l.filters;
  const int rows = int(uint64_t(b.batch) * x.outer());
  const std::string gzt = b.add(transpose_move(l.name + ".grad_t", gz, rows, out));
  std::string xa;
  if (l.use_bias) {
    xa = b.add(ones_column_move(l.name + ".input_ones", l.inputs[0], rows, in));
  } else {
    Layer r = make_layer(l.name + ".input_rows", OpKind::kReshape, {l.inputs[0]});
    r.reshape_to = {rows, in};
    xa = b.add(std::move(r));
  }
  const std::string gw = b.add(make_layer(l.name + ".grad_weight", OpKind::kMatMul, {gzt, xa}));
  b.parameters.push_back({l.name, gw, in, out, l.use_bias});
  if (!b.wants_gradient(l.inputs[0])) return;
  NPUSIM_CHECK(l.weights.size() == size_t(in) * size_t(out), "training: layer {} has {} weights",
               l.name, l.weights.size());
  Layer gx = make_layer(l.name + ".grad_input", OpKind::kDense, {gz});
  gx.filters = in;
  gx.use_bias = false;
  gx.weights.resize(l.weights.size());
  for (int i = 0; i < in; ++i) {
    for (int o = 0; o < out; ++o) gx.weights[size_t(o) * in + i] = l.weights[size_t(i) * out + o];
  }
  b.accumulate(l.inputs[0], b.add(std::move(gx)));
}

void backward_activation(BackwardBuilder& b, const Layer& l) {
  if (l.activation != Activation::kRelu) {
    no_rule(l, fmt::format("activation '{}'", to_string(l.activation)));
  }
  const auto gy = b.gradient.find(l.output);
  if (gy == b.gradient.end() || !b.wants_gradient(l.inputs[0])) return;
  b.accumulate(l.inputs[0], relu_backward(b, l.name, l.output, gy->second));
}

// A reshape only renames the elements: the gradient is reshaped back.
void backward_reshape(BackwardBuilder& b, const Layer& l) {
  const auto gy = b.gradient.find(l.output);
  if (gy == b.gradient.end() || !b.wants_gradient(l.inputs[0])) return;
  Layer r = make_layer(l.name + ".grad_input", OpKind::kReshape, {gy->second});
  r.reshape_to = b.step_dims(l.inputs[0]);
  b.accumulate(l.inputs[0], b.add(std::move(r)));
}

}  // namespace npusim
