// Tiling of conv / dense / matmul layers for the on-chip buffers: the layer's geometry as an
// image convolution, and the block sizes and loop order with the fewest off-chip bytes.
#pragma once

#include <cstdint>
#include <string>

#include "arch/hw_config.hpp"
#include "compiler/ir/graph.hpp"

namespace npusim {

// Tile sizes chosen for one conv2d / dense layer (dense is a 1x1 convolution over a batch x 1
// image of K channels).
struct ConvTiling {
  int out_rows = 0;               // output rows per block (M per block = out_rows * out_w)
  int n_tile = 0;                 // output channels per block
  int k_chunk = 0;                // reduction elements per weight chunk in the weight buffer
  bool weights_resident = false;  // all of the layer's weights stay in the weight buffer
  bool channels_outside = false;  // loop over channel blocks outside the spatial blocks
  // Whole images whose blocks share each streamed weight chunk (a batch over a resident input:
  // the weights are read once per this many images).
  int images_per_block = 1;
  // Streamed weights of a dense layer on several matrix units: the units' channel blocks (one per
  // unit, `n_tile` wide each) form a group whose K chunks come in one DMA box, so every unit
  // computes while the next chunk streams (k_chunk fits half the weight buffer for the group).
  bool unit_groups = false;
  uint64_t dram_bytes = 0;  // estimated off-chip traffic of the chosen order
  uint64_t dram_bytes_other_order = 0;
  uint64_t ub_bytes = 0, wb_bytes = 0, acc_bytes = 0;  // peak use of each buffer
};

// A conv / dense / matmul layer's geometry as a (grouped, possibly 3-D) image convolution:
// dense is a 1x1 convolution over a (batch x rows) x 1 image of K channels; a matmul of two
// activations is one such dense layer per batch element and leading index, whose weights are the
// second input.
struct ConvGeometry {
  int images = 1;
  int d = 1, h = 1, w = 1, c = 1;
  int kernel_d = 1, kernel_h = 1, kernel_w = 1;
  int stride_d = 1, stride_h = 1, stride_w = 1;
  int dilation_d = 1, dilation_h = 1, dilation_w = 1;
  int pad_front = 0, pad_top = 0, pad_left = 0;
  int out_d = 1, out_h = 1, out_w = 1, n = 1;
  int groups = 1;
  int element_bytes = 1;       // activations and weights: 1 (int8) or 2 (bf16)
  bool shared_weights = true;  // false: each image has weights of its own (a matmul)
  bool dense = false;          // a dense layer (weights [K][N] off chip)
  // A fused epilogue (Layer::epilogue): residual blocks beside the output block, and a
  // pool_h x pool_w pool (stride = window, no padding) on it, which needs whole windows in every
  // block: block rows a multiple of pool_h.
  int residuals = 0;
  bool pool = false;
  int pool_h = 1, pool_w = 1;
  // Rows of K one array tile covers: the array's rows, or rows / N * M for a layer whose weights
  // run on an N:M sparse array's sparse path (0: the array's rows). K chunks are multiples of it.
  int k_rows = 0;
  int cin_g() const { return c / groups; }
  int cout_g() const { return n / groups; }
  uint64_t k() const { return uint64_t(kernel_d) * kernel_h * kernel_w * cin_g(); }
};

ConvGeometry conv_geometry(const Layer& layer, int batch, int element_bytes = 1);

// Whether a convolution's or dense layer's stored real-valued weights ([reduction][filters]) have
// at most n non-zeros in every m consecutive rows of each output channel, in runs from row 0 (the
// structure of --prune n:m), so that it can run on an n:m sparse matrix unit. Weights not stored
// (generated ones drawn on demand) are dense. Quantization keeps zeros, so the int8 and bf16
// weights have the structure too. The compiler keeps such a layer's real weights until it is
// lowered, also in a timing-only run, which quantizes none.
bool has_nm_structure(const Layer& layer, int n, int m);

// Where a conv / dense / matmul layer's activations are: an operand resident in the unified buffer
// is read (written) in place and needs no slabs (output blocks) in the layer's scratch range.
struct ConvOperands {
  uint64_t scratch_bytes = 0;  // the layer's contiguous scratch range in the unified buffer
  bool input_resident = false;
  bool output_resident = false;
  // Fused residual operands resident in the unified buffer: read in place, no residual blocks.
  int resident_residuals = 0;
};

// The least scratch the layer can run in: one output row of the narrowest channel block.
uint64_t conv_scratch_min(const HwConfig& hw, const ConvGeometry& g, const ConvOperands& where);

// Chooses tiles, or explains which buffer is too small, by how much, and what to change.
struct TilingResult {
  bool ok = false;
  ConvTiling tiling;
  std::string reason;
};
TilingResult choose_conv_tiling(const HwConfig& hw, const ConvGeometry& g,
                                const std::string& layer_name, const ConvOperands& where);

// Whether a conv / dense / matmul layer (with its fused epilogue) tiles on the hardware.
bool matrix_layer_fits(const HwConfig& hw, const Layer& layer, int batch, int element_bytes);

}  // namespace npusim
