// The accelerator: DMA load and store queues (one of each, more if the program names more) and the
// matrix units and vector unit, all sharing
// the banked on-chip buffers; the DMA queues reach off-chip memory through TLM-2.0 sockets. The
// off-chip memory is whichever model memory.model names, behind one interface
// (models/offchip_memory_interface.hpp). Built from a hardware description and loaded with a
// Program; sc_start runs it to completion. With `compute_values` false (npusim run --values off)
// the matrix and vector units compute no values (timing never depends on them:
// docs/performance.md); the DMA still moves bytes.
#pragma once

#include <memory>
#include <systemc>
#include <vector>

#include "arch/hw_config.hpp"
#include "arch/program.hpp"
#include "models/dma_engine.hpp"
#include "models/matrix_unit.hpp"
#include "models/offchip_memory_interface.hpp"
#include "models/onchip_buffers.hpp"
#include "models/scoreboard.hpp"
#include "models/vector_unit.hpp"

namespace npusim {

class Soc : public sc_core::sc_module {
 public:
  Soc(sc_core::sc_module_name name, const HwConfig& hw, const Program& program,
      systolic::Fidelity fidelity, bool compute_values = true);

  // Functional bytes of off-chip memory.
  ZeroedBytes& memory_contents() { return memory->contents(); }
  uint64_t memory_bytes_read() const { return memory->bytes_read(); }
  uint64_t memory_bytes_written() const { return memory->bytes_written(); }
  // Brings the memory model to `end_cycle` (the run's last cycle) and registers the figures of
  // every unit under "units.<unit>" and of the off-chip memory under "memory".
  void register_stats(stats::Registry& reg, const HwConfig& hw, uint64_t end_cycle);
  // Every unit, DMA queues first, then matrix units, then the vector unit.
  std::vector<const ExecutionUnit*> units() const;
  // Records into `timeline` (which outlives the run): a track per unit, named as the unit, one per
  // off-chip memory channel ("dram ch<c>", or "memory" for the simple model) and, with burst
  // detail, one per DMA queue for its bursts ("<queue> bursts"). Before sc_start.
  void record_to(timeline::Timeline& timeline);
  // Traces every unit's and memory channel's waveform variables into `file`. Before sc_start.
  void trace_waveforms(sc_core::sc_trace_file* file);

  CoreClock clock;
  OnChipBuffers buffers;
  Scoreboard scoreboard;
  std::unique_ptr<OffChipMemoryInterface> memory;  // the model memory.model names
  DmaEngine dma_load;                              // DMA_LOAD queue 0
  DmaEngine dma_store;                             // DMA_STORE queue 0
  // Every queue of each kind, queue 0 first: the program's instructions name a queue by
  // unit_index, and each index it uses gets a queue of its own (the compiler today uses 0 only).
  std::vector<DmaEngine*> load_queues, store_queues;
  std::vector<std::unique_ptr<MatrixUnit>> matrix_units;
  VectorUnit vector_unit;
  // The values of the tensors resident in the unified buffer, captured as they are written
  // (values on only).
  TensorShadows shadows;

 private:
  std::vector<ExecutionUnit*> mutable_units();
  static std::vector<uint32_t> stream_of(const Program& program, UnitKind kind, int index);
  DmaParams dma_params(const HwConfig& hw, bool values) const;
  void add_queues(const DmaParams& params, const Program& program, UnitKind kind, DmaEngine& first,
                  std::vector<DmaEngine*>& queues);

  std::vector<std::unique_ptr<DmaEngine>> extra_queues_;
};

}  // namespace npusim
