// The `fast` fidelity of the cube unit: closed-form cycles (CubeTiming) and values from a blocked
// product that sums each output's products with the cube's adder tree (cube_model.hpp), so its
// bits equal the register-level model's (cube_pe_model.hpp).
#pragma once

#include <vector>

#include "models/systolic/array_model.hpp"
#include "models/systolic/cube_model.hpp"
#include "models/systolic/gemm_kernels.hpp"
#include "models/systolic/timing_rules.hpp"

namespace npusim::systolic {

class CubeFastModel final : public ArrayModel {
 public:
  explicit CubeFastModel(const ArrayParams& params);

  TileTiming execute_int8(const TileShape& tile, const Int8TileOperands& operands,
                          uint64_t issue_cycle) override;
  TileTiming execute_half16(Half16Format format, const TileShape& tile,
                            const Half16TileOperands& operands, uint64_t issue_cycle) override;
  // The closed form alone (npusim run --values off): no operand is read.
  TileTiming time_only(const TileShape& tile, DataType type, bool accumulate,
                       uint64_t issue_cycle) override;
  const ArrayStats& stats() const override { return stats_.stats(); }

 private:
  void half16_tree_gemm(Half16Format format, const TileShape& tile,
                        const Half16TileOperands& operands);

  ArrayParams params_;
  CubeGeometry geometry_;
  CubeTiming timing_;
  StatsAccumulator stats_;
  uint64_t next_issue_cycle_ = 0;
  Int8Gemm int8_gemm_;  // integer sums are exact in any order: the systolic kernel serves
  std::vector<float> w_float_;
  std::vector<float> lanes_;  // lanes_[p * N + n]: the adder tree's values for one row of a
};

}  // namespace npusim::systolic
