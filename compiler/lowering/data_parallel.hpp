// Spreading a network over the cores of a chip (docs/multicore.md). Data parallel: the batch is
// split over the cores, images as evenly as possible; each core runs the program the ordinary
// lowering emits for its images, and the programs are relocated and merged into one Program whose
// instructions name their core. Weights and biases stay where the lowering placed them, once in
// off-chip memory, and every core loads them from there: the cores share the memory, and this step
// has no broadcast over the interconnect (a core would otherwise need a copy instruction to
// forward what it loaded). Each core's activations live in an off-chip region of its own. The cores
// share no bytes they write, so no dependency crosses cores.
//
// It works on the programs, not inside the lowering: the merge needs only that the lowering puts
// parameters below the input and everything a program writes at or above it.
#pragma once

#include <optional>
#include <string>

#include "arch/hw_config.hpp"
#include "compiler/ir/graph.hpp"
#include "compiler/lowering/lowering.hpp"

namespace npusim {

enum class Parallelism {
  kAuto,      // data parallel when the batch has at least one image per core, else per matrix
              // layer tensor parallel or core 0 by the estimate of tensor_parallel.hpp
  kData,      // the batch over min(batch, cores) cores
  kTensor,    // every matrix layer's output channels over the cores (tensor_parallel.hpp)
  kPipeline,  // consecutive layers on the cores, micro-batches streamed (pipeline_parallel.hpp)
};
// "auto", "data", "tensor", "pipeline"; nullopt for anything else.
std::optional<Parallelism> parse_parallelism(const std::string& text);

// Compiles the quantized `graph` for `hw` as `mode` says; Program::parallel says what was chosen
// and why. `micro_batch`: images per micro-batch of a pipeline (kPipeline only).
CompileResult compile_parallel(const Graph& graph, const HwConfig& hw, Parallelism mode,
                               int micro_batch = 1);

// Programs of one graph compiled at different batch sizes share their parameters: those below the
// activations (which start at the input) are the same bytes at the same addresses, and the
// vector-unit tables are equal (always-on check; `index` names the program in the message).
void check_shared_parameters(const Program& first, const Program& p, int index);

}  // namespace npusim
