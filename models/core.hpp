// One core of the chip: its banked on-chip buffers and the units that run the core's instructions
// (Instruction::core): DMA load and store queues (one of each, more if the program names more),
// the matrix units, the vector unit and, on a chip of several cores, a link queue that sends its
// core-to-core copies over the interconnect (the Soc binds it). Every core of a chip is a copy of
// the same description (HwConfig: the per-unit figures are per core); the cores share the
// scoreboard (one over the program's global instruction ids) and the off-chip memory, whose socket
// every DMA queue of every core binds to, so its channels and their contention are shared. A core's
// units touch only its own buffers, except a COPY writing another core's unified buffer: another
// core's bytes are reached through off-chip memory or a copy, ordered by dependency tokens like any
// other access.
#pragma once

#include <map>
#include <memory>
#include <systemc>
#include <tuple>
#include <vector>

#include "arch/hw_config.hpp"
#include "arch/program.hpp"
#include "models/dma_engine.hpp"
#include "models/link_queue.hpp"
#include "models/matrix_unit.hpp"
#include "models/offchip_memory_interface.hpp"
#include "models/onchip_buffers.hpp"
#include "models/scoreboard.hpp"
#include "models/tensor_shadows.hpp"
#include "models/vector_unit.hpp"

namespace npusim {

class Core : public sc_core::sc_module {
 public:
  // The instructions of `program` each unit runs, found in one pass over the program (a chip of
  // C cores and U units per core scanned it C x U times, which dominated the setup of large
  // programs on many-core chips).
  class Streams {
   public:
    explicit Streams(const Program& program);
    // The ids unit (kind, index) of `core` runs, in program order (empty when none).
    std::vector<uint32_t> of(int core, UnitKind kind, int index) const;
    // One more than the highest index of a `kind` unit that `core` uses; at least 1.
    int units(int core, UnitKind kind) const;

   private:
    std::map<std::tuple<int, UnitKind, int>, std::vector<uint32_t>> ids_;
  };

  Core(sc_core::sc_module_name name, int index, const HwConfig& hw, const Program& program,
       const Streams& streams, Scoreboard& scoreboard, const CoreClock& clock,
       OffChipMemoryInterface& memory, systolic::Fidelity fidelity, bool compute_values);

  // Every unit, DMA queues first (loads, then stores), then matrix units, then the vector unit,
  // then the link queue (when there is one).
  std::vector<const ExecutionUnit*> units() const;
  std::vector<ExecutionUnit*> mutable_units();

  const int index;
  OnChipBuffers buffers;
  // The values of this core's samples of the tensors resident in its unified buffer, captured by
  // its vector unit as they are written (values on only).
  TensorShadows shadows;
  // Every queue of each kind, queue 0 first: the program's instructions name a queue by
  // unit_index, and each index it uses on this core gets a queue of its own.
  std::vector<std::unique_ptr<DmaEngine>> load_queues, store_queues;
  std::vector<std::unique_ptr<MatrixUnit>> matrix_units;
  std::unique_ptr<VectorUnit> vector_unit;
  std::unique_ptr<LinkQueue> link_queue;  // chips of several cores only

 private:
  void add_queues(const Program& program, const Streams& streams, UnitKind kind, DmaParams params,
                  Scoreboard& scoreboard, const CoreClock& clock,
                  std::vector<std::unique_ptr<DmaEngine>>& queues);
};

}  // namespace npusim
