// Vector unit: requantization epilogues, pooling, softmax and activations on the unified buffer and
// accumulators. Its timing rule is in models/vector_core.hpp; one instruction at a time. With
// `compute_values` false it claims the same buffer ranges but computes no values.
#pragma once

#include "arch/hw_config.hpp"
#include "models/execution_unit.hpp"
#include "models/onchip_buffers.hpp"
#include "models/tensor_shadows.hpp"

namespace npusim {

class VectorUnit : public ExecutionUnit {
 public:
  VectorUnit(sc_core::sc_module_name name, const Program& program, std::vector<uint32_t> stream,
             Scoreboard& scoreboard, const CoreClock& clock, OnChipBuffers& buffers,
             const VectorUnitConfig& config, bool compute_values = true);

  uint64_t elements() const { return elements_; }
  // Copies what each instruction writes into resident tensors (with compute_values only).
  void capture_into(TensorShadows* shadows) { shadows_ = shadows; }

 protected:
  void execute(const Instruction& instr) override;

 private:
  OnChipBuffers& buffers_;
  VectorUnitConfig config_;
  bool compute_values_;
  uint64_t elements_ = 0;
  TensorShadows* shadows_ = nullptr;
};

}  // namespace npusim
