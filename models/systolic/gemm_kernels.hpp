// Values of one tile for the `fast` fidelity: blocked matrix products that give bit-for-bit the
// results of the register-level model (array_model.hpp states the arithmetic).
#pragma once

#include <cstdint>
#include <vector>

#include "models/systolic/array_model.hpp"

namespace npusim::systolic {

// int8 x int8 -> int32. Integer sums are exact in any order, so the kernel packs both operands
// to int16 (w transposed) and forms dot products that the compiler turns into multiply-add
// vector instructions. Keeps its packing buffers between calls.
class Int8Gemm {
 public:
  void run(const TileShape& tile, const Int8TileOperands& operands);

 private:
  std::vector<int16_t> a_packed_;
  std::vector<int16_t> w_packed_;
  std::vector<int32_t> sums_;
};

// bf16/fp16 x bf16/fp16 -> fp32, products added in k order per output (vectorised across n only,
// which does not reorder any output's additions).
class Half16Gemm {
 public:
  void run(Half16Format format, const TileShape& tile, const Half16TileOperands& operands);

 private:
  std::vector<float> a_row_;
  std::vector<float> w_float_;
  std::vector<float> sums_;
};

}  // namespace npusim::systolic
