// Vector unit core (plain C++): the values and the cycles of REQUANT, MAXPOOL, SOFTMAX and RELU.
//
// Timing rule, with L = pipeline_latency_cycles, W = lanes, T = transcendental_cycles and
// g(x) = ceil(x / W) lane groups:
//   REQUANT m x n          L + g(m*n)                 (bias add, scale, round, clamp: pipelined)
//   RELU    e elements     L + g(e)
//   MAXPOOL out elements o L + g(o) * window_h * window_w   (one compare per window element)
//   SOFTMAX r rows of len  L + r * (g(len) * (1 + 2T) + T)  (max pass, exp+sum pass, exp*1/sum
//                                                            pass, one reciprocal per row)
#pragma once

#include <cstdint>

#include "arch/hw_config.hpp"
#include "arch/isa.hpp"
#include "models/onchip_buffers.hpp"

namespace npusim {

uint64_t vector_cycles(const VectorUnitConfig& config, const Operation& op);
// Reads operands from and writes results to `buffers`; returns the number of output elements.
uint64_t vector_execute(OnChipBuffers& buffers, const Instruction& instr);

}  // namespace npusim
