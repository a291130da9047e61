// Lowers a graph to a Program for one hardware description: places tensors in off-chip memory,
// tiles every layer so its tiles (double-buffered) fit the on-chip buffers, splits matrix work into
// array-sized MATMUL tiles per dataflow, and derives dependency tokens from buffer accesses.
#pragma once

#include <string>

#include "arch/hw_config.hpp"
#include "arch/program.hpp"
#include "compiler/ir/graph.hpp"
#include "compiler/lowering/tiling.hpp"

namespace npusim {

struct CompileResult {
  bool ok = false;
  Program program;
  std::string reason;  // when !ok: why the network does not fit, and what to change
};

// `graph` must be quantized (compiler/quantize.hpp).
CompileResult compile(const Graph& graph, const HwConfig& hw);

}  // namespace npusim
