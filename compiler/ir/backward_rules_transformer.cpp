// Backward rules of a transformer encoder's operators (issue 23, docs/training.md): the products
// of two activations on the matrix unit, the gradient of a data movement moved back, and softmax,
// layer norm, the residual add and GELU as element-wise work on the vector unit. A sum along a
// row (softmax's and layer norm's reductions) runs on the matrix unit as a dense layer with
// constant weights ([n][1], then [1][n] to broadcast it back over the row): the vector unit has
// element-wise operations and whole-row softmax / layer norm, but no row reduction of its own.
#include <fmt/format.h>

#include <cmath>

#include "compiler/ir/backward_rules.hpp"
#include "compiler/ir/op_table.hpp"
#include "support/error.hpp"

namespace npusim {

namespace {

std::string binary(BackwardBuilder& b, const std::string& name, OpKind kind, const std::string& a,
                   const std::string& c) {
  return b.add(make_layer(name, kind, {a, c}));
}

std::string activation(BackwardBuilder& b, const std::string& name, Activation a,
                       const std::string& x) {
  Layer l = make_layer(name, OpKind::kActivation, {x});
  l.activation = a;
  return b.add(std::move(l));
}

uint64_t count(const std::vector<int>& dims) {
  uint64_t n = 1;
  for (int d : dims) n *= uint64_t(d);
  return n;
}

// A tensor of `dims` every element of which is `value` (a move of constants, one DMA run).
std::string constant(BackwardBuilder& b, const std::string& name, const std::string& anchor,
                     const std::vector<int>& dims, float value) {
  return b.add(
      constant_move(name, anchor, dims, {value}, std::vector<int32_t>(size_t(count(dims)), 0)));
}

// A dense layer with constant weights [in][out] (no bias): not a parameter.
std::string constant_dense(BackwardBuilder& b, const std::string& name, const std::string& x,
                           int in, int out, float value) {
  Layer d = make_layer(name, OpKind::kDense, {x});
  d.filters = out;
  d.use_bias = false;
  d.weights.assign(size_t(in) * size_t(out), value);
  b.weight_uses.push_back({name, "", false});
  return b.add(std::move(d));
}

// scale x the sum of each row (the last dimension, n long) of x, in every element of the row.
std::string row_sum_broadcast(BackwardBuilder& b, const std::string& name, const std::string& x,
                              int n, float scale) {
  const std::string s = constant_dense(b, name + "_sum", x, n, 1, scale);
  return constant_dense(b, name, s, 1, n, 1.0f);
}

// The last two dimensions of a [..., rows, cols] tensor of the step graph swapped.
std::string transpose_last_two(BackwardBuilder& b, const std::string& name, const std::string& x,
                               std::vector<int> dims) {
  const int r = dims[dims.size() - 2], c = dims.back();
  const uint64_t outer = count(dims) / (uint64_t(r) * uint64_t(c));
  NPUSIM_CHECK(count(dims) <= uint64_t(INT32_MAX), "training: {} is too large to transpose", x);
  Layer m = make_layer(name, OpKind::kMove, {x});
  m.move_op = "transpose";
  std::swap(dims[dims.size() - 2], dims.back());
  m.reshape_to = dims;
  for (uint64_t o = 0; o < outer; ++o) {
    for (int j = 0; j < c; ++j) {
      m.move_from.append(0, int32_t(o * uint64_t(r) * uint64_t(c) + uint64_t(j)), c, uint64_t(r));
    }
  }
  return b.add(std::move(m));
}

// Gradient shares without accumulate()'s name clash when one share reaches two tensors that both
// have gradients already (a residual add's): the sum is named after the tensor.
void accumulate_named(BackwardBuilder& b, const std::string& tensor, const std::string& g) {
  auto it = b.gradient.find(tensor);
  if (it == b.gradient.end()) {
    b.gradient.emplace(tensor, g);
    return;
  }
  const std::string name = fmt::format("{}.grad_sum_{}", tensor, g);
  it->second = binary(b, name, OpKind::kAdd, it->second, g);
}

}  // namespace

// C = A B (or A B^T with transpose_b), batched over the leading dimensions, on the matrix unit:
//   dA = dC B^T            (A B^T: dA = dC B)
//   dB = A^T dC            (A B^T: dB = dC^T A)
// the transposes moves of the last two dimensions.
void backward_matmul(BackwardBuilder& b, const Layer& l) {
  const auto gy = b.gradient.find(l.output);
  if (gy == b.gradient.end()) return;
  if (l.activation != Activation::kNone) {
    no_rule(l, fmt::format("a fused activation '{}' on a matmul", to_string(l.activation)));
  }
  const std::string& a = l.inputs[0];
  const std::string& c = l.inputs[1];
  const std::string& g = gy->second;
  if (b.wants_gradient(a)) {
    Layer da = make_layer(l.name + ".grad_a", OpKind::kMatMul, {g, c});
    da.transpose_b = !l.transpose_b;
    accumulate_named(b, a, b.add(std::move(da)));
  }
  if (!b.wants_gradient(c)) return;
  if (l.transpose_b) {
    const std::string gt = transpose_last_two(b, l.name + ".grad_t", g, b.step_dims(l.output));
    accumulate_named(b, c, binary(b, l.name + ".grad_b", OpKind::kMatMul, gt, a));
  } else {
    const std::string at = transpose_last_two(b, l.name + ".a_t", a, b.step_dims(a));
    accumulate_named(b, c, binary(b, l.name + ".grad_b", OpKind::kMatMul, at, g));
  }
}

// A move copies input elements (or constants) to its output. Where it reads every input element
// at most once (a transpose, a slice, a pad), the gradient of input element e is the output's at
// the element that copied it, 0 where none did: another move, per sample.
void backward_move(BackwardBuilder& b, const Layer& l) {
  const auto gy = b.gradient.find(l.output);
  if (gy == b.gradient.end()) return;
  for (size_t k = 0; k < l.inputs.size(); ++k) {
    if (!b.wants_gradient(l.inputs[k])) continue;
    const uint64_t n = l.in_shapes.at(k).elements();
    std::vector<int64_t> from(size_t(n), -1);
    for (auto it = l.move_from.begin(); it != l.move_from.end(); ++it) {
      const MoveSource s = *it;
      const uint64_t j = it.index();
      if (s.input != int32_t(k)) continue;
      if (from[size_t(s.element)] >= 0) {
        no_rule(l, fmt::format("a move that copies an element of '{}' twice ({})", l.inputs[k],
                               l.move_op));
      }
      from[size_t(s.element)] = int64_t(j);
    }
    const uint64_t out = l.out_shape.elements();
    NPUSIM_CHECK(uint64_t(b.batch) * std::max(n, out) <= uint64_t(INT32_MAX),
                 "training: move {} is too large", l.name);
    Layer m = make_layer(fmt::format("{}.grad_input{}", l.name, k), OpKind::kMove, {gy->second});
    m.move_op = l.move_op + " gradient";
    m.reshape_to = b.step_dims(l.inputs[k]);
    m.move_constants = {0.0f};
    for (int s = 0; s < b.batch; ++s) {
      for (int64_t j : from) {
        m.move_from.push_back(j < 0 ? MoveSource{-1, 0}
                                    : MoveSource{0, int32_t(uint64_t(s) * out + uint64_t(j))});
      }
    }
    accumulate_named(b, l.inputs[k], b.add(std::move(m)));
  }
}

// y = softmax(x) over the last dimension: dx = y (dy - sum(dy y)), the sum along each row.
void backward_softmax(BackwardBuilder& b, const Layer& l) {
  const auto gy = b.gradient.find(l.output);
  if (gy == b.gradient.end() || !b.wants_gradient(l.inputs[0])) return;
  const int n = l.out_shape.last();
  const std::string& y = l.output;
  const std::string p = binary(b, l.name + ".grad_dot", OpKind::kMul, gy->second, y);
  const std::string minus_sum = row_sum_broadcast(b, l.name + ".grad_minus_sum", p, n, -1.0f);
  const std::string t = binary(b, l.name + ".grad_centred", OpKind::kAdd, gy->second, minus_sum);
  accumulate_named(b, l.inputs[0], binary(b, l.name + ".grad_input", OpKind::kMul, y, t));
}

// y = gamma xhat + beta over the last dimension (n long), xhat = (x - mean) / sigma:
//   [dgamma | dbeta] = sum over rows of [dy xhat | dy]   ones [1, R] x [R, 2n] on the matrix unit
//   dxhat = dy gamma                                     a dense layer with diag(gamma)
//   dx = (dxhat - mean(dxhat) - xhat mean(dxhat xhat)) / sigma
// xhat is recomputed (a layer norm with gamma 1 and beta 0, the same epsilon), and sigma is
// mean(xhat x) (= sigma exactly: sum(xhat (x - mean)) = n sigma and sum(xhat) = 0; with
// epsilon, var / sqrt(var + epsilon)).
void backward_layernorm(BackwardBuilder& b, const Layer& l) {
  const auto gy = b.gradient.find(l.output);
  if (gy == b.gradient.end()) return;
  if (l.rms) no_rule(l, "an RMSNorm (a layer norm without the mean)");
  const std::string& x = l.inputs[0];
  const std::string& dy = gy->second;
  const int n = l.out_shape.last();
  const std::vector<int> dims = b.step_dims(l.output);
  const int rows = int(count(dims) / uint64_t(n));
  Layer norm = make_layer(l.name + ".xhat", OpKind::kLayerNorm, {x});
  norm.epsilon = l.epsilon;
  norm.gamma.assign(size_t(n), 1.0f);
  norm.beta.assign(size_t(n), 0.0f);
  const std::string xhat = b.add(std::move(norm));

  const std::string dy_xhat = binary(b, l.name + ".grad_gamma_terms", OpKind::kMul, dy, xhat);
  const std::string both =
      b.add(make_layer(l.name + ".grad_terms", OpKind::kConcat, {dy_xhat, dy}));
  Layer flat = make_layer(l.name + ".grad_term_rows", OpKind::kReshape, {both});
  flat.reshape_to = {rows, 2 * n};
  const std::string term_rows = b.add(std::move(flat));
  const std::string ones = constant(b, l.name + ".ones", l.output, {1, rows}, 1.0f);
  const std::string gb = binary(b, l.name + ".grad_gamma_beta", OpKind::kMatMul, ones, term_rows);
  b.parameters.push_back({l.name, gb, 1, n, true, /*outputs_first=*/false});
  if (!b.wants_gradient(x)) return;

  Layer scale = make_layer(l.name + ".grad_xhat", OpKind::kDense, {dy});
  scale.filters = n;
  scale.use_bias = false;
  if (!l.gamma.empty()) {  // a timing-only step (npusim train --values off) has none
    scale.weights.assign(size_t(n) * size_t(n), 0.0f);
    for (int i = 0; i < n; ++i) scale.weights[size_t(i) * n + i] = l.gamma.at(size_t(i));
  }
  b.weight_uses.push_back({scale.name, l.name, false, /*diagonal=*/true});
  const std::string dxhat = b.add(std::move(scale));

  const float inv_n = 1.0f / float(n);
  const std::string xhat_x = binary(b, l.name + ".xhat_x", OpKind::kMul, xhat, x);
  const std::string sigma = row_sum_broadcast(b, l.name + ".sigma", xhat_x, n, inv_n);
  const std::string inv_sigma =
      activation(b, l.name + ".inv_sigma", Activation::kReciprocal, sigma);
  const std::string minus_mean =
      row_sum_broadcast(b, l.name + ".grad_minus_mean", dxhat, n, -inv_n);
  const std::string dxhat_xhat = binary(b, l.name + ".grad_dot", OpKind::kMul, dxhat, xhat);
  const std::string minus_dot =
      row_sum_broadcast(b, l.name + ".grad_minus_dot", dxhat_xhat, n, -inv_n);
  const std::string along = binary(b, l.name + ".grad_along", OpKind::kMul, xhat, minus_dot);
  const std::string c1 = binary(b, l.name + ".grad_centred", OpKind::kAdd, dxhat, minus_mean);
  const std::string c2 = binary(b, l.name + ".grad_projected", OpKind::kAdd, c1, along);
  accumulate_named(b, x, binary(b, l.name + ".grad_input", OpKind::kMul, c2, inv_sigma));
}

// gelu'(x) = Phi(x) + x phi(x) = (1 + erf(s) + (2 / sqrt(pi)) s exp(-s^2)) / 2 with s = x /
// sqrt(2), from the vector unit's element-wise functions: exp(-t) = sigmoid(-t) / sigmoid(t) (both
// factors accurate to bf16's relative precision for any t >= 0, where 1 / sigmoid(t) - 1 would
// cancel), the constants moves.
std::string gelu_backward(BackwardBuilder& b, const std::string& prefix, const std::string& x,
                          const std::string& gy) {
  const std::vector<int> dims = b.step_dims(x);
  auto c = [&](const std::string& name, float v) {
    return constant(b, prefix + ".gelu_" + name, x, dims, v);
  };
  auto mul = [&](const std::string& name, const std::string& p, const std::string& q) {
    return binary(b, prefix + ".gelu_" + name, OpKind::kMul, p, q);
  };
  auto add = [&](const std::string& name, const std::string& p, const std::string& q) {
    return binary(b, prefix + ".gelu_" + name, OpKind::kAdd, p, q);
  };
  auto act = [&](const std::string& name, Activation a, const std::string& p) {
    return activation(b, prefix + ".gelu_" + name, a, p);
  };
  const float pi = 3.14159265358979323846f;
  const std::string s = mul("s", x, c("inv_sqrt2", 1.0f / std::sqrt(2.0f)));
  const std::string e = act("erf", Activation::kErf, s);
  const std::string t = mul("t", s, s);
  const std::string minus_t = mul("minus_t", t, c("minus_one", -1.0f));
  const std::string exp_minus_t =
      mul("exp_minus_t", act("sigmoid_minus_t", Activation::kSigmoid, minus_t),
          act("inv_sigmoid_t", Activation::kReciprocal, act("sigmoid_t", Activation::kSigmoid, t)));
  const std::string tail =
      mul("tail", mul("s_exp", s, exp_minus_t), c("two_over_sqrt_pi", 2.0f / std::sqrt(pi)));
  const std::string sum = add("sum", add("erf_tail", e, tail), c("one", 1.0f));
  return mul("grad", mul("grad_twice", gy, sum), c("half", 0.5f));
}

void split_fused_activations(Graph& g) {
  std::vector<Layer> layers;
  std::map<std::string, std::string> renamed;  // tensor -> the activation layer's output
  for (Layer& l : g.layers) {
    for (std::string& in : l.inputs) {
      const auto it = renamed.find(in);
      if (it != renamed.end()) in = it->second;
    }
    // Only GELU: an activation without a backward rule stays fused, refused by name there.
    const bool split = l.has_weights() && l.activation == Activation::kGelu;
    layers.push_back(l);
    if (!split) continue;
    Layer& m = layers.back();
    Layer a = make_layer(fmt::format("{}.{}", l.name, to_string(l.activation)), OpKind::kActivation,
                         {m.output});
    a.activation = m.activation;
    a.clip_min = m.clip_min;
    a.clip_max = m.clip_max;
    a.in_shapes = {m.out_shape};
    a.out_shape = m.out_shape;
    m.activation = Activation::kNone;
    renamed[m.output] = a.output;
    layers.push_back(std::move(a));
  }
  for (std::string& out : g.outputs) {
    const auto it = renamed.find(out);
    if (it != renamed.end()) out = it->second;
  }
  g.layers = std::move(layers);
}

}  // namespace npusim
