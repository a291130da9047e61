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
  std::string reason;     // when !ok: why the network does not fit, and what to change
  int failed_layer = -1;  // when !ok: the layer (graph order) that could not be lowered, if one
};

// Arithmetic operations of one layer, as the host CPU's cost model counts them
// (docs/heterogeneous.md): 2 per MAC of conv / dense / matmul (plus its epilogue's elements),
// window size per output element of a pool, 5 per element of softmax (max, subtract, exp, sum,
// divide), 8 of layer norm, 1 per output element of the other operators.
uint64_t layer_flops(const Layer& l, int batch);

// The off-chip bytes a program's layers read and write (LayerRecord's dram_read_bytes +
// dram_write_bytes over all layers).
uint64_t off_chip_bytes(const Program& p);

// How one layer is spread over the cores of the chip (compiler/lowering/tensor_parallel.hpp):
// `cores` 1 runs it on core `core` alone; more split a matrix layer's output channels over cores
// 0..cores-1. A layer on core c that reads a tensor resident in another core's unified buffer gets
// it by a COPY over the interconnect into the same range of core c's buffer (the plan reserves a
// resident tensor's range on every core for its live range), once per tensor and core.
struct LayerSplit {
  int cores = 1;
  int core = 0;                   // with cores 1: the core the layer runs on
  std::string choice = "core 0";  // for LayerRecord::parallel
};

// `graph` must be quantized (compiler/quantize.hpp). `splits`: one per layer of the graph, or
// empty (every layer on core 0). Layers marked on_host run on the host CPU (hw.host must be
// described). With a host, a layer the accelerator cannot run (its lowering fails: it does not
// fit the on-chip buffers) falls back to the host, the fallback named in its
// LayerRecord::tiling; without one, the reason is returned as before.
CompileResult compile(const Graph& graph, const HwConfig& hw,
                      const std::vector<LayerSplit>& splits = {});

}  // namespace npusim
