// Fusion before quantization: folds data movement into its readers where they can do it
// (compiler/passes/move_folding.hpp), folds batch norms into the preceding conv / dense, and fuses
// an activation into the conv / dense / matmul / add that feeds it (it then runs in that layer's
// epilogue on the vector unit instead of as a pass of its own over memory).
#pragma once

#include "compiler/ir/graph.hpp"

namespace npusim {

void optimize_graph(Graph& graph);

}  // namespace npusim
