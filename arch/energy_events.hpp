// The events the energy model charges (docs/power.md): the contract between the units, which count
// them as they execute (models/event_counting.hpp), and the power model, which prices them
// (power/power_model.hpp), as the ISA is between compiler and models. Also the on-chip buffers'
// port widths, which set both how many accesses an operand takes and what one access costs.
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
  kMacFp8,
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
  kSparseSelectBit,
  kMetadataBitLoad,
  kDecompressBit,
  kVectorFp32AddMul,
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

}  // namespace npusim
