// Constant folding at import (docs/onnx.md "Constant folding"): a node whose inputs are all
// constants is evaluated here, numpy-like and typed (float, or integer: INT64 / INT32 / BOOL,
// booleans as 0 / 1), so that shape arithmetic, masks, position ids, rotary tables and
// Identity / Cast chains never reach the hardware. One table, one evaluator per operator.
// The data-movement operators (Slice, Gather, Concat, Reshape, Squeeze, Unsqueeze, Flatten,
// Transpose, Pad, Split) fold through their own index maps (onnx_movement.hpp), the same map
// that moves a run-time tensor.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "compiler/frontend/onnx/onnx_tensor.hpp"

namespace npusim::onnx_frontend {

// `inputs`: one per node input, null where an optional input is absent. Fills `outputs` (one
// per node output) or returns a message naming the problem.
using ConstantFoldFn = std::string (*)(const onnx::NodeProto& n, int opset,
                                       const std::vector<const Constant*>& inputs,
                                       std::vector<Constant>& outputs);

struct ConstantFolder {
  const char* op_type;
  ConstantFoldFn fold;
};

// Null when npusim does not evaluate the operator at import.
const ConstantFolder* find_constant_folder(const std::string& op_type);
// "CastLike, ConstantOfShape, ...": the operators without a translator for run-time tensors
// (onnx_operators.hpp), evaluated only on constants.
std::string constant_only_operators();

}  // namespace npusim::onnx_frontend
