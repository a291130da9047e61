// The `fast` fidelity: per tile, cycles in closed form (timing_rules.hpp) and values from a
// blocked matrix product (gemm_kernels.hpp). Same cycles and bits as the register-level model.
#pragma once

#include "models/systolic/array_model.hpp"
#include "models/systolic/gemm_kernels.hpp"
#include "models/systolic/timing_rules.hpp"

namespace npusim::systolic {

class FastArrayModel final : public ArrayModel {
 public:
  explicit FastArrayModel(const ArrayParams& params);

  TileTiming execute_int8(const TileShape& tile, const Int8TileOperands& operands,
                          uint64_t issue_cycle) override;
  TileTiming execute_half16(Half16Format format, const TileShape& tile,
                            const Half16TileOperands& operands, uint64_t issue_cycle) override;
  // The closed form alone: no operand is read.
  TileTiming time_only(const TileShape& tile, DataType type, bool accumulate,
                       uint64_t issue_cycle) override;
  const ArrayStats& stats() const override { return stats_.stats(); }

 private:
  ArrayParams params_;
  ClosedFormTiming timing_;
  StatsAccumulator stats_;
  uint64_t next_issue_cycle_ = 0;
  Int8Gemm int8_gemm_;
  Half16Gemm half16_gemm_;
};

}  // namespace npusim::systolic
