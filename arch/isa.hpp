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

#include "arch/activation.hpp"
#include "arch/compressed_weights.hpp"
#include "arch/fp8.hpp"
#include "arch/quant.hpp"

namespace npusim {

enum class UnitKind { kDmaLoad, kDmaStore, kMatrix, kVector, kHost, kHostLink, kLink };
// "dma_load", "dma_store" (the DMA queues' one name: the SoC's units, stats.json, traces,
// assembly), "mxu", "vpu", "host_cpu", "host_link" (docs/heterogeneous.md), "link" (a core's queue
// onto the interconnect, docs/multicore.md).
const char* to_string(UnitKind kind);

enum class BufferId { kDram, kUnified, kWeight, kAccumulator };
const char* to_string(BufferId id);

// DRAM <-> on-chip buffer copy. The DRAM side is a 3-D strided box: for i2 < count[2],
// i1 < count[1]: count[0] contiguous bytes at dram_addr + i2*dram_stride[1] + i1*dram_stride[0].
// The buffer side is packed in the same order, or, for a 2-D load with `transpose`, packed
// transposed (count[0] rows of count[1] bytes), as a matrix operand needs it.
struct DmaOp {
  BufferId buffer = BufferId::kUnified;
  uint64_t buffer_addr = 0;
  uint64_t dram_addr = 0;
  uint32_t count[3] = {0, 1, 1};
  uint64_t dram_stride[2] = {0, 0};
  bool transpose = false;
  int transpose_element_bytes = 1;  // a transposing load moves elements of this size
  // Indexed load (an embedding lookup, docs/isa.md "Indexed DMA"): row i1 < count[1] of count[0]
  // bytes comes from dram_addr + id[i1] * dram_stride[0], where id[i1] is the int32 at
  // index_addr + 4 * i1 off chip, which the queue reads first; ids lie in [0, index_rows).
  // count[2] is 1 and the rows land packed.
  bool indexed = false;
  uint64_t index_addr = 0;
  uint32_t index_rows = 0;
  // A load of int4 weights (--weight-dtype int4): the box holds two signed 4-bit values per byte,
  // the lower nibble first, and each lands in the buffer as one int8, so the buffer side is twice
  // the box. Not with transpose or indexed.
  bool unpack_int4 = false;
  // A load of a compressed weight box (--compress-weights, arch/compressed_weights.hpp): the box
  // off chip holds `dense`'s rows in `format` (padded to whole box rows), which the queue's
  // decompressor expands: the buffer side is the dense box, packed. Only plain 2-D loads.
  WeightFormat format = WeightFormat::kDense;
  WeightBoxShape dense{};
  uint64_t bytes() const { return uint64_t{count[0]} * count[1] * count[2]; }  // off chip
  uint64_t buffer_bytes() const {
    return format != WeightFormat::kDense ? dense.dense_bytes()
           : unpack_int4                  ? 2 * bytes()
                                          : bytes();
  }
  uint64_t index_bytes() const { return indexed ? uint64_t{count[1]} * 4 : 0; }
};

// The A operand of a matrix multiply, read from the unified buffer through an address generator:
// an im2col view of a channels-last slab of slab_d x slab_h x slab_w x slab_c bytes. A(m, k):
// output pixel m of the view (row-major over rows of out_w), window element k, with k running over
// (kernel depth, row, col, channel), channel fastest; the window reads channels
// [c0, c0 + window_c) of the slab (a group of a grouped convolution). Dense layers use a 1x1
// window.
struct ActivationView {
  uint64_t ub_addr = 0;
  int slab_d = 1, slab_h = 1, slab_w = 1, slab_c = 1;
  int kernel_d = 1, kernel_h = 1, kernel_w = 1;
  int stride_h = 1, stride_w = 1;
  int dilation_d = 1, dilation_h = 1, dilation_w = 1;
  int origin_z = 0, origin_y = 0, origin_x = 0;  // slab coordinates of pixel 0's window corner
  int out_w = 1;                                 // output pixels per row of the view
  int m0 = 0;                                    // first output pixel
  int k0 = 0;                                    // first window element
  int c0 = 0;                                    // first channel of the window
  int window_c = 1;                              // channels of the window
};

// acc[m][n] (+)= sum_k A(m, k) * W[k][n] on one systolic array. Shapes fit the array per dataflow
// (models/systolic/array_model.hpp).
struct MatmulOp {
  ActivationView a;
  uint64_t wb_addr = 0;   // W[0][0] in the weight buffer
  int w_ld = 0;           // bytes between rows of W
  uint64_t acc_addr = 0;  // acc[0][0], byte address in the accumulators
  int acc_ld = 0;         // int32 elements between rows of acc
  int m = 0, k = 0, n = 0;
  bool accumulate = false;
  // An N:M sparse tile (the array's matrix_unit.sparsity, models/systolic/sparsity.hpp): W has at
  // most sparse_n non-zeros in every sparse_m consecutive rows from row 0 of each column, and the
  // array keeps only the non-zeros. 0: dense.
  int sparse_n = 0, sparse_m = 0;
  // An fp8 tile (--dtype fp8-e4m3 / fp8-e5m2, docs/quantization.md): the array rounds each
  // activation to `fp8` with the layer's power-of-two scale, fp8(a x 2^a_scale_exp) x
  // 2^-a_scale_exp, and multiplies it by weights that hold fp8 values (the DMA widened them);
  // products accumulate in fp32. kNone: the program's data type.
  Fp8Format fp8 = Fp8Format::kNone;
  int a_scale_exp = 0;
};

// Vector unit epilogue. int8: acc (int32, M x N) + bias[n] -> requantize with the per-channel
// multipliers table[channel0 + n] -> saturate to [lo, hi] -> optional 256-entry table -> int8 in
// the unified buffer. Tables are the vector unit's parameter registers, loaded with the layer.
// bf16: acc (fp32) + bias[n] (fp32) -> activation -> bf16. Leading dimensions are in elements.
struct RequantOp {
  uint64_t acc_addr = 0;
  int acc_ld = 0;
  bool has_bias = true;
  uint64_t bias_ub_addr = 0;  // N int32 values in the unified buffer
  uint64_t out_ub_addr = 0;
  int out_ld = 0;
  int m = 0, n = 0;
  int table = 0;  // Program::requant_tables
  int channel0 = 0;
  int8_t lo = -128, hi = 127;
  int lut = -1;                               // Program::luts, or none
  Activation activation = Activation::kNone;  // bf16
  float clip_min = 0.0f, clip_max = 6.0f;
};

// Vector unit: max or average pooling of a channels-last slab in the unified buffer; the output
// block (out_h x out_w pixels of one output depth plane) is packed.
struct PoolOp {
  bool average = false;
  bool count_include_pad = false;
  uint64_t in_ub_addr = 0;
  int slab_d = 1, slab_h = 0, slab_w = 0, c = 0;
  int window_d = 1, window_h = 1, window_w = 1, stride_h = 1, stride_w = 1;
  int origin_z = 0, origin_y = 0, origin_x = 0;  // slab coordinates of output (0, 0)'s window
  int out_h = 0, out_w = 0;
  uint64_t out_ub_addr = 0;
  // Elements from one output pixel to the next: 0 for c (packed); more when the pooled channels
  // are a block of a wider tensor's (a fused pool writing a resident tensor in place).
  int out_ld = 0;
  int out_stride() const { return out_ld > 0 ? out_ld : c; }
  // Elements from the first output element to one past the last.
  uint64_t out_span() const { return (uint64_t(out_h) * out_w - 1) * out_stride() + c; }
};

// Vector unit: softmax over `rows` rows of `length` int8 values (packed).
struct SoftmaxOp {
  uint64_t in_ub_addr = 0;
  uint64_t out_ub_addr = 0;
  int rows = 0, length = 0;
  float input_scale = 1.0f;
};

// Vector unit: layer normalization of `rows` rows of `length` int8 values; gamma then beta
// (float32, length each) in the unified buffer. `rms`: RMSNorm, no mean subtracted
// (x / sqrt(mean(x^2) + epsilon) * gamma + beta, beta zero).
struct LayerNormOp {
  uint64_t in_ub_addr = 0;
  uint64_t out_ub_addr = 0;
  uint64_t params_ub_addr = 0;
  int rows = 0, length = 0;
  float input_scale = 1.0f, inv_output_scale = 1.0f, epsilon = 1e-5f;
  bool rms = false;
};

// Vector unit: an activation on every element (relu, sigmoid, gelu, ...): an int8 -> int8 table,
// or the function itself in fp32 on bf16 data.
struct LutOp {
  uint64_t in_ub_addr = 0;
  uint64_t out_ub_addr = 0;
  uint64_t elements = 0;
  int lut = 0;
  Activation activation = Activation::kNone;  // bf16
  float clip_min = 0.0f, clip_max = 6.0f;
};

// Vector unit: elementwise over rows x cols: add (a*ra + b*rb), mul (a*b*ra) or rescale (a*ra),
// saturate to [lo, hi], optional table. Each operand has its own row pitch.
enum class EltwiseKind { kAdd, kMul, kRescale };
struct EltwiseOp {
  EltwiseKind kind = EltwiseKind::kAdd;
  uint64_t a_ub_addr = 0, b_ub_addr = 0, out_ub_addr = 0;
  int rows = 0, cols = 0;
  int a_ld = 0, b_ld = 0, out_ld = 0;
  float ra = 1.0f, rb = 1.0f;
  int8_t lo = -128, hi = 127;
  int lut = -1;
  Activation activation = Activation::kNone;  // bf16
  float clip_min = 0.0f, clip_max = 6.0f;
};

// A layer run by the host CPU of a heterogeneous system (docs/heterogeneous.md), in three
// instructions: its inputs cross the link to the host (unit kHostLink, queue 0), the host computes
// (unit kHost), its output crosses back into off-chip memory (kHostLink, queue 1: the link is full
// duplex). The host reads and writes only off-chip memory, never an on-chip buffer.
enum class HostPhase { kToHost, kCompute, kToDevice };
struct DramRange {
  uint64_t begin = 0, end = 0;  // [begin, end) of off-chip memory
};
struct HostOp {
  HostPhase phase = HostPhase::kCompute;
  uint64_t bytes = 0;  // link: bytes crossing; compute: bytes the host reads and writes
  uint64_t flops = 0;  // compute: arithmetic operations
  // kToHost: the off-chip ranges read (the layer's inputs); kToDevice: written (its output).
  std::vector<DramRange> dram;
};

// Core-to-core copy over the on-chip interconnect (docs/multicore.md): `bytes` contiguous bytes
// of the executing core's unified buffer at src_addr to dst_core's unified buffer at dst_addr. It
// runs on the sending core's link queue (UnitKind::kLink), beside its DMA and compute units. No
// implicit synchronization: the receiving core's consumers list the copy in their deps, and the
// copy lists the instructions that wrote its source and last read its destination.
struct CopyOp {
  int dst_core = 0;
  uint64_t src_addr = 0;
  uint64_t dst_addr = 0;
  uint64_t bytes = 0;
};

// Vector unit: fp32 element-wise work (the optimizer's update on the chip, docs/training.md
// "The optimizer on the chip") over rows x cols elements, each operand with its own row pitch in
// elements and its own format: fp32 (4 bytes) or bf16 (2 bytes, widened exactly). Every operation
// below rounds its result to fp32 (IEEE, nearest even), as the host's fp32 arithmetic does, and the
// result is then rounded to bf16 where out_bf16. `b_scalar`: b is one fp32 value used for every
// element (a bias correction the host writes each step).
//   AXPBY a*ra + b*rb      MUL (a*ra)*b      DIV (a*ra)/b      SQRT sqrt(a/b) + ra
//   COPY  a, converted (bf16 -> fp32 exactly; fp32 -> bf16 rounded to nearest even)
enum class Fp32Kind { kAxpby, kMul, kDiv, kSqrt, kCopy };
struct Fp32Op {
  Fp32Kind kind = Fp32Kind::kAxpby;
  uint64_t a_ub_addr = 0, b_ub_addr = 0, out_ub_addr = 0;
  int rows = 0, cols = 0;
  int a_ld = 0, b_ld = 0, out_ld = 0;
  bool a_bf16 = false, b_bf16 = false, out_bf16 = false;
  bool b_scalar = false;
  float ra = 1.0f, rb = 1.0f;
  bool reads_b() const { return kind != Fp32Kind::kCopy; }
  int a_bytes() const { return a_bf16 ? 2 : 4; }
  int b_bytes() const { return b_bf16 ? 2 : 4; }
  int out_bytes() const { return out_bf16 ? 2 : 4; }
};

using Operation = std::variant<DmaOp, MatmulOp, RequantOp, PoolOp, SoftmaxOp, LayerNormOp, LutOp,
                               EltwiseOp, HostOp, CopyOp, Fp32Op>;

struct Instruction {
  uint32_t id = 0;
  UnitKind unit = UnitKind::kDmaLoad;
  int unit_index = 0;  // which matrix unit, for chips with several
  int core = 0;        // the core whose unit runs it (HwConfig::cores; docs/multicore.md)
  uint32_t layer = 0;
  std::vector<uint32_t> deps;
  Operation op;
};

const char* opcode_name(const Instruction& instr);
std::string to_assembly(const Instruction& instr);

}  // namespace npusim
