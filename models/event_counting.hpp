// Counting the events the energy model charges (arch/energy_events.hpp, docs/power.md): each unit
// counts them as it executes an instruction (ExecutionUnit::run); plain C++, a pure function of the
// instruction and the buffers' port widths. The units count; power/ prices the counts.
//
// Counting rules (accesses of a buffer are the bytes an instruction's operand moves, in words of
// the port's width, rounded up: a narrow row is charged its share of a word, not a whole word):
//   MATMUL m x k x n: m*k*n MACs of the program's type, as many active PE-cycles (operand and
//     partial-sum registers move once per MAC), k*n stationary registers written; unified buffer
//     reads m rows of k elements, weight buffer reads k rows of n, accumulator writes m rows of n
//     (and as many reads when it accumulates). An N:M sparse tile (models/systolic/sparsity.hpp)
//     occupies Kc = (k / M) * N + min(N, k mod M) rows: m*Kc*n MACs and PE-cycles, Kc*n
//     stationary registers and as many metadata registers of ceil(log2 M) bits written, and per
//     MAC (M - 1) operands' bits more than a dense PE receives and selects from; the buffers are
//     read as for a dense tile (the weight buffer holds the k rows; the array keeps the slots).
//   DMA: one DMA byte per byte moved; the buffer side is written (load) or read (store).
//   COPY (core to core): one link byte per byte moved; the source unified buffer is read and the
//     destination's written (both charged to the sending core).
//   Vector unit, per element: REQUANT bias add and scale multiply (2 add/mul), saturation
//     (2 compares), a table when it has an activation; LUT one table; ELTWISE add a*ra + b*rb (2
//     mul, 1 add), mul a*b*ra (2 mul), rescale (1 mul), saturation (2 compares), a table when it
//     has one; MAXPOOL one compare per window element; AVGPOOL one reduction per window element and
//     one table (the divide) per output; SOFTMAX per element a compare (max), a table (exp), a
//     reduction (sum) and a multiply, one table (reciprocal) per row; LAYERNORM per element two
//     reductions (mean, variance) and four add/mul (subtract, square, normalize, affine), one table
//     (reciprocal square root) per row; RMSNORM the same less the mean: one reduction (the mean of
//     squares) and three add/mul (square, normalize, gamma). Its operands are read from and its
//     results written to the buffers they live in.
#pragma once

#include "arch/energy_events.hpp"
#include "arch/isa.hpp"

namespace npusim {

// Adds the events of executing `instr` (operands of `dtype`) to `counts`.
void count_instruction_events(const Instruction& instr, DataType dtype, const BufferPorts& ports,
                              EventCounts& counts);

}  // namespace npusim
