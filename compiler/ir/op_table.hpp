// The one table of what each IR operator is: its name, how many inputs it takes, which unit runs
// it, how it is lowered, whether it carries weights or takes a following activation into its
// epilogue, and its shape rule. Adding an operator is a row here plus its front-end translator,
// its lowering and its reference.
#pragma once

#include <vector>

#include "compiler/ir/graph.hpp"
#include "compiler/ir/shape_rules.hpp"

namespace npusim {

// The unit that executes an operator's work.
enum class OpUnit {
  kMatrix,  // the systolic array, with the epilogue on the vector unit
  kVector,
  kNone,  // no instructions (free reshape) or folded before lowering
  kDma,   // the DMA queues alone (data movement)
};

// How compiler/lowering turns a layer into instructions.
enum class OpLowering {
  kMatrix,   // blocks of output rows x channels, MATMUL tiles, REQUANT epilogue
  kPool,     // windowed slabs through the vector unit
  kRows,     // blocks of rows: softmax, layer norm, table activations
  kEltwise,  // two same-shaped inputs, chunk by chunk
  kConcat,   // rows of each input rescaled into their columns
  kFree,     // no instructions: the output aliases the input's memory
  kFolded,   // folded into its producer by optimize_graph; never lowered
  kMove,     // strided boxes DRAM -> unified buffer -> DRAM (compiler/lowering/move_lowering.cpp)
};

struct BackwardBuilder;  // compiler/ir/backward_rules.hpp
// Training: appends to the step graph the layers that turn the gradient of the layer's output
// into the gradients of its inputs and parameters (compiler/ir/backward_rules.hpp).
using BackwardRule = void (*)(BackwardBuilder& builder, const Layer& layer);

struct OpInfo {
  OpKind kind;
  const char* name;  // as in messages, stats and `npusim compile`
  int min_inputs;
  int max_inputs;  // 0: any number from min_inputs on
  OpUnit unit;
  OpLowering lowering;
  bool has_weights;       // weights and biases of its own (conv, dense)
  bool fuses_activation;  // a following activation runs in its epilogue
  ShapeRule infer_shape;
  BackwardRule backward;  // null: training cannot differentiate it yet (docs/training.md)
};

const OpInfo& op_info(OpKind kind);
// Every operator, in OpKind order.
const std::vector<OpInfo>& op_table();

}  // namespace npusim
