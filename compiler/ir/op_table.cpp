#include "compiler/ir/op_table.hpp"

#include "compiler/ir/backward_rules.hpp"
#include "support/error.hpp"

namespace npusim {

const std::vector<OpInfo>& op_table() {
  using K = OpKind;
  using U = OpUnit;
  using Lo = OpLowering;
  // kind, name, inputs (min, max), unit, lowering, has_weights, fuses_activation, shape rule,
  // backward rule
  static const std::vector<OpInfo> table = {
      {K::kConv, "conv", 1, 1, U::kMatrix, Lo::kMatrix, true, true, infer_window, backward_conv},
      {K::kDense, "dense", 1, 1, U::kMatrix, Lo::kMatrix, true, true, infer_dense, backward_dense},
      {K::kMatMul, "matmul", 2, 2, U::kMatrix, Lo::kMatrix, false, true, infer_matmul,
       backward_matmul},
      {K::kMaxPool, "maxpool", 1, 1, U::kVector, Lo::kPool, false, false, infer_window,
       backward_maxpool},
      {K::kAvgPool, "avgpool", 1, 1, U::kVector, Lo::kPool, false, false, infer_window,
       backward_avgpool},
      {K::kActivation, "activation", 1, 1, U::kVector, Lo::kRows, false, false, infer_same_as_input,
       backward_activation},
      {K::kAdd, "add", 2, 2, U::kVector, Lo::kEltwise, false, true, infer_same_shape_binary,
       backward_add},
      {K::kMul, "mul", 2, 2, U::kVector, Lo::kEltwise, false, false, infer_same_shape_binary,
       nullptr},
      {K::kConcat, "concat", 2, 0, U::kVector, Lo::kConcat, false, false, infer_concat, nullptr},
      {K::kReshape, "reshape", 1, 1, U::kNone, Lo::kFree, false, false, infer_reshape,
       backward_reshape},
      {K::kSoftmax, "softmax", 1, 1, U::kVector, Lo::kRows, false, false, infer_same_as_input,
       backward_softmax},
      {K::kLayerNorm, "layernorm", 1, 1, U::kVector, Lo::kRows, false, false, infer_same_as_input,
       backward_layernorm},
      {K::kBatchNorm, "batchnorm", 1, 1, U::kNone, Lo::kFolded, false, false, infer_same_as_input,
       nullptr},
      {K::kMove, "move", 1, 0, U::kDma, Lo::kMove, false, false, infer_move, backward_move},
      {K::kEmbedding, "embedding", 1, 1, U::kDma, Lo::kMove, false, false, infer_embedding,
       nullptr},
  };
  return table;
}

const OpInfo& op_info(OpKind kind) {
  const auto& table = op_table();
  const auto index = static_cast<size_t>(kind);
  NPUSIM_CHECK(index < table.size() && table[index].kind == kind,
               "operator {} has no row in the operator table", static_cast<int>(kind));
  return table[index];
}

}  // namespace npusim
