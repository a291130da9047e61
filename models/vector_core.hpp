// Vector unit core (plain C++): the values and the cycles of its instructions.
//
// Timing rule, with L = pipeline_latency_cycles, W = lanes, T = transcendental_cycles and
// g(x) = ceil(x / W) lane groups; every instruction streams its elements through the lanes once
// per pass:
//   REQUANT  m x n            L + g(m*n)              (bias, scale, round, clamp, table: pipelined)
//   LUT      e elements       L + g(e)
//   ADD/MUL/RESCALE r x c     L + r * g(c)
//   MAXPOOL  o outputs        L + g(o) * window       (one compare per window element)
//   AVGPOOL  o outputs        L + g(o) * window + T * g(o)   (the divide is a transcendental)
//   SOFTMAX  r rows of len    L + r * (g(len) * (1 + 2T) + T)  (max; exp + sum; exp * 1/sum;
//                                                               one reciprocal per row)
//   LAYERNORM r rows of len   L + r * (g(len) * 4 + T)    (mean; variance; normalize; affine;
//                                                          one reciprocal square root per row)
//   RMSNORM  r rows of len    L + r * (g(len) * 3 + T)    (mean of squares; normalize; gamma;
//                                                          one reciprocal square root per row)
//   F32_AXPBY/MUL/COPY r x c  L + r * h(c)            fp32 work at half the lanes,
//   F32_DIV            r x c  L + r * h(c) * T        h(x) = ceil(x / (W / 2)): a lane's datapath
//   F32_SQRT           r x c  L + r * h(c) * 2T       holds one fp32 value or two bf16 ones; a
//                                                     divide and a square root are iterative
#pragma once

#include <cstdint>

#include "arch/hw_config.hpp"
#include "arch/program.hpp"
#include "models/onchip_buffers.hpp"

namespace npusim {

uint64_t vector_cycles(const VectorUnitConfig& config, const Operation& op);
// Reads operands from and writes results to `buffers` (tables from `program`); returns the number
// of output elements. With `compute_values` false it only claims the operand and result ranges
// (the bank-conflict rule sees the same accesses) and writes nothing.
uint64_t vector_execute(OnChipBuffers& buffers, const Program& program, const Instruction& instr,
                        bool compute_values = true);

}  // namespace npusim
