// Pipeline parallelism (docs/multicore.md, "Pipeline parallelism"): consecutive layers are placed
// on the cores as stages balanced by estimated cycles, and the batch is split into micro-batches
// streamed through the stages.
//
// It works on programs, as the data-parallel step does: the ordinary lowering compiles the graph
// at the micro-batch size (at most two sizes: the last micro-batch may be smaller), and each
// micro-batch's copy of each stage's layers is placed on the stage's core, its off-chip
// activations moved into a region of its own (the parameters stay shared). A tensor a stage
// leaves in its unified buffer for a later stage is sent to the next stage's core by COPY
// instructions (at the same address: the memory plan kept it reserved over its live range, so it
// is free there too; a tensor read two stages later is relayed core by core); a tensor kept off
// chip is read there by the later stage's loads, which keep their dependency on its store.
//
// Synchronization is explicit. Block (k, s) is micro-batch k's instructions of stage s. An
// instruction with no dependency inside its block (a root; every instruction of the block waits
// for one through its dependencies) also waits for: block (k - 1, s) to be done (the stage's
// buffers are free again: the last instruction of each of its units), the copies that read
// micro-batch k - 1's tensors out of this core, and the copies that brought micro-batch k's
// tensors in. A copy into stage s waits for block (k, s - 1) (its source is written), block
// (k - 1, s) and micro-batch k - 1's copies out of core s (its destination is no longer read).
// Blocks are emitted by wavefront (k + s ascending, then s descending), so every dependency names
// an earlier instruction.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "arch/hw_config.hpp"
#include "compiler/ir/graph.hpp"
#include "compiler/lowering/lowering.hpp"

namespace npusim {

// Layers [first, end) of the program, on core `core`.
struct PipelineStage {
  int first = 0, end = 0;
  uint64_t estimated_cycles = 0;
};

// A layer's estimated cycles on one core: the largest of its matrix work (each MATMUL: m rows
// streamed plus the array's fill and drain, rows + cols), its vector work (elements / lanes) and
// its off-chip traffic (bytes / bytes per cycle of the memory).
std::vector<uint64_t> estimate_layer_cycles(const Program& program, const HwConfig& hw);
// Consecutive layers into `stages` non-empty stages minimizing the largest stage's estimate.
std::vector<PipelineStage> balance_stages(const std::vector<uint64_t>& layer_cycles, int stages);

// Compiles the quantized `graph` as a pipeline over min(hw.cores, layers with instructions) cores
// with micro-batches of `micro_batch` images (>= 1); a layer without instructions (a reshape) stays
// on the stage of the layer before it.
CompileResult compile_pipeline(const Graph& graph, const HwConfig& hw, int micro_batch);

}  // namespace npusim
