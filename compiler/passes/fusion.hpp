// Fusion before quantization: folds data movement into its readers where they can do it
// (compiler/passes/move_folding.hpp), folds batch norms into the preceding conv / dense, and fuses
// an activation into the conv / dense / matmul / add that feeds it (it then runs in that layer's
// epilogue on the vector unit instead of as a pass of its own over memory).
#pragma once

#include <functional>

#include "compiler/ir/graph.hpp"

namespace npusim {

void optimize_graph(Graph& graph);

// Fusion after quantization (or prepare_bf16), into the epilogue of a conv / dense / matmul
// (Layer::epilogue), where it saves a round trip of a whole tensor through off-chip memory:
// - a residual add one of whose operands is a matrix layer's output that nothing else reads runs
//   on that layer's output blocks (the later-produced operand's layer is preferred: the conv that
//   completes the add), the other operand read block by block;
// - a max / average pool whose windows tile a conv's output exactly (window = stride, no padding,
//   the output's height and width multiples of the window) runs on its output blocks, and only
//   the pooled blocks are stored.
// The fused layer takes the place of the add / pool in the layer order, so every input it reads
// is produced before it. `fits(layer)` says whether the layer, with the stage just attached, still
// tiles on the hardware (compiler/lowering: matrix_layer_fits); when not, the stage stays a layer
// of its own. Values do not change: each stage computes what the separate layer did.
void fuse_epilogues(Graph& graph, const std::function<bool(const Layer&)>& fits);

}  // namespace npusim
