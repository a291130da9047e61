// The instruction set: the only contract between the compiler and the models.
//
// A Program is one list of instructions in emission order. Each instruction belongs to one unit
// (a DMA queue, a matrix unit, the vector unit); a unit executes its own instructions in order.
// Dependencies are explicit: an instruction may start only when every instruction listed in
// `deps` has completed. Deps always name earlier instructions, so execution cannot deadlock.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "arch/quant.hpp"

namespace npusim {

enum class UnitKind { kDmaLoad, kDmaStore, kMatrix, kVector };
const char* to_string(UnitKind kind);

enum class BufferId { kDram, kUnified, kWeight, kAccumulator };
const char* to_string(BufferId id);

// DRAM <-> on-chip buffer copy. The DRAM side is a 3-D strided box: for i2 < count[2],
// i1 < count[1]: count[0] contiguous bytes at dram_addr + i2*dram_stride[1] + i1*dram_stride[0].
// The buffer side is packed in the same order.
struct DmaOp {
  BufferId buffer = BufferId::kUnified;
  uint64_t buffer_addr = 0;
  uint64_t dram_addr = 0;
  uint32_t count[3] = {0, 1, 1};
  uint64_t dram_stride[2] = {0, 0};
  uint64_t bytes() const { return uint64_t{count[0]} * count[1] * count[2]; }
};

// The A operand of a matrix multiply, read from the unified buffer through an address generator:
// an im2col view of an NHWC slab. A(m, k): output pixel m of the view, window element k, with k
// running over (kernel row, kernel col, channel), channel fastest. Dense layers use a 1x1 window.
struct ActivationView {
  uint64_t ub_addr = 0;
  int slab_h = 1, slab_w = 1, slab_c = 1;
  int kernel_h = 1, kernel_w = 1;
  int stride_h = 1, stride_w = 1;
  int dilation_h = 1, dilation_w = 1;
  int origin_y = 0, origin_x = 0;  // slab coordinates of output pixel 0's window corner (may be < 0)
  int out_w = 1;                   // output pixels per row of the view
  int m0 = 0;                      // first output pixel (row-major over rows x out_w)
  int k0 = 0;                      // first window element
};

// acc[m][n] (+)= sum_k A(m, k) * W[k][n] on one systolic array. Shapes fit the array per dataflow
// (models/systolic/array_model.hpp).
struct MatmulOp {
  ActivationView a;
  uint64_t wb_addr = 0;  // W[0][0] in the weight buffer
  int w_ld = 0;          // bytes between rows of W
  uint64_t acc_addr = 0;  // acc[0][0], byte address in the accumulators
  int acc_ld = 0;         // int32 elements between rows of acc
  int m = 0, k = 0, n = 0;
  bool accumulate = false;
};

// Vector unit: acc (int32, M x N) + bias[n] -> requantize -> int8 in the unified buffer.
struct RequantOp {
  uint64_t acc_addr = 0;
  int acc_ld = 0;
  uint64_t bias_ub_addr = 0;  // N int32 values in the unified buffer
  uint64_t out_ub_addr = 0;
  int out_ld = 0;
  int m = 0, n = 0;
  QuantMultiplier scale;
  bool relu = false;
};

// Vector unit: max pooling of an NHWC slab in the unified buffer, output rows packed.
struct PoolOp {
  uint64_t in_ub_addr = 0;
  int slab_h = 0, slab_w = 0, c = 0;
  int window_h = 1, window_w = 1, stride_h = 1, stride_w = 1;
  int origin_y = 0, origin_x = 0;  // slab coordinates of output (0, 0)'s window corner
  int out_h = 0, out_w = 0;
  uint64_t out_ub_addr = 0;
};

// Vector unit: softmax over `rows` rows of `length` int8 values (packed).
struct SoftmaxOp {
  uint64_t in_ub_addr = 0;
  uint64_t out_ub_addr = 0;
  int rows = 0, length = 0;
  float input_scale = 1.0f;
};

// Vector unit: elementwise max(x, 0) over int8 values.
struct ReluOp {
  uint64_t in_ub_addr = 0;
  uint64_t out_ub_addr = 0;
  uint64_t elements = 0;
};

using Operation = std::variant<DmaOp, MatmulOp, RequantOp, PoolOp, SoftmaxOp, ReluOp>;

struct Instruction {
  uint32_t id = 0;
  UnitKind unit = UnitKind::kDmaLoad;
  int unit_index = 0;  // which matrix unit, for chips with several
  uint32_t layer = 0;
  std::vector<uint32_t> deps;
  Operation op;
};

const char* opcode_name(const Instruction& instr);
std::string to_assembly(const Instruction& instr);

}  // namespace npusim
