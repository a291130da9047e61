// The every-tensor check: each layer's output as the simulation left it, against the functional
// reference (docs/reliability.md). int8 bit for bit; bf16 each layer within the bound of
// compiler/reference/reference_bf16_layer.hpp on the simulator's own inputs of that layer, the
// whole-graph comparison reported as information.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "compiler/ir/graph.hpp"
#include "compiler/reference/reference.hpp"
#include "compiler/reference/reference_bf16.hpp"
#include "npusim/simulate.hpp"

namespace npusim {

// The simulated bytes of tensor `name` (a layer's output, batch x elements, channels last, as in
// the program's TensorPlacement: int8, or bf16 little-endian), or nullptr when the run kept no
// copy of it.
using SimulatedBytes = std::function<const uint8_t*(const std::string& name)>;

// The bf16 reference's input from a bf16 graph's input bytes: bf16 values, or token ids (4 bytes
// each) as values.
TensorF bf16_input(const Graph& graph, const std::vector<uint8_t>& input);

// Compares every layer output the run kept; fills `c` (checked, verdict, counts, errors).
// `reference`, for int8: the whole-graph reference's tensors on `input` when already computed
// (the calibration's, compiler/passes/quantize.hpp), else the check runs the reference.
void check_tensors(const Graph& graph, const std::vector<uint8_t>& input,
                   const SimulatedBytes& simulated, FunctionalCheck& c,
                   const std::map<std::string, Tensor8>* reference = nullptr);

}  // namespace npusim
