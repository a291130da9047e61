// --host-ops NAME,...: the layers a user pins to the host CPU of a heterogeneous system
// (docs/heterogeneous.md). A name is a layer's name or an operator type as `npusim compile` shows
// it in its layer headings (conv2d, conv3d, dense, matmul, maxpool, avgpool, add, mul, concat,
// softmax, layernorm, an activation such as relu or sigmoid, move or a move's ONNX operator such
// as transpose): every layer of that type goes to the host.
#pragma once

#include <string>

#include "arch/hw_config.hpp"
#include "compiler/ir/graph.hpp"

namespace npusim {

// Marks the named layers of the optimized graph (after optimize_graph) on_host. Bad input is a
// UserError naming --host-ops: no host described, an empty name, a name that matches no layer
// or operator, a layer folded into another, or one that runs no instructions (reshape).
void pin_host_ops(Graph& graph, const HwConfig& hw, const std::string& spec,
                  const std::string& hw_spec);

}  // namespace npusim
