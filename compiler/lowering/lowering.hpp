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
  std::string reason;     // when !ok: why the network does not fit, and what to change
  int failed_layer = -1;  // when !ok: the layer (graph order) that could not be lowered, if one
};

// Arithmetic operations of one layer, as the host CPU's cost model counts them
// (docs/heterogeneous.md): 2 per MAC of conv / dense / matmul (plus its epilogue's elements),
// window size per output element of a pool, 5 per element of softmax (max, subtract, exp, sum,
// divide), 8 of layer norm, 1 per output element of the other operators.
uint64_t layer_flops(const Layer& l, int batch);

// `graph` must be quantized (compiler/quantize.hpp). Layers marked on_host run on the host CPU
// (hw.host must be described). With a host, a layer the accelerator cannot run (its lowering
// fails: it does not fit the on-chip buffers) falls back to the host, the fallback named in its
// LayerRecord::tiling; without one, the reason is returned as before.
CompileResult compile(const Graph& graph, const HwConfig& hw);

}  // namespace npusim
