// Data-movement operators in ONNX coordinates (compiler/frontend/onnx/onnx_movement.cpp): an
// operator is its output shape and, for every output element, the operand element it copies.
// The importer turns that map into an IR `move` layer for run-time tensors, composing it with
// each tensor's layout, or evaluates it at import when every operand is a constant.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "compiler/frontend/onnx/onnx_layout.hpp"
#include "compiler/frontend/onnx/onnx_tensor.hpp"

namespace npusim::onnx_frontend {

// An operand of a data-movement operator: a run-time tensor or a constant.
struct MoveOperand {
  const Value* value = nullptr;
  const Constant* constant = nullptr;
  std::vector<int64_t> dims;  // the full ONNX shape; a run-time tensor's batch counts as 1
};

struct MoveSpec {
  std::vector<int64_t> dims;  // the output's full shape (batch 1 for run-time tensors)
  // Sets `in` to the coordinates of the element that output element `out` copies and returns
  // the index of its operand, or -1 where the output takes `pad`.
  std::function<int(const std::vector<int64_t>& out, std::vector<int64_t>& in)> source;
  float pad = 0.0f;
};

// For each ONNX flat index of a run-time tensor (one sample), its element in the IR tensor.
std::vector<int64_t> ir_elements(const Value& v);
std::vector<int64_t> row_major_strides(const std::vector<int64_t>& dims);
// A data-movement operand's axes as given (negative from the end) against its full rank; returns
// an error message, empty when fine.
std::string normalize(std::vector<int64_t>& axes, size_t rank);
// Transpose of a tensor of shape `dims` by `perm` (a permutation of its axes).
MoveSpec transpose_spec(const std::vector<int64_t>& dims, const std::vector<int64_t>& perm);

}  // namespace npusim::onnx_frontend
