// The functional reference of the bf16 path: every operator over whole tensors in fp32, each
// layer's output rounded to bf16 as the hardware stores it. The simulated network accumulates in
// the systolic array's order (tile by tile), this one in plain index order, so the two agree
// within a bound rather than bit for bit: reference_bf16_layer.hpp derives it per layer.
// The same loops without any rounding are the float32 graph (run_reference_f32): the network's
// real-valued parameters, no quantization, the yardstick of int8 accuracy.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "compiler/ir/graph.hpp"

namespace npusim {

using TensorF = std::vector<float>;  // batch x elements, channels last, bf16-representable values

std::map<std::string, TensorF> run_reference_bf16(const Graph& graph, const TensorF& input);
// Every tensor of the float32 graph by name: real-valued weights and biases (after batch-norm
// folding, before or after quantization, while `weights` are kept), fp32 throughout. `input` holds
// real values (batch x elements, channels last). Any data type's graph can run it.
std::map<std::string, TensorF> run_reference_f32(const Graph& graph, const TensorF& input);

// One layer's output from its inputs (batch x elements each), as run_reference_bf16 computes it.
TensorF reference_bf16_op(const Layer& l, int batch, const std::vector<const TensorF*>& inputs);

}  // namespace npusim
