// The `fast` fidelity: per tile, cycles in closed form and values from a blocked matrix product.
// Same cycles and bits as the register-level models. ClosedFormShell holds what the systolic
// array's and the cube's fast models share (the issue-order check, the timing, the statistics and
// the int8 product, exact in any summation order); each names its timing rule and the half16
// product that adds in its hardware's order.
#pragma once

#include <vector>

#include "models/systolic/array_model.hpp"
#include "models/systolic/cube_model.hpp"
#include "models/systolic/gemm_kernels.hpp"
#include "models/systolic/timing_rules.hpp"

namespace npusim::systolic {

template <class Timing>
class ClosedFormShell : public ArrayModel {
 public:
  TileTiming execute_int8(const TileShape& tile, const Int8TileOperands& operands,
                          uint64_t issue_cycle) final;
  TileTiming execute_half16(Half16Format format, const TileShape& tile,
                            const Half16TileOperands& operands, uint64_t issue_cycle) final;
  // The closed form alone (npusim run --values off): no operand is read.
  TileTiming time_only(const TileShape& tile, DataType type, bool accumulate,
                       uint64_t issue_cycle) final;
  const ArrayStats& stats() const final { return stats_.stats(); }

 protected:
  // `unit` names the model in the messages of its always-on checks.
  ClosedFormShell(const ArrayParams& params, const char* unit);
  const ArrayParams& params() const { return params_; }
  // acc (+)= a x w in the hardware's order of fp32 additions.
  virtual void half16_matmul(Half16Format format, const TileShape& tile,
                             const Half16TileOperands& operands) = 0;

 private:
  ArrayParams params_;
  const char* unit_;
  Timing timing_;
  StatsAccumulator stats_;
  uint64_t next_issue_cycle_ = 0;
  Int8Gemm int8_gemm_;
};

// The systolic array: products chained down each column (gemm_kernels.hpp).
class FastArrayModel final : public ClosedFormShell<ClosedFormTiming> {
 public:
  explicit FastArrayModel(const ArrayParams& params) : ClosedFormShell(params, "systolic: tile") {}

 private:
  void half16_matmul(Half16Format format, const TileShape& tile,
                     const Half16TileOperands& operands) override {
    half16_gemm_.run(format, tile, operands);
  }
  Half16Gemm half16_gemm_;
};

// The cube unit: each output's products summed by the cube's adder tree (cube_model.hpp), so its
// bits equal the register-level model's (cube_pe_model.hpp).
class CubeFastModel final : public ClosedFormShell<CubeTiming> {
 public:
  explicit CubeFastModel(const ArrayParams& params)
      : ClosedFormShell(params, "cube: tile"), geometry_(cube_geometry(params)) {}

 private:
  void half16_matmul(Half16Format format, const TileShape& tile,
                     const Half16TileOperands& operands) override;
  CubeGeometry geometry_;
  std::vector<float> w_float_;
  std::vector<float> lanes_;  // lanes_[p * N + n]: the adder tree's values for one row of a
};

}  // namespace npusim::systolic
