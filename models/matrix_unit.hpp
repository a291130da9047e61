// Matrix unit: an activation address generator feeding one systolic array (models/systolic/).
// Timing rule: a MATMUL issues when its dependencies completed and the array accepts a tile; the
// array model returns when its results are in the accumulators and when the next tile may issue.
// Tiles retire in order: a tile completes when its results are in and its predecessor completed.
// Values are the array model's real int8 x int8 -> int32 (or bf16 x bf16 -> fp32) results; with
// `compute_values` false (npusim run --values off) the unit computes none and the array model
// gives the same timing (ArrayModel::time_only).
#pragma once

#include <memory>
#include <vector>

#include "models/execution_unit.hpp"
#include "models/onchip_buffers.hpp"
#include "models/systolic/array_model.hpp"

namespace npusim {

class MatrixUnit : public ExecutionUnit {
 public:
  MatrixUnit(sc_core::sc_module_name name, const Program& program, std::vector<uint32_t> stream,
             Scoreboard& scoreboard, const CoreClock& clock, OnChipBuffers& buffers,
             const systolic::ArrayParams& array, systolic::Fidelity fidelity,
             bool compute_values = true);

  uint64_t macs() const { return macs_; }
  // The array's own counts (tiles, MACs by data type, accumulator traffic).
  const systolic::ArrayStats& array_stats() const { return array_->stats(); }
  void register_stats(stats::Registry& reg, const std::string& prefix) const override;

 protected:
  void execute(const Instruction& instr) override;

 private:
  void round_to_fp8_inputs(const MatmulOp& op);
  OnChipBuffers& buffers_;
  systolic::ArrayParams params_;
  std::unique_ptr<systolic::ArrayModel> array_;
  std::vector<uint8_t> a_;  // gathered activations of the current tile (int8 or bf16)
  bool compute_values_;
  uint64_t last_done_ = 0;
  uint64_t macs_ = 0;
  uint64_t fp8_macs_ = 0;
};

}  // namespace npusim
