// Tensor parallelism (docs/multicore.md, "Tensor parallelism"): a conv / dense / matmul layer's
// output channels (a GEMM's N) are split over the cores in whole array-column tiles; each core
// loads the whole input and only its columns of the weights, and stores its columns of the
// output off chip. The next layer gathers the result by reading that off-chip tensor: its loads
// carry dependency tokens on every core's stores of the bytes they read (the hazard tracker sees
// one off-chip space for the chip), so no layer starts on any core before the slices it reads are
// stored. Vector-only layers (pooling, add, softmax, ...) run on core 0. A tensor a split layer
// reads or writes stays off chip (the memory plan); the others may stay in core 0's unified
// buffer as on one core.
//
// `auto` (when the batch has fewer images than the chip has cores) chooses per matrix layer: the
// split saves the compute cycles of the columns the busiest core does not do (MACs at one core's
// peak); it costs the input loaded again by every further core and the output crossing off-chip
// memory (stored, then loaded by its readers, where one core might keep it on chip) at the
// memory's peak bandwidth, plus a store-then-load round trip of the memory latency at the layer
// boundary. The layer is split when it saves more than it costs; otherwise it runs on core 0.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "arch/hw_config.hpp"
#include "compiler/ir/graph.hpp"
#include "compiler/lowering/lowering.hpp"

namespace npusim {

struct ColumnRange {
  int begin = 0, end = 0;  // output channels [begin, end)
};
// `n` columns in whole tiles of `tile` columns over at most `cores` cores, as evenly as the
// tiles allow (the first cores take one tile more); one range per core used, core 0 first.
std::vector<ColumnRange> split_columns(int n, int tile, int cores);

// Per layer of `graph`: the cores it runs on and why. `forced` (--parallel tensor): every matrix
// layer of at least two array-column tiles is split over as many cores as it has tiles (at most
// the chip's); else (auto) as the estimate above says.
std::vector<LayerSplit> plan_tensor_parallel(const Graph& graph, const HwConfig& hw, bool forced);

// Compiles `graph` with the plan above; Program::parallel says what was chosen.
CompileResult compile_tensor_parallel(const Graph& graph, const HwConfig& hw, bool forced);

// A graph whose layers its builder placed on cores (a decoder split Megatron-style by heads and
// FFN columns, compiler/frontend/llm/decoder_graph.hpp): layer name -> core, kAllCores for a
// matrix layer whose output channels split over every core as above; a layer not named runs on
// core 0 (a fused layer on its matrix layer's core). `summary` is Program::parallel.
struct LayerCores {
  static constexpr int kAllCores = -1;
  std::map<std::string, int> core_of;
  std::string summary;
  int core(const std::string& layer) const {
    const auto it = core_of.find(layer);
    return it == core_of.end() ? 0 : it->second;
  }
};
CompileResult compile_placed(const Graph& graph, const HwConfig& hw, const LayerCores& cores);

}  // namespace npusim
