// Folds data movement (OpKind::kMove) into the layers that read it when they can do the same on
// the fly: zero padding of a feature map's spatial axes becomes the padding of the convolutions
// reading it, and a swap of the last two axes becomes transpose_b of the matmuls reading it as
// their second operand. Each move is checked element by element against the pattern; a move
// with any other reader stays (and runs on the DMA).
#pragma once

#include "compiler/ir/graph.hpp"

namespace npusim {

void fold_moves(Graph& graph);

}  // namespace npusim
