// The graph IR: a network as a list of layers in topological order. Front ends (JSON graphs,
// ONNX files; compiler/frontend/) build it with real-valued parameters; `finalize_graph`
// (compiler/ir/shape_inference.hpp) infers and checks shapes; `quantize_graph`
// (compiler/passes/quantize.hpp) turns it into int8 with calibrated scales.
// docs/workload_format.md documents the JSON form.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "arch/activation.hpp"
#include "arch/fp8.hpp"
#include "arch/quant.hpp"
#include "arch/types.hpp"
#include "compiler/ir/move_table.hpp"

namespace npusim {

// One sample's tensor (the batch is separate), row-major with channels last:
//   [features] | [rows, features] | [height, width, channels] | [depth, height, width, channels]
struct TensorShape {
  std::vector<int> dims;

  int rank() const { return static_cast<int>(dims.size()); }
  uint64_t elements() const;
  int last() const { return dims.empty() ? 1 : dims.back(); }
  // Product of every dimension but the last: the rows a dense layer or a softmax works on.
  uint64_t outer() const { return last() == 0 ? 0 : elements() / last(); }
  // Spatial view of a rank-3 or rank-4 shape (depth 1 for rank 3).
  int d() const { return rank() == 4 ? dims[0] : 1; }
  int h() const { return dims[rank() - 3]; }
  int w() const { return dims[rank() - 2]; }
  bool operator==(const TensorShape&) const = default;
};
TensorShape make_shape(std::initializer_list<int> dims);
std::string to_string(const TensorShape& shape);

enum class OpKind {
  kConv,        // conv2d (rank 3) and conv3d (rank 4), with groups (depthwise: groups = channels)
  kDense,       // y = x W + b over the last dimension
  kMatMul,      // two activations: [..., M, K] x [..., K, N] (or [..., N, K] with transpose_b)
  kMaxPool,     // 2-D or 3-D window
  kAvgPool,     // 2-D or 3-D window; global when `global_pool`
  kActivation,  // elementwise unary: relu, relu6, clip, sigmoid, tanh, gelu
  kAdd,         // elementwise binary, same shapes (residual connections)
  kMul,         // elementwise binary, same shapes
  kConcat,      // along the last (channel) dimension
  kReshape,     // flatten / reshape: free in memory, the element order is unchanged
  kSoftmax,     // over the last dimension
  kLayerNorm,   // over the last dimension, with gamma and beta
  kBatchNorm,   // folded into the preceding conv or dense at quantization time
  kMove,        // data movement: each output element copies an input element or a constant
                // (transpose, slice, gather, pad, resize, split, concat on any axis, reordering
                // reshapes); run by the DMA as strided boxes
  kEmbedding,   // embedding lookup: each int32 id of the input selects a row of the table
                // (`weights`, [vocab][filters]); run by the DMA as indexed loads
};
const char* to_string(OpKind kind);  // its name in compiler/ir/op_table.hpp

struct Layer {
  std::string name;
  OpKind kind = OpKind::kActivation;
  std::vector<std::string> inputs;
  std::string output;

  // Attributes. Spatial triples are (depth, height, width); 2-D layers use depth 1.
  int filters = 0;  // conv filters, dense units
  std::array<int, 3> kernel{1, 1, 1};
  std::array<int, 3> strides{1, 1, 1};
  std::array<int, 3> dilation{1, 1, 1};
  std::array<int, 3> pads_begin{0, 0, 0};
  std::array<int, 3> pads_end{0, 0, 0};
  int groups = 1;
  bool same_padding = false;  // TensorFlow "same": pads derived from the input size
  bool global_pool = false;
  bool count_include_pad = false;  // average pooling divides by the window (true) or by the
                                   // number of input pixels it covers (false, TensorFlow)
  bool transpose_b = false;
  Activation activation = Activation::kNone;  // fused into conv / dense / matmul / add, or the op
  float clip_min = 0.0f, clip_max = 6.0f;
  float epsilon = 1e-5f;
  bool rms = false;  // kLayerNorm: RMSNorm, x / sqrt(mean(x^2) + epsilon) * gamma (beta 0)
  bool use_bias = true;
  std::vector<int> reshape_to;  // kReshape: the new per-sample shape (empty: flatten); kMove: the
                                // output shape
  // kMove: the source of every output element of one sample (row-major over `reshape_to`, held
  // as runs: compiler/ir/move_table.hpp), the constants some copy (padding, constant operands),
  // and the front-end operator it implements.
  MoveTable move_from;
  std::vector<float> move_constants;
  std::string move_op;

