// The accelerator: `cores` copies of a core (models/core.hpp: DMA load and store queues, matrix
// units, vector unit, banked on-chip buffers), one scoreboard over the program's instruction ids,
// and the off-chip memory they all share: every core's DMA queues reach it through TLM-2.0
// sockets bound to its one target socket. On a chip of several cores, each core's link queue binds
// to the interconnect (models/interconnect.hpp), which carries core-to-core copies. The off-chip
// memory is whichever model memory.model names, behind one interface
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
#include "models/core.hpp"
#include "models/host_unit.hpp"
#include "models/interconnect.hpp"
#include "models/offchip_memory_interface.hpp"
#include "models/scoreboard.hpp"

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
  // every unit under "units.<unit>" (core 0) and "units.core<c>.<unit>" (core c >= 1), and of the
  // off-chip memory under "memory".
  void register_stats(stats::Registry& reg, const HwConfig& hw, uint64_t end_cycle);
  // Every unit, core by core; within a core DMA queues first, then matrix units, then the vector
  // unit.
  std::vector<const ExecutionUnit*> units() const;
  // Every unit's state() on its own line, "  <unit>: <state>", core c >= 1's units named
  // "core<c>.<unit>" (as in stats.json), for a run that could not finish.
  std::string describe_units() const;
  // Records into `timeline` (which outlives the run): a track per unit, named as the unit
  // ("core<c> <unit>" on a chip of several cores, each core its own process), one per off-chip
  // memory channel ("dram ch<c>", or "memory" for the simple model) and, with burst detail, one
  // per DMA queue for its bursts ("<queue> bursts"). Before sc_start.
  void record_to(timeline::Timeline& timeline);
  // Traces every unit's and memory channel's waveform variables into `file`. Before sc_start.
  void trace_waveforms(sc_core::sc_trace_file* file);

  CoreClock clock;
  Scoreboard scoreboard;
  std::unique_ptr<OffChipMemoryInterface> memory;  // the model memory.model names
  std::vector<std::unique_ptr<Core>> cores;
  // The units of every core, core 0's first: the chip-wide sums iterate over these.
  std::vector<DmaEngine*> load_queues, store_queues;
  std::vector<MatrixUnit*> matrix_units;
  std::vector<VectorUnit*> vector_units;
  // The host CPU and its link, one unit per direction (models/host_unit.hpp): built when the
  // program has host instructions; `host.kernel` computes a host layer's values (set it before
  // sc_start, or leave it empty for timing only).
  HostState host;
  std::unique_ptr<HostUnit> host_cpu, link_to_host, link_to_device;
  std::vector<const HostUnit*> host_units() const;
  // Core 0's buffers and first DMA queues (a one-core chip's).
  OnChipBuffers& buffers;
  DmaEngine& dma_load;
  DmaEngine& dma_store;
  // Between the cores' link queues: chips of several cores only.
  std::unique_ptr<Interconnect> interconnect;

 private:
  std::vector<ExecutionUnit*> mutable_units();
  static std::vector<std::unique_ptr<Core>> make_cores(
      const HwConfig& hw, const Program& program, Scoreboard& scoreboard, const CoreClock& clock,
      OffChipMemoryInterface& memory, systolic::Fidelity fidelity, bool compute_values);
};

}  // namespace npusim
