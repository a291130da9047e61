// Emission of instructions: dependency tokens from the hazard tracker, DMA boxes.
#include <fmt/format.h>

#include "compiler/lowering/lowering_context.hpp"
#include "support/error.hpp"

namespace npusim::lowering {

uint32_t Lowering::emit(UnitKind unit, int index, Operation op,
                        std::vector<BufferAccess> accesses) {
  Instruction instr;
  instr.id = static_cast<uint32_t>(program_.instructions.size());
  instr.unit = unit;
  instr.unit_index = index;
  instr.layer = static_cast<uint32_t>(program_.layers.size() - 1);
  instr.core = core_;
  instr.deps =
      hazards_.add(instr.id, unit_key(unit, index) + core_ * kUnitKeysPerCore, accesses, core_);
  instr.op = std::move(op);
  program_.instructions.push_back(std::move(instr));
  return program_.instructions.back().id;
}

DmaOp Lowering::dma_op(BufferId buffer, uint64_t buffer_addr, uint64_t dram_addr, uint64_t count0,
                       uint64_t count1, uint64_t stride0, bool transpose) const {
  NPUSIM_CHECK(count0 > 0 && count0 <= UINT32_MAX && count1 > 0 && count1 <= UINT32_MAX,
               "DMA box {}x{} out of range", count1, count0);
  DmaOp d;
  d.buffer = buffer;
  d.buffer_addr = buffer_addr;
  d.dram_addr = dram_addr;
  d.count[0] = static_cast<uint32_t>(count0);
  d.count[1] = static_cast<uint32_t>(count1);
  d.dram_stride[0] = stride0;
  d.transpose = transpose;
  d.transpose_element_bytes = es_;
  return d;
}

void Lowering::dma(UnitKind unit, BufferId buffer, uint64_t buffer_addr, uint64_t dram_addr,
                   uint64_t count0, uint64_t count1, uint64_t stride0, bool transpose,
                   bool unpack_int4) {
  DmaOp d = dma_op(buffer, buffer_addr, dram_addr, count0, count1, stride0, transpose);
  const bool load = unit == UnitKind::kDmaLoad;
  NPUSIM_CHECK(!unpack_int4 || (load && !transpose), "an int4 unpacking DMA is a plain load");
  d.unpack_int4 = unpack_int4;
  const uint64_t dram_end = dram_addr + (count1 - 1) * stride0 + count0;
  emit(unit, 0, d,
       {{BufferId::kDram, dram_addr, dram_end, !load},
        {buffer, buffer_addr, buffer_addr + d.buffer_bytes(), load}});
  (load ? current_->dram_read_bytes : current_->dram_write_bytes) += d.bytes();
}

void Lowering::dma_linear(UnitKind unit, uint64_t ub_addr, uint64_t dram_addr, uint64_t bytes) {
  constexpr uint64_t kRow = 1 << 20;  // rows of 1 MiB: the bus sees the same bytes either way
  if (bytes <= kRow) {
    dma(unit, BufferId::kUnified, ub_addr, dram_addr, bytes, 1, 0);
    return;
  }
  const uint64_t rows = bytes / kRow;
  dma(unit, BufferId::kUnified, ub_addr, dram_addr, kRow, rows, kRow);
  if (bytes % kRow != 0) {
    dma(unit, BufferId::kUnified, ub_addr + rows * kRow, dram_addr + rows * kRow, bytes % kRow, 1,
        0);
  }
}

}  // namespace npusim::lowering