  // Real-valued parameters, from the file or generated from the seed.
  // Conv: [kd][kh][kw][cin / groups][cout]; dense: [in][out]; both row-major.
  std::vector<float> weights;
  std::vector<float> bias;            // cout values
  std::vector<float> gamma, beta;     // layernorm (last dim); batchnorm (channels)
  std::vector<float> mean, variance;  // batchnorm
  // Generated weights not stored (materialize_parameters with WeightStorage::kOnDemand):
  // `weights` stays empty and for_each_weight_row (compiler/passes/parameters.hpp) draws them
  // row by row, the same values as stored ones, with the folded batch norms' factors applied.
  struct WeightDraw {
    bool pending = false;
    uint64_t rng_state = 0;  // the layer's generator before its first weight
    float bound = 0.0f;      // uniform in [-bound, bound)
    std::vector<std::vector<float>> column_factors;  // per output channel, in folding order
  } weight_draw;

  // Given by the user (JSON "output_scale") instead of calibrated; 0 = calibrate.
  float fixed_output_scale = 0.0f;

  // Resolved by finalize_graph.
  std::vector<TensorShape> in_shapes;
  TensorShape out_shape;

  // Filled by quantize_graph (compiler/passes/quantize.hpp).
  std::vector<float> in_scales;  // real value = int8 value * scale, per input
  float out_scale = 1.0f;
  std::vector<int8_t> qweights;        // same layout as weights
  std::vector<uint16_t> bf16_weights;  // bf16 path: same layout as weights
  // --weight-dtype int4 (docs/compression.md): qweights hold int4 values ([-7, 7], one scale per
  // output channel), stored off chip two to a byte; the DMA widens them to int8 on the way in.
  // In a bf16 run (W4A16, compiler/passes/w4a16.hpp) bf16_weights hold the dequantized weights
  // z x s rounded to bf16 and int4_scales the bf16 scales s, [k / G][channel] (one row when per
  // channel); stored off chip as z and s, the DMA's decompressor writes z x s.
  bool int4_weights = false;
  std::vector<uint16_t> int4_scales;
  // --weight-group G with int4 weights (docs/compression.md; 0: per channel). In int8 runs
  // qweights hold z x s, z in [-7, 7] and s in [1, 18] the integer scale of the group of G
  // consecutive weights along the reduction axis it belongs to (one per group and output channel:
  // group_scales[k / G][channel]), so the int8 array computes with them exactly; the per-channel
  // scale stays in `requant`.
  int weight_group = 0;
  std::vector<uint8_t> group_scales;
  // --compress-weights auto (docs/compression.md): the lowering stores these weights compressed
  // off chip (bitmap or CSR-like, compiler/lowering/weight_compression.cpp) when that is smaller;
  // with huffman_weights (--compress-weights huffman) the Huffman format is a candidate too.
  bool compress_weights = false;
  bool huffman_weights = false;
  // --dtype fp8-e4m3 / fp8-e5m2 (docs/quantization.md, compiler/passes/fp8.cpp): a convolution
  // or dense layer whose matrix inputs are fp8. bf16_weights hold fp8 values x 2^-fp8_weight_exp
  // (stored one byte each off chip); the array rounds the input to fp8 x 2^-fp8_input_exp.
  Fp8Format fp8 = Fp8Format::kNone;
  int fp8_weight_exp = 0, fp8_input_exp = 0;
  std::vector<int32_t> qbias;              // cout values, on the accumulator's scale
  std::vector<QuantMultiplier> requant;    // per output channel: accumulator -> output int8
  std::vector<int8_t> lut;                 // 256 entries: int8 -> int8 activation (fused or alone)
  float mid_scale = 0.0f;                  // scale of the pre-activation int8 that feeds `lut`
  int8_t clamp_lo = -128, clamp_hi = 127;  // saturation of the requantized output
  std::vector<float> input_ratios;         // add / mul / concat: input scale(s) over output scale
  // Per-row (per-token) activation scales (docs/quantization.md "Per-row scales"): when not
  // empty, every sample of this layer's output is out_row_scales.size() rows of equal length,
  // row r on scale out_row_scales[r] (out_scale is the largest, the tensor's scale); empty:
  // out_scale throughout. in_row_scales[k]: the same for input k, as its producer set them
  // (empty, or shorter than `inputs`: in_scales[k] throughout).
  std::vector<float> out_row_scales;
  std::vector<std::vector<float>> in_row_scales;
  std::vector<std::string> fused;  // names of layers folded or fused into this one
  // Runs on the host CPU of a heterogeneous system (docs/heterogeneous.md): pinned there by
  // --host-ops, or fallen back because the accelerator cannot run it (compiler/lowering).
  bool on_host = false;

