// Runs one SCALE-Sim layer: walks the demand rows fold by fold (closed-form requests per row),
// feeds the SRAM/DRAM models of scalesim_memory.hpp, and collects the numbers of SCALE-Sim's
// three reports. Timing rule: demand row i issues at cycle i + (stalls so far); a row's stall is
// max(IFMAP wait, FILTER wait, OFMAP wait); Total Cycles is the cycle the last OFMAP row
// completes, i.e. folds * cycles_per_fold - 1 + stalls.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "compat/scalesim/scalesim_config.hpp"
#include "compat/scalesim/scalesim_topology.hpp"

namespace npusim::scalesim {

struct OperandAccess {
  int64_t sram_start_cycle = 0;  // first / last cycle with a serviced request
  int64_t sram_stop_cycle = 0;
  int64_t sram_accesses = 0;  // SCALE-Sim's compute-side count (see docs/scalesim.md)
  int64_t dram_start_cycle = 0;
  int64_t dram_stop_cycle = 0;
  int64_t dram_accesses = 0;
};

struct LayerResult {
  std::string name;
  int64_t total_cycles = 0;
  int64_t stall_cycles = 0;
  int64_t compute_cycles = 0;  // total - stall = folds * cycles_per_fold - 1
  int64_t macs = 0;
  double overall_util_pct = 0;
  double mapping_efficiency_pct = 0;
  double compute_util_pct = 0;
  OperandAccess ifmap, filter, ofmap;

  double avg_sram_bw(const OperandAccess& a) const {
    return static_cast<double>(a.sram_accesses) / static_cast<double>(total_cycles);
  }
  double avg_dram_bw(const OperandAccess& a) const {
    return static_cast<double>(a.dram_accesses) /
           static_cast<double>(a.dram_stop_cycle - a.dram_start_cycle + 1);
  }
};

// Timing of one demand row, for tests and traces: the cycle it issued and the cycles its IFMAP,
// FILTER and OFMAP requests completed (SCALE-Sim's SRAM trace first columns).
struct RowTiming {
  int64_t row = 0;
  int64_t cycle = 0;
  int64_t ifmap_out = 0;
  int64_t filter_out = 0;
  int64_t ofmap_out = 0;
};
using RowObserver = std::function<void(const RowTiming&)>;

LayerResult simulate_layer(const Config& config, const Layer& layer,
                           const RowObserver* observer = nullptr);

}  // namespace npusim::scalesim
