// Training's backward rules (issue 23, docs/training.md): for each operator a training step can
// differentiate, the IR layers that turn the gradient of its output into the gradients of its
// input and parameters. They are ordinary layers, lowered like any other: a dense layer's weight
// gradient is a matrix product on the matrix unit (the transposes and the ones column that sums
// the bias gradient are DMA moves), its input gradient a dense layer with the transposed weights,
// the ReLU mask a step activation and a multiply on the vector unit.
//
// The step graph has batch 1 and carries the training batch as the leading dimension of every
// tensor, so a sum over the batch (a weight gradient) is the reduction of an ordinary product.
// The operator table (compiler/ir/op_table.hpp) points at these rules.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/ir/graph.hpp"

namespace npusim {

// The gradient of one layer's parameters: tensor `tensor` of the step graph. Dense layers
// (outputs_first): [out, in + 1] with the bias gradient in the last column ([out, in] without a
// bias), the forward weights [in][out] transposed. Convolutions: [in + 1, out], the rows in the
// forward weights' order (kernel row, kernel column, input channel), the bias gradient last.
struct ParameterGradient {
  std::string layer;   // the forward layer
  std::string tensor;  // in the step graph
  int in = 0, out = 0;
  bool has_bias = false;
  bool outputs_first = true;
};

// A layer of the step graph whose weights are a forward layer's parameters: the same [in][out]
// matrix, or its transpose (a dense layer's input gradient reads W^T). The step program takes
// them as run-time inputs (npusim/training_program.hpp).
struct WeightUse {
  std::string layer;      // in the step graph
  std::string parameter;  // the forward layer whose parameters it reads; "": constant weights
  bool transposed = false;
  // A layer norm's gamma as the diagonal of an [n][n] matrix (its backward's dy x gamma), no bias.
  bool diagonal = false;
  // A convolution's input gradient reads W flipped along both spatial axes, its channel axes
  // exchanged: [kh][kw][out][cin] (conv_input_gradient).
  bool flipped = false;
};

// A layer of the step graph named `name` (its output too), of `kind`, reading `inputs`; the
// rules fill in the rest.
Layer make_layer(const std::string& name, OpKind kind, std::vector<std::string> inputs);
// The UserError of a layer that training cannot differentiate: "... has no backward rule for
// <what> yet".
[[noreturn]] void no_rule(const Layer& l, const std::string& what);

struct BackwardBuilder {
  explicit BackwardBuilder(Graph& s) : step(s) {}
  Graph& step;  // the rules append layers to it
  int batch = 1;
  // Per-sample shapes of the forward graph's tensors; the step's are [batch] + these.
  std::map<std::string, TensorShape> sample_shape;
  std::map<std::string, std::string> gradient;  // forward tensor -> the tensor of dLoss/d(it)
  std::vector<ParameterGradient> parameters;
  std::vector<WeightUse> weight_uses;  // of the backward layers
  // Tensors whose gradient is wanted: outputs of a layer with parameters or of a layer reading
  // such a tensor (not the graph input, nor what only depends on it).
  std::set<std::string> needs_gradient;

  std::vector<int> step_dims(const std::string& tensor) const;
  // Appends `layer` (its output tensor is its name) and returns the name.
  std::string add(Layer layer);
  // g is (a share of) the gradient of `tensor`: the shares of several readers are summed.
  void accumulate(const std::string& tensor, const std::string& g);
  bool wants_gradient(const std::string& tensor) const { return needs_gradient.count(tensor) > 0; }
};

// Moves (DMA boxes) the rules use. `input` is rows x cols, row-major.
Layer transpose_move(const std::string& name, const std::string& input, int rows, int cols);
// rows x (cols + 1): each row of the input followed by a 1.
Layer ones_column_move(const std::string& name, const std::string& input, int rows, int cols);
// A tensor of constants, `dims`, values[index[j]] at element j; `anchor` is its nominal input (a
// move reads at least one tensor) and is not read.
Layer constant_move(const std::string& name, const std::string& anchor, std::vector<int> dims,
                    std::vector<float> values, std::vector<int32_t> index);
// The move_op of a constant move whose move_constants hold every image's own constants, one after
// the other (batch x the constants one image reads): image i reads values[index[j] + i x n] at
// element j, n = move_constants.size() / batch. A data-parallel training step has one image per
// core (docs/training.md): each core's labels are its image's constants. The lowering builds the
// constants block of image 0; the caller writes each core's block (npusim/training_program.hpp).
inline constexpr char kPerImageConstants[] = "constant per image";
// The move_op of the transpose of a [rows, cols] matrix that the lowering runs as transposing DMA
// loads (compiler/lowering/move_lowering.cpp) instead of element boxes: a convolution's weight
// gradient reads dz transposed this way (backward_rules_conv.cpp).
inline constexpr char kTransposeRowsMove[] = "transpose by DMA";

void backward_dense(BackwardBuilder& b, const Layer& l);
void backward_activation(BackwardBuilder& b, const Layer& l);
void backward_reshape(BackwardBuilder& b, const Layer& l);
void backward_conv(BackwardBuilder& b, const Layer& l);
void backward_maxpool(BackwardBuilder& b, const Layer& l);

// The transformer encoder's rules (compiler/ir/backward_rules_transformer.cpp): matmul of two
// activations, moves that copy each input element at most once (transpose, slice), softmax,
// layer norm (gamma and beta are parameters), GELU (the residual add: backward_rules_conv.cpp).
void backward_matmul(BackwardBuilder& b, const Layer& l);
void backward_move(BackwardBuilder& b, const Layer& l);
void backward_softmax(BackwardBuilder& b, const Layer& l);
void backward_layernorm(BackwardBuilder& b, const Layer& l);
// dL/dx of y = gelu(x) (erf form), `x` the activation's input.
std::string gelu_backward(BackwardBuilder& b, const std::string& prefix, const std::string& x,
                          const std::string& gy);
// A matrix layer with a fused GELU split into the layer and an activation layer "<name>.gelu"
// that the readers then read: its backward needs the pre-activation. The training step's forward
// graph (npusim/train.cpp); layer names unchanged.
void split_fused_activations(Graph& forward);
// The gradient before a layer's fused activation (ReLU: the mask; none: gy itself).
std::string through_fused_activation(BackwardBuilder& b, const Layer& l, const std::string& gy);

// backward_rules_conv.cpp: what a residual CNN needs.
// The input gradient of convolution `l` from dL/dz (its pre-activation gradient): a transposed
// convolution on the matrix unit; returns its tensor.
std::string conv_input_gradient(BackwardBuilder& b, const Layer& l, const std::string& gz);
// The weight (and bias) gradient of convolution `l` with several input channels from dL/dz:
// [dW^T | db] = dz^T [patches(x) | 1] on the matrix unit, a ParameterGradient with
// outputs_first.
void conv_weight_gradient(BackwardBuilder& b, const Layer& l, const std::string& gz);
void backward_add(BackwardBuilder& b, const Layer& l);
void backward_avgpool(BackwardBuilder& b, const Layer& l);  // global average pooling
// Max pooling's per-window-element gradients (k = ki kw + kj, [batch, PH, PW, C]) back into the
// input's layout, summed where windows overlap.
std::string scatter_windows(BackwardBuilder& b, const Layer& l,
                            const std::vector<std::string>& share);

}  // namespace npusim
