#include "compiler/lowering/tiling.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "compiler/lowering/tiling_math.hpp"

namespace npusim {

using lowering::align_up;
using lowering::ceil_div;
using lowering::largest_fitting;
using lowering::slab_planes;
using lowering::slab_rows;

ConvGeometry conv_geometry(const Layer& l, int batch, int element_bytes) {
  ConvGeometry g;
  g.element_bytes = element_bytes;
  for (const Layer& s : l.epilogue) {
    if (s.kind == OpKind::kAdd) ++g.residuals;
    if (s.kind == OpKind::kMaxPool || s.kind == OpKind::kAvgPool) {
      g.pool = true;
      g.pool_h = s.strides[1];
      g.pool_w = s.strides[2];
    }
  }
  const TensorShape& in = l.in_shapes[0];
  if (l.kind == OpKind::kDense) {
    // Every row of every sample is one pixel of a single (batch x rows) x 1 image of K channels.
    g.h = static_cast<int>(batch * in.outer());
    g.c = in.last();
    g.out_h = g.h;
    g.n = l.filters;
    g.dense = true;
    return g;
  }
  if (l.kind == OpKind::kMatMul) {
    const int m = in.dims[in.rank() - 2];
    g.images = static_cast<int>(batch * (in.elements() / (uint64_t(m) * in.last())));
    g.h = g.out_h = m;
    g.c = in.last();
    g.n = l.out_shape.last();
    g.shared_weights = false;
    return g;
  }
  g.images = batch;
  g.d = in.d(), g.h = in.h(), g.w = in.w(), g.c = in.last();
  g.kernel_d = l.kernel[0], g.kernel_h = l.kernel[1], g.kernel_w = l.kernel[2];
  g.stride_d = l.strides[0], g.stride_h = l.strides[1], g.stride_w = l.strides[2];
  g.dilation_d = l.dilation[0], g.dilation_h = l.dilation[1], g.dilation_w = l.dilation[2];
  g.pad_front = l.pads_begin[0], g.pad_top = l.pads_begin[1], g.pad_left = l.pads_begin[2];
  g.out_d = l.out_shape.d(), g.out_h = l.out_shape.h(), g.out_w = l.out_shape.w();
  g.n = l.out_shape.last();
  g.groups = l.groups;
  return g;
}

namespace {

// Unified-buffer scratch of blocks of `rows` output rows x `n_tile` channels (the layout of
// matrix_lowering.cpp's MatrixLayer): two input slabs unless the input is resident; two output
// blocks unless the output is resident and written in place (a fused pool writes the pooled block
// there, its input block stays in the scratch); the bias; two blocks per fused residual operand off
// chip; two pooled blocks unless the output is resident.
uint64_t conv_scratch(const ConvGeometry& g, const ConvOperands& where, int rows, int n_tile) {
  const uint64_t es = g.element_bytes;
  const uint64_t plane_bytes = uint64_t(slab_planes(g)) * g.w * g.c * es;
  const uint64_t slabs = where.input_resident ? 0 : 2 * align_up(slab_rows(g, rows) * plane_bytes);
  const uint64_t block = align_up(uint64_t(rows) * g.out_w * n_tile * es);
  const uint64_t outs = where.output_resident && !g.pool ? 0 : 2 * block;
  const uint64_t residuals = 2 * block * (g.residuals - where.resident_residuals);
  const uint64_t pooled =
      g.pool && !where.output_resident
          ? 2 * align_up(uint64_t(rows / g.pool_h) * (g.out_w / g.pool_w) * n_tile * es)
          : 0;
  return slabs + outs + align_up(4ull * g.n) + residuals + pooled;
}

}  // namespace

uint64_t conv_scratch_min(const HwConfig& hw, const ConvGeometry& g, const ConvOperands& where) {
  return conv_scratch(g, where, g.pool_h, std::min(g.n, hw.matrix_unit.cols));
}

TilingResult choose_conv_tiling(const HwConfig& hw, const ConvGeometry& g,
                                const std::string& layer_name, const ConvOperands& where) {
  const auto& mu = hw.matrix_unit;
  const uint64_t k = g.k();
  const uint64_t ub = where.scratch_bytes;
  const uint64_t wb_half = hw.weight_buffer.capacity_bytes / 2;
  // Each unit's slice of the accumulators, whole 32-bit words in each half (count 3 splits
  // unevenly).
  const uint64_t acc_half = hw.accumulators.capacity_bytes / mu.count / 8 * 4;
  const uint64_t es = g.element_bytes;
  const uint64_t bias_bytes = align_up(4ull * g.n);
  const bool resident = k * g.n * es <= wb_half;
  const uint64_t plane_bytes = uint64_t(slab_planes(g)) * g.w * g.c * es;

  std::vector<int> n_candidates;
  int t = std::min(g.n, ceil_div(ceil_div(g.n, mu.count), mu.cols) * mu.cols);
  while (true) {
    n_candidates.push_back(t);
    if (t <= mu.cols) break;
    t = std::max(mu.cols, ceil_div(ceil_div(t, 2), mu.cols) * mu.cols);
  }
  auto ub_need = [&](int rows, int n_tile) { return conv_scratch(g, where, rows, n_tile); };
  // Off-chip bytes of a tiling in either loop order. Spatial blocks outside: each slab is read
  // once, streamed weights once per spatial block. Channel blocks outside: a channel block's
  // weights are read once when they fit half the weight buffer, every slab once per channel block.
  // A resident input costs no slab bytes.
  const uint64_t weight_bytes = k * g.n * es;
  auto traffic = [&](int rows, int n_tile, bool channels_outside, int images_per_block) {
    const uint64_t row_blocks = static_cast<uint64_t>(ceil_div(g.out_h, rows));
    const uint64_t blocks = uint64_t(ceil_div(g.images, images_per_block)) * g.out_d * row_blocks;
    uint64_t slabs = 0;
    for (int oh0 = 0; oh0 < g.out_h; oh0 += rows) {
      const int r = std::min(rows, g.out_h - oh0);
      const int top = oh0 * g.stride_h - g.pad_top;
      const int lo = std::max(0, top);
      const int hi =
          std::min(g.h, top + (r - 1) * g.stride_h + g.dilation_h * (g.kernel_h - 1) + 1);
      slabs += uint64_t(std::max(hi - lo, 0)) * plane_bytes;
    }
    slabs *= where.input_resident ? 0 : uint64_t(g.images) * g.out_d;
    const uint64_t n_blocks = static_cast<uint64_t>(ceil_div(g.n, n_tile));
    if (resident) return slabs + weight_bytes;
    if (!channels_outside) return slabs + blocks * weight_bytes;
    const bool fit = k * n_tile * es <= wb_half;
    return slabs * n_blocks + (fit ? 1 : blocks) * weight_bytes;
  };
  TilingResult best;
  // Streamed dense weights on several units, spatial blocks outside: one K chunk of a group of
  // mu.count channel blocks per DMA (MatrixLayer::block_group), so the chunk must fit half the
  // weight buffer for the whole group.
  const bool groups = !resident && g.dense && mu.count > 1;
  const uint64_t k_rows = g.k_rows > 0 ? uint64_t(g.k_rows) : uint64_t(mu.rows);
  auto chunk_of = [&](uint64_t width) {
    return resident ? k : std::min<uint64_t>(k, wb_half / es / width / k_rows * k_rows);
  };
  for (int n_tile : n_candidates) {
    if (chunk_of(n_tile) == 0) continue;
    const int rows_acc =
        static_cast<int>(std::min<uint64_t>(g.out_h, acc_half / (uint64_t(g.out_w) * n_tile * 4)));
    // A fused pool needs whole windows: blocks of a multiple of pool_h rows.
    if (rows_acc < g.pool_h || ub_need(g.pool_h, n_tile) > ub) continue;
    const int rows = largest_fitting(rows_acc, [&](int r) { return ub_need(r, n_tile) <= ub; }) /
                     g.pool_h * g.pool_h;
    // A batch over a resident input: whole images share each streamed weight chunk, as many as
    // the accumulators hold, so the weights are read once per that many images.
    int images = 1;
    if (!resident && g.shared_weights && where.input_resident && g.images > 1 && g.out_d == 1 &&
        rows == g.out_h) {
      images = static_cast<int>(
          std::min<uint64_t>(g.images, acc_half / (uint64_t(g.out_h) * g.out_w * n_tile * 4)));
    }
    for (bool channels_outside : {false, true}) {
      if (channels_outside && (resident || g.images > 1 || n_tile == g.n)) continue;
      const bool grouped = groups && !channels_outside;
      const uint64_t width =
          grouped ? std::min<uint64_t>(g.n, uint64_t(n_tile) * mu.count) : uint64_t(n_tile);
      const uint64_t k_chunk = chunk_of(width);
      if (k_chunk == 0) continue;
      const int ib = channels_outside ? 1 : images;
      const uint64_t bytes = traffic(rows, n_tile, channels_outside, ib);
      // At equal traffic a unit group wins: it keeps every matrix unit fed while weights stream.
      const bool better = !best.ok || bytes < best.tiling.dram_bytes ||
                          (bytes == best.tiling.dram_bytes && grouped && !best.tiling.unit_groups);
      if (!better) continue;
      best.ok = true;
      best.tiling.out_rows = rows;
      best.tiling.n_tile = n_tile;
      best.tiling.k_chunk = static_cast<int>(k_chunk);
      best.tiling.weights_resident = resident;
      best.tiling.channels_outside = channels_outside;
      best.tiling.images_per_block = ib;
      best.tiling.unit_groups = grouped;
      best.tiling.dram_bytes = bytes;
      best.tiling.dram_bytes_other_order =
          traffic(rows, n_tile, !channels_outside, channels_outside ? images : 1);
      best.tiling.ub_bytes = ub_need(rows, n_tile);
      best.tiling.wb_bytes = (resident ? k * g.n : 2 * k_chunk * width) * es;
      best.tiling.acc_bytes = 2ull * ib * rows * g.out_w * n_tile * 4 * mu.count;
    }
  }
  if (best.ok) return best;
  // Nothing fits: report the smallest configuration's needs.
  const int n_tile = std::min(g.n, mu.cols);
  TilingResult r;
  const uint64_t acc_need = 2ull * g.out_w * n_tile * 4 * mu.count;
  const uint64_t ub_min = ub_need(g.pool_h, n_tile);
  // Streamed weights come in chunks of whole array heights (k_chunk above), double-buffered.
  const uint64_t wb_need = 2ull * mu.rows * n_tile * es;
  if (!resident && wb_need > hw.weight_buffer.capacity_bytes) {
    r.reason = fmt::format(
        "layer '{}' does not fit: its weights ({} bytes) stream through the weight buffer in tiles "
        "of {} rows x {} columns of {} bytes, double-buffered, which need {} bytes; the hardware "
        "has {}: raise buffers.weight_buffer.capacity_bytes to at least {}",
        layer_name, weight_bytes, mu.rows, n_tile, es, wb_need, hw.weight_buffer.capacity_bytes,
        wb_need);
  } else if (acc_need > hw.accumulators.capacity_bytes) {
    r.reason = fmt::format(
        "layer '{}' does not fit: one output row ({} pixels x {} channels, double-buffered, {} "
        "matrix unit(s)) needs {} bytes of accumulators, the hardware has {}: raise "
        "buffers.accumulators.capacity_bytes to at least {}",
        layer_name, g.out_w, n_tile, mu.count, acc_need, hw.accumulators.capacity_bytes, acc_need);
  } else {
    r.reason = fmt::format(
        "layer '{}' does not fit: one output row needs {} bytes of unified buffer ({} input rows "
        "of {}x{} bytes and one output row, both double-buffered, plus {} bytes of bias), the "
        "hardware has {}: raise buffers.unified_buffer.capacity_bytes to at least {}",
        layer_name, ub_min, slab_rows(g, 1) * slab_planes(g), g.w, g.c * es, bias_bytes, ub,
        ub_min);
  }
  return r;
}

bool has_nm_structure(const Layer& l, int n, int m) {
  if ((l.kind != OpKind::kConv && l.kind != OpKind::kDense) || l.weights.empty()) return false;
  const size_t rows = l.reduction(), filters = size_t(l.filters);
  if (n < 1 || m <= n || l.weights.size() != rows * filters) return false;
  for (size_t o = 0; o < filters; ++o) {
    for (size_t r0 = 0; r0 < rows; r0 += size_t(m)) {
      int nz = 0;
      for (size_t r = r0; r < std::min(rows, r0 + size_t(m)); ++r)
        nz += l.weights[r * filters + o] != 0.0f;
      if (nz > n) return false;
    }
  }
  return true;
}

bool matrix_layer_fits(const HwConfig& hw, const Layer& layer, int batch, int element_bytes) {
  // Every operand off chip in the whole unified buffer: the memory plan later keeps any layer's
  // least scratch free (conv_scratch_min), and resident operands only shrink it.
  return choose_conv_tiling(hw, conv_geometry(layer, batch, element_bytes), layer.name,
                            ConvOperands{hw.unified_buffer.capacity_bytes})
      .ok;
}

}  // namespace npusim
