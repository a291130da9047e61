#include "arch/energy_events.hpp"

#include "support/error.hpp"

namespace npusim {

namespace {

struct EventInfo {
  const char* name;
  const char* meaning;
};

constexpr EventInfo kEvents[kEnergyEvents] = {
    {"mac_int8", "int8 x int8 multiply-accumulates"},
    {"mac_bf16", "bf16 x bf16 multiply-accumulates"},
    {"mac_fp16", "fp16 x fp16 multiply-accumulates"},
    {"mac_fp8", "fp8 x fp8 multiply-accumulates (E4M3 or E5M2, fp32 accumulate)"},
    {"pe_register_moves", "active PE-cycles: operand and partial-sum registers shifting one PE"},
    {"weight_register_loads", "stationary values written into PE registers"},
    {"unified_buffer_reads", "unified-buffer reads, in accesses of its port width"},
    {"unified_buffer_writes", "unified-buffer writes, in accesses of its port width"},
    {"weight_buffer_reads", "weight-buffer reads, in accesses of its port width"},
    {"weight_buffer_writes", "weight-buffer writes, in accesses of its port width"},
    {"accumulator_reads", "accumulator reads, in accesses of its port width"},
    {"accumulator_writes", "accumulator writes, in accesses of its port width"},
    {"vector_add_mul", "vector-unit adds and multiplies"},
    {"vector_compare", "vector-unit compares (max, clamp)"},
    {"vector_table", "vector-unit transcendentals through a table (exp, reciprocal, activation)"},
    {"vector_reduction", "vector-unit reduction steps (sums for pooling, softmax, layer norm)"},
    {"dma_bytes", "bytes the DMA queues moved across the chip"},
    {"link_bytes", "bytes core-to-core copies moved over the interconnect"},
    {"sparse_select_bits",
     "N:M sparse tiles: activation bits a PE receives beyond a dense PE's one operand (its "
     "group of M) and selects from with its M:1 multiplexer"},
    {"metadata_bit_loads", "N:M sparse tiles: index bits written into the PEs' metadata registers"},
    {"decompressed_bits",
     "compressed weight loads: bits of the dense box the DMA's decompressor writes"},
    {"vector_fp32_add_mul",
     "vector-unit fp32 adds and multiplies (the optimizer's update; a divide or square root "
     "counts 5 and one table read)"},
};

}  // namespace

const char* event_name(EnergyEvent e) { return kEvents[size_t(e)].name; }
const char* event_meaning(EnergyEvent e) { return kEvents[size_t(e)].meaning; }

BufferPorts buffer_ports(const HwConfig& hw, DataType dtype) {
  const uint64_t eb = size_bytes(dtype);
  return {uint64_t(hw.matrix_unit.rows) * eb, uint64_t(hw.matrix_unit.cols) * eb,
          uint64_t(hw.matrix_unit.cols) * 4};
}

uint64_t port_bytes(const BufferPorts& ports, BufferId id) {
  switch (id) {
    case BufferId::kUnified:
      return ports.unified;
    case BufferId::kWeight:
      return ports.weight;
    case BufferId::kAccumulator:
      return ports.accumulators;
    case BufferId::kDram:
      break;
  }
  NPUSIM_CHECK(false, "off-chip memory has no on-chip port");
  return 1;
}

}  // namespace npusim
