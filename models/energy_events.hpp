// The events the energy model charges (docs/power.md), counted by each unit as it executes an
// instruction (ExecutionUnit::run): plain C++, a pure function of the instruction and the buffers'
// port widths.
//
// Counting rules (accesses of a buffer are the bytes an instruction's operand moves, in words of
// the port's width, rounded up: a narrow row is charged its share of a word, not a whole word):
//   MATMUL m x k x n: m*k*n MACs of the program's type, as many active PE-cycles (operand and
//     partial-sum registers move once per MAC), k*n stationary registers written; unified buffer
//     reads m rows of k elements, weight buffer reads k rows of n, accumulator writes m rows of n
//     (and as many reads when it accumulates).
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
//     (reciprocal square root) per row. Its operands are read from and its results written to the
//     buffers they live in.
#pragma once

#include <array>
#include <cstdint>

#include "arch/hw_config.hpp"
#include "arch/isa.hpp"

namespace npusim {

enum class EnergyEvent {
  kMacInt8,
  kMacBf16,
  kMacFp16,
  kPeRegisterMove,
  kWeightRegisterLoad,
  kUnifiedRead,
  kUnifiedWrite,
  kWeightRead,
  kWeightWrite,
  kAccumulatorRead,
  kAccumulatorWrite,
  kVectorAddMul,
  kVectorCompare,
  kVectorTable,
  kVectorReduction,
  kDmaByte,
  kLinkByte,
  kCount
};
constexpr size_t kEnergyEvents = size_t(EnergyEvent::kCount);
// "mac_int8", ... "dma_bytes": the stats.json name of the count.
const char* event_name(EnergyEvent e);
// One line: what one event is.
const char* event_meaning(EnergyEvent e);

struct EventCounts {
  std::array<uint64_t, kEnergyEvents> n{};
  uint64_t& operator[](EnergyEvent e) { return n[size_t(e)]; }
  uint64_t operator[](EnergyEvent e) const { return n[size_t(e)]; }
  EventCounts& operator+=(const EventCounts& o) {
    for (size_t i = 0; i < kEnergyEvents; ++i) n[i] += o.n[i];
    return *this;
  }
};

// Port widths of the on-chip buffers, bytes: the unified buffer feeds one activation row of the
// array per cycle (rows elements of `dtype`), the weight buffer one weight row (cols elements), the
// accumulators one output row (cols 32-bit words).
struct BufferPorts {
  uint64_t unified = 1, weight = 1, accumulators = 4;
};
BufferPorts buffer_ports(const HwConfig& hw, DataType dtype);
uint64_t port_bytes(const BufferPorts& ports, BufferId id);

// Adds the events of executing `instr` (operands of `dtype`) to `counts`.
void count_instruction_events(const Instruction& instr, DataType dtype, const BufferPorts& ports,
                              EventCounts& counts);

}  // namespace npusim
