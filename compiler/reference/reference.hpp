// The functional reference: every quantized operator as a plain loop over whole tensors, with no
// tiling, no buffers and no instruction stream. The compiler's calibration uses it to choose
// scales; the simulator's functional check compares the simulated outputs with it bit for bit.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compiler/ir/graph.hpp"

namespace npusim {

using Tensor8 = std::vector<int8_t>;  // batch x elements, row-major, channels last

// int32 accumulators (no bias) of a conv, dense or matmul layer, shaped like its output.
std::vector<int32_t> reference_accumulate(const Layer& layer, int batch,
                                          const std::vector<const Tensor8*>& inputs);
// The epilogue of a conv, dense or matmul layer: bias, requantize, saturate, table.
Tensor8 reference_epilogue(const Layer& layer, const std::vector<int32_t>& acc);
// One quantized layer.
Tensor8 reference_layer(const Layer& layer, int batch, const std::vector<const Tensor8*>& inputs);
// Every tensor of a quantized graph by name.
std::map<std::string, Tensor8> run_reference(const Graph& graph, const Tensor8& input);

}  // namespace npusim
