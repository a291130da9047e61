#include "compiler/frontend/onnx/onnx_operators.hpp"

#include "compiler/frontend/onnx/onnx_importer.hpp"

namespace npusim::onnx_frontend {

const std::vector<OnnxTranslator>& onnx_translators() {
  using I = OnnxImporter;
  static const std::vector<OnnxTranslator> table = {
      {"Conv", "Conv", [](I& im, int i) { im.import_conv(i); }},
      {"Gemm", "Gemm", [](I& im, int i) { im.import_gemm(i); }},
      {"MatMul", "MatMul", [](I& im, int i) { im.import_matmul(i); }},
      {"Add", "Add", [](I& im, int i) { im.import_binary(i, OpKind::kAdd); }},
      {"Mul", "Mul", [](I& im, int i) { im.import_binary(i, OpKind::kMul); }},
      {"Relu", "Relu", [](I& im, int i) { im.import_activation(i, Activation::kRelu); }},
      {"Clip", "Clip", [](I& im, int i) { im.import_clip(i); }},
      {"Sigmoid", "Sigmoid", [](I& im, int i) { im.import_activation(i, Activation::kSigmoid); }},
      {"Tanh", "Tanh", [](I& im, int i) { im.import_activation(i, Activation::kTanh); }},
      {"HardSwish", "HardSwish",
       [](I& im, int i) { im.import_activation(i, Activation::kHardSwish); }},
      {"HardSigmoid", "HardSigmoid", [](I& im, int i) { im.import_hard_sigmoid(i); }},
      {"Sqrt", "Sqrt", [](I& im, int i) { im.import_activation(i, Activation::kSqrt); }},
      {"Reciprocal", "Reciprocal",
       [](I& im, int i) { im.import_activation(i, Activation::kReciprocal); }},
      {"Pow", "Pow (constant exponent)", [](I& im, int i) { im.import_pow(i); }},
      {"Neg", "Neg", [](I& im, int i) { im.import_neg(i); }},
      {"Where", "Where (constant condition)", [](I& im, int i) { im.import_where(i); }},
      {"Expand", "Expand", [](I& im, int i) { im.import_expand(i); }},
      {"Gelu", "Gelu", [](I& im, int i) { im.import_gelu(i); }},
      {"Erf", "Erf", [](I& im, int i) { im.import_erf(i); }},
      {"Softmax", "Softmax", [](I& im, int i) { im.import_softmax(i); }},
      {"LayerNormalization", "LayerNormalization", [](I& im, int i) { im.import_layer_norm(i); }},
      {"BatchNormalization", "BatchNormalization", [](I& im, int i) { im.import_batch_norm(i); }},
      {"MaxPool", "MaxPool", [](I& im, int i) { im.import_pool(i, OpKind::kMaxPool); }},
      {"AveragePool", "AveragePool", [](I& im, int i) { im.import_pool(i, OpKind::kAvgPool); }},
      {"GlobalAveragePool", "GlobalAveragePool",
       [](I& im, int i) { im.import_global_pool(i, OpKind::kAvgPool); }},
      {"GlobalMaxPool", "GlobalMaxPool",
       [](I& im, int i) { im.import_global_pool(i, OpKind::kMaxPool); }},
      {"ReduceMean", "ReduceMean", [](I& im, int i) { im.import_reduce(i, I::Reduce::kMean); }},
      {"ReduceSum", "ReduceSum", [](I& im, int i) { im.import_reduce(i, I::Reduce::kSum); }},
      {"ReduceMax", "ReduceMax", [](I& im, int i) { im.import_reduce(i, I::Reduce::kMax); }},
      {"Concat", "Concat", [](I& im, int i) { im.import_concat(i); }},
      {"Flatten", "Flatten", [](I& im, int i) { im.import_flatten(i); }},
      {"Reshape", "Reshape", [](I& im, int i) { im.import_reshape(i); }},
      {"Squeeze", "Squeeze", [](I& im, int i) { im.import_squeeze(i, false); }},
      {"Unsqueeze", "Unsqueeze", [](I& im, int i) { im.import_squeeze(i, true); }},
      {"Pad", "Pad", [](I& im, int i) { im.import_pad(i); }},
      {"Transpose", "Transpose", [](I& im, int i) { im.import_transpose(i); }},
      {"Identity", "Identity", [](I& im, int i) { im.import_identity(i); }},
      {"Dropout", "Dropout", [](I& im, int i) { im.import_identity(i); }},
      {"Constant", "Constant", [](I& im, int i) { im.import_constant_node(i); }},
      {"Sub", "Sub", [](I& im, int i) { im.import_sub_div(i, '-'); }},
      {"Div", "Div", [](I& im, int i) { im.import_sub_div(i, '/'); }},
      {"Slice", "Slice", [](I& im, int i) { im.import_slice(i); }},
      {"Gather", "Gather (constant indices or token ids)",
       [](I& im, int i) { im.import_gather(i); }},
      {"Resize", "Resize (nearest, linear, cubic)", [](I& im, int i) { im.import_resize(i); }},
      {"Split", "Split", [](I& im, int i) { im.import_split(i); }},
      {"Shape", "Shape", [](I& im, int i) { im.import_shape(i); }},
      {"Cast", "Cast", [](I& im, int i) { im.import_cast(i); }},
      {"ConvTranspose", "ConvTranspose", [](I& im, int i) { im.import_conv_transpose(i); }},
      {"LSTM", "LSTM", [](I& im, int i) { im.import_recurrent(i); }},
      {"GRU", "GRU", [](I& im, int i) { im.import_recurrent(i); }},
      {"Tile", "Tile (constant repeats)", [](I& im, int i) { im.import_tile(i); }},
      {"GatherElements", "GatherElements (constant indices)",
       [](I& im, int i) { im.import_gather_elements(i); }},
      {"GatherND", "GatherND (constant indices)", [](I& im, int i) { im.import_gather_nd(i); }},
      {"Einsum", "Einsum (matrix products)", [](I& im, int i) { im.import_einsum(i); }},
  };
  return table;
}

const OnnxTranslator* find_onnx_translator(const std::string& op_type) {
  for (const auto& t : onnx_translators()) {
    if (op_type == t.op_type) return &t;
  }
  return nullptr;
}

std::string onnx_supported_operators() {
  std::string list;
  for (const auto& t : onnx_translators()) {
    if (!list.empty()) list += ", ";
    list += t.listed_as;
  }
  return list;
}

}  // namespace npusim::onnx_frontend
