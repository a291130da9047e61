// Lowers a graph to a Program for one hardware description: places tensors in off-chip memory,
// tiles every layer so its tiles (double-buffered) fit the on-chip buffers, splits matrix work into
// array-sized MATMUL tiles per dataflow, and derives dependency tokens from buffer accesses.
#pragma once

#include <string>
#include <vector>

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

// How one layer is spread over the cores of the chip (compiler/lowering/tensor_parallel.hpp):
// `cores` 1 runs it on core 0; more split a matrix layer's output channels over cores 0..cores-1.
struct LayerSplit {
  int cores = 1;
  std::string choice = "core 0";  // for LayerRecord::parallel
};

// `graph` must be quantized (compiler/quantize.hpp). `splits`: one per layer of the graph, or
// empty (every layer on core 0).
CompileResult compile(const Graph& graph, const HwConfig& hw,
                      const std::vector<LayerSplit>& splits = {});

}  // namespace npusim
