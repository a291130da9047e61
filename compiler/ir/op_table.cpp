#include "compiler/ir/op_table.hpp"

#include "support/error.hpp"

namespace npusim {

const std::vector<OpInfo>& op_table() {
  using K = OpKind;
  using U = OpUnit;
  using Lo = OpLowering;
  // kind, name, inputs (min, max), unit, lowering, has_weights, fuses_activation, shape rule
  static const std::vector<OpInfo> table = {
      {K::kConv, "conv", 1, 1, U::kMatrix, Lo::kMatrix, true, true, infer_window},
      {K::kDense, "dense", 1, 1, U::kMatrix, Lo::kMatrix, true, true, infer_dense},
      {K::kMatMul, "matmul", 2, 2, U::kMatrix, Lo::kMatrix, false, true, infer_matmul},
      {K::kMaxPool, "maxpool", 1, 1, U::kVector, Lo::kPool, false, false, infer_window},
      {K::kAvgPool, "avgpool", 1, 1, U::kVector, Lo::kPool, false, false, infer_window},
      {K::kActivation, "activation", 1, 1, U::kVector, Lo::kRows, false, false,
       infer_same_as_input},
      {K::kAdd, "add", 2, 2, U::kVector, Lo::kEltwise, false, true, infer_same_shape_binary},
      {K::kMul, "mul", 2, 2, U::kVector, Lo::kEltwise, false, false, infer_same_shape_binary},
      {K::kConcat, "concat", 2, 0, U::kVector, Lo::kConcat, false, false, infer_concat},
      {K::kReshape, "reshape", 1, 1, U::kNone, Lo::kFree, false, false, infer_reshape},
      {K::kSoftmax, "softmax", 1, 1, U::kVector, Lo::kRows, false, false, infer_same_as_input},
      {K::kLayerNorm, "layernorm", 1, 1, U::kVector, Lo::kRows, false, false, infer_same_as_input},
      {K::kBatchNorm, "batchnorm", 1, 1, U::kNone, Lo::kFolded, false, false, infer_same_as_input},
      {K::kMove, "move", 1, 0, U::kDma, Lo::kMove, false, false, infer_move},
      {K::kEmbedding, "embedding", 1, 1, U::kDma, Lo::kMove, false, false, infer_embedding},
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
