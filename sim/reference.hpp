// The functional reference: every operator as a plain loop over whole tensors, with no tiling, no
// buffers and no instruction stream. The simulated outputs must equal its outputs bit for bit.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compiler/graph.hpp"

namespace npusim {

// Returns every tensor of the graph (batch x h x w x c int8, NHWC) by name.
std::map<std::string, std::vector<int8_t>> run_reference(const Graph& graph,
                                                         const std::vector<int8_t>& input);

}  // namespace npusim