  // Set by fuse_epilogues (compiler/passes/fusion.hpp) on a conv / dense / matmul: the residual
  // add and pool layers that run in its epilogue, in order, each on the block the stage before
  // produced, computing exactly what the separate layer computed. `out_shape` and `out_scale` stay
  // the matrix product's; `output` is the last stage's output.
  std::vector<Layer> epilogue;
  // On an add stage: which of its two operands (0 or 1) is the block of the stage before, and
  // which of the host layer's inputs is the other operand.
  int chain_operand = 0;
  int residual_input = -1;
  // The layer whose output is this layer's stored output: the last epilogue stage, or itself.
  const Layer& last_stage() const { return epilogue.empty() ? *this : epilogue.back(); }

  // The scale of element `element` (row-major over the whole batch) of input k, and an add's
  // ratio of that scale to its output's (input_ratios[k] unless input k has row scales).
  float in_scale_at(size_t k, uint64_t element) const;
  float input_ratio_at(size_t k, uint64_t element) const;

  int input_channels_per_group() const;
  int output_channels_per_group() const { return filters / groups; }
  // Multiply-accumulates per output element for conv / dense / matmul.
  uint64_t reduction() const;
  uint64_t macs(int batch) const;
  bool has_weights() const;  // compiler/ir/op_table.hpp
};

struct Graph {
  std::string name;
  std::string description;
  int batch = 1;
  std::string input_name;
  TensorShape input_shape;
  float input_scale = 1.0f / 64;  // int8 inputs: real value = int8 value * scale
  // ONNX models: tensors at the file boundary (--input, --save-outputs) are channels first
  // (NCHW / NCDHW); inside, everything is channels last.
  bool channels_first_io = false;
  // ONNX models (docs/onnx.md "Rank mapping"): the input / outputs whose sample is in ONNX order
  // already (not a channels-last feature map), so the file boundary moves no channels; and the
  // whole-tensor mode, where files hold exactly the ONNX shape with no batch axis (batch 1).
  std::set<std::string> io_in_onnx_order;
  bool io_without_batch = false;
  // The input holds int32 token ids (4 bytes each, not quantized) that feed kEmbedding layers.
  bool input_ids = false;
  std::vector<Layer> layers;
  std::vector<std::string> outputs;
  // Set by quantize_graph (int8) or prepare_bf16 (bf16): the graph is ready for lowering.
  bool quantized = false;
  DataType dtype = DataType::kInt8;  // what activations and weights are stored as

  const Layer* producer(const std::string& tensor) const;  // null for the graph input
  TensorShape shape_of(const std::string& tensor) const;
  float scale_of(const std::string& tensor) const;
  uint64_t total_macs() const;
};

}  // namespace npusim
