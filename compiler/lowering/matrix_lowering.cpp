// Conv, dense and matmul layers: blocks of output rows x channels, array-sized MATMUL tiles per
// dataflow, the REQUANT epilogue and the store (docs/architecture.md, "How a layer is tiled").
#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "compiler/lowering/lowering_context.hpp"

namespace npusim::lowering {

bool Lowering::lower_matrix(const Layer& l, LayerRecord& rec) {
  const ConvGeometry g = conv_geometry(l, graph_.batch, es_);
  TilingResult tr = choose_conv_tiling(hw_, g, l.name);
  if (!tr.ok) return fail(tr.reason);
  const ConvTiling& t = tr.tiling;
  const auto& mu = hw_.matrix_unit;
  const int k = static_cast<int>(g.k());
  const bool matmul = l.kind == OpKind::kMatMul;
  const uint64_t in_dram = tensor_addr_.at(l.inputs[0]);
  const uint64_t out_dram = tensor_addr_.at(l.output);
  const Params params = matmul ? Params{tensor_addr_.at(l.inputs[1]), 0, 0} : params_.at(l.name);
  const uint64_t weights_per_image = matmul ? uint64_t(k) * g.n * es_ : 0;
  rec.tiling = fmt::format(
      "{} image(s) {}x{}x{}x{} -> {}x{}x{}x{}, K={}{}; blocks of {} output rows x {} channels, "
      "weights {} (k chunk {}), ub {} B, wb {} B, acc {} B",
      g.images, g.d, g.h, g.w, g.c, g.out_d, g.out_h, g.out_w, g.n, k,
      g.groups > 1 ? fmt::format(", {} groups", g.groups) : "", t.out_rows, t.n_tile,
      t.weights_resident ? "resident" : "streamed", t.k_chunk, t.ub_bytes, t.wb_bytes, t.acc_bytes);

  // Unified buffer: two input slabs, two output blocks, the bias.
  const uint64_t pixel_bytes = uint64_t(g.c) * es_;
  const uint64_t plane_bytes = uint64_t(g.h) * g.w * pixel_bytes;
  const uint64_t slab_bytes =
      align_up(uint64_t(slab_planes(g)) * slab_rows(g, t.out_rows) * g.w * pixel_bytes);
  const uint64_t out_bytes = align_up(uint64_t(t.out_rows) * g.out_w * t.n_tile * es_);
  const uint64_t slab_base[2] = {0, slab_bytes};
  const uint64_t out_base[2] = {2 * slab_bytes, 2 * slab_bytes + out_bytes};
  const uint64_t bias_ub = 2 * slab_bytes + 2 * out_bytes;
  const uint64_t wb_half = hw_.weight_buffer.capacity_bytes / 2;
  const uint64_t acc_unit = hw_.accumulators.capacity_bytes / mu.count;
  const uint64_t acc_block = uint64_t(t.out_rows) * g.out_w * t.n_tile * 4;
  const int table = l.requant.empty() ? -1 : requant_table(l.requant);
  const int table_lut = lut(l.lut);
  const int cout_g = g.cout_g(), cin_g = g.cin_g();

  if (!matmul) dma(UnitKind::kDmaLoad, BufferId::kUnified, bias_ub, params.bias, 4ull * g.n, 1, 0);
  auto load_weights = [&](uint64_t wb, uint64_t src_image, int kc0, int k_cb, int n0, int n_cb) {
    const uint64_t src = params.weights + src_image * weights_per_image;
    if (matmul && l.transpose_b) {  // the second input is [N][K]: load it transposed
      dma(UnitKind::kDmaLoad, BufferId::kWeight, wb, src + (uint64_t(n0) * k + kc0) * es_,
          k_cb * es_, n_cb, uint64_t(k) * es_, true);
    } else {
      dma(UnitKind::kDmaLoad, BufferId::kWeight, wb, src + (uint64_t(kc0) * g.n + n0) * es_,
          n_cb * es_, k_cb, uint64_t(g.n) * es_);
    }
  };
  uint64_t resident_wb = 0;
  if (t.weights_resident && !matmul) {
    resident_wb = weight_half_ * wb_half;
    weight_half_ ^= 1;
    load_weights(resident_wb, 0, 0, k, 0, g.n);
  }

  // The spatial blocks (one input slab each) and the loop order over (block, channel block).
  struct SpatialBlock {
    int img, od, oh0, rows;
  };
  std::vector<SpatialBlock> blocks;
  for (int img = 0; img < g.images; ++img)
    for (int od = 0; od < g.out_d; ++od)
      for (int oh0 = 0; oh0 < g.out_h; oh0 += t.out_rows)
        blocks.push_back({img, od, oh0, std::min(t.out_rows, g.out_h - oh0)});
  const int n_blocks = ceil_div(g.n, t.n_tile);
  const bool block_weights_fit = uint64_t(k) * t.n_tile * es_ <= wb_half;
  const bool channels_outside = t.channels_outside;
  rec.tiling += fmt::format("; loop order: {} outside (estimated {} B off-chip, other order {} B)",
                            channels_outside ? "channel blocks" : "spatial blocks", t.dram_bytes,
                            t.dram_bytes_other_order);

  int slab_parity = 0, chunk_index = 0, out_index = 0;
  int loaded_block = -1, loaded_image = -1, loaded_n_block = -1;
  std::vector<int> acc_parity(mu.count, 0);
  uint64_t slab = 0, block_wb = 0;
  ActivationView view;
  uint64_t slab_end = 0;
  auto process = [&](int bi, int nb) {
    const SpatialBlock& sb = blocks[bi];
    const int img = sb.img, od = sb.od, oh0 = sb.oh0, rows = sb.rows;
    if (t.weights_resident && matmul && loaded_image != img) {
      resident_wb = weight_half_ * wb_half;
      weight_half_ ^= 1;
      load_weights(resident_wb, img, 0, k, 0, g.n);
      loaded_image = img;
    }
    const int m_blk = rows * g.out_w;
    if (loaded_block != bi) {  // bring this block's input slab in
      loaded_block = bi;
      const int front = od * g.stride_d - g.pad_front;
      const int iz_lo = std::max(0, front);
      const int iz_hi = std::min(g.d, front + g.dilation_d * (g.kernel_d - 1) + 1);
      const int top = oh0 * g.stride_h - g.pad_top;
      const int ih_lo = std::max(0, top);
      const int ih_hi = std::min(
          g.h, (oh0 + rows - 1) * g.stride_h - g.pad_top + g.dilation_h * (g.kernel_h - 1) + 1);
      slab = slab_base[slab_parity];
      slab_parity ^= 1;
      const int planes = std::max(iz_hi - iz_lo, 0), slab_h = std::max(ih_hi - ih_lo, 0);
      const uint64_t row_bytes = uint64_t(slab_h) * g.w * pixel_bytes;
      if (planes > 0 && slab_h > 0) {
        dma(UnitKind::kDmaLoad, BufferId::kUnified, slab,
            in_dram + ((uint64_t(img) * g.d + iz_lo) * g.h + ih_lo) * g.w * pixel_bytes, row_bytes,
            planes, plane_bytes);
      }
      view = ActivationView{};
      view.ub_addr = slab;
      view.slab_d = planes;
      view.slab_h = slab_h;
      view.slab_w = g.w;
      view.slab_c = g.c;
      view.kernel_d = g.kernel_d, view.kernel_h = g.kernel_h, view.kernel_w = g.kernel_w;
      view.stride_h = g.stride_h, view.stride_w = g.stride_w;
      view.dilation_d = g.dilation_d, view.dilation_h = g.dilation_h;
      view.dilation_w = g.dilation_w;
      view.origin_z = front - iz_lo;
      view.origin_y = top - ih_lo;
      view.origin_x = -g.pad_left;
      view.out_w = g.out_w;
      view.window_c = cin_g;
      slab_end = slab + uint64_t(planes) * row_bytes;
    }

    const int unit = nb % mu.count;
    const int n0 = nb * t.n_tile;
    const int n_tb = std::min(t.n_tile, g.n - n0);
    const uint64_t acc = unit * acc_unit + acc_parity[unit] * (acc_unit / 2);
    acc_parity[unit] ^= 1;
    if (channels_outside && block_weights_fit && loaded_n_block != nb) {
      block_wb = (chunk_index++ % 2) * wb_half;  // this channel block's K x n weights, once
      load_weights(block_wb, 0, 0, k, n0, n_tb);
      loaded_n_block = nb;
    }
    for (int kc0 = 0; kc0 < k; kc0 += t.k_chunk) {
      const int k_cb = std::min(t.k_chunk, k - kc0);
      uint64_t wb;
      int w_ld;
      if (t.weights_resident) {
        wb = resident_wb + (uint64_t(kc0) * g.n + n0) * es_;
        w_ld = g.n;
      } else if (channels_outside && block_weights_fit) {
        wb = block_wb + uint64_t(kc0) * n_tb * es_;
        w_ld = n_tb;
      } else {
        wb = (chunk_index++ % 2) * wb_half;
        w_ld = n_tb;
        load_weights(wb, img, kc0, k_cb, n0, n_tb);
      }
      const uint64_t wb_end = wb + (uint64_t(k_cb - 1) * w_ld + n_tb) * es_;
      // One group's channels [c_lo, c_hi) of this block, split into array tiles.
      auto group_tiles = [&](int grp, int c_lo, int c_hi) {
        auto matmul_tile = [&](int m_off, int m, int k_off, int kk, int n_off, int n) {
          MatmulOp op;
          op.a = view;
          op.a.m0 = m_off;
          op.a.k0 = kc0 + k_off;
          op.a.c0 = grp * cin_g;
          op.wb_addr = wb + (uint64_t(k_off) * w_ld + (c_lo - n0) + n_off) * es_;
          op.w_ld = w_ld;
          op.acc_addr = acc + (uint64_t(m_off) * n_tb + (c_lo - n0) + n_off) * 4;
          op.acc_ld = n_tb;
          op.m = m, op.k = kk, op.n = n;
          op.accumulate = kc0 + k_off > 0;
          emit(UnitKind::kMatrix, unit, op,
               {{BufferId::kUnified, slab, slab_end, false},
                {BufferId::kWeight, wb, wb_end, false},
                {BufferId::kAccumulator, acc, acc + acc_block, true}});
        };
        const int width = c_hi - c_lo;
        switch (mu.dataflow) {
          case Dataflow::kWeightStationary:
            for (int n_off = 0; n_off < width; n_off += mu.cols)
              for (int k_off = 0; k_off < k_cb; k_off += mu.rows)
                matmul_tile(0, m_blk, k_off, std::min(mu.rows, k_cb - k_off), n_off,
                            std::min(mu.cols, width - n_off));
            break;
          case Dataflow::kOutputStationary:
            for (int m_off = 0; m_off < m_blk; m_off += mu.rows)
              for (int n_off = 0; n_off < width; n_off += mu.cols)
                matmul_tile(m_off, std::min(mu.rows, m_blk - m_off), 0, k_cb, n_off,
                            std::min(mu.cols, width - n_off));
            break;
          case Dataflow::kInputStationary:
            for (int m_off = 0; m_off < m_blk; m_off += mu.cols)
              for (int k_off = 0; k_off < k_cb; k_off += mu.rows)
                matmul_tile(m_off, std::min(mu.cols, m_blk - m_off), k_off,
                            std::min(mu.rows, k_cb - k_off), 0, width);
            break;
        }
      };
      for (int grp = n0 / cout_g; grp * cout_g < n0 + n_tb; ++grp) {
        group_tiles(grp, std::max(n0, grp * cout_g), std::min(n0 + n_tb, (grp + 1) * cout_g));
      }
    }
    const uint64_t out = out_base[out_index++ % 2];
    RequantOp rq;
    rq.acc_addr = acc;
    rq.acc_ld = n_tb;
    rq.has_bias = !matmul;
    rq.bias_ub_addr = bias_ub + uint64_t(n0) * 4;
    rq.out_ub_addr = out;
    rq.out_ld = n_tb;
    rq.m = m_blk;
    rq.n = n_tb;
    rq.table = table;
    rq.channel0 = n0;
    rq.lo = l.clamp_lo;
    rq.hi = l.clamp_hi;
    rq.lut = table_lut;
    rq.activation = l.activation;
    rq.clip_min = l.clip_min, rq.clip_max = l.clip_max;
    std::vector<BufferAccess> accesses = {
        {BufferId::kAccumulator, acc, acc + uint64_t(m_blk) * n_tb * 4, false},
        {BufferId::kUnified, out, out + uint64_t(m_blk) * n_tb * es_, true}};
    if (rq.has_bias) {
      accesses.push_back(
          {BufferId::kUnified, rq.bias_ub_addr, rq.bias_ub_addr + uint64_t(n_tb) * 4, false});
    }
    emit(UnitKind::kVector, 0, rq, accesses);
    const uint64_t out_pixel = ((uint64_t(img) * g.out_d + od) * g.out_h + oh0) * g.out_w;
    dma(UnitKind::kDmaStore, BufferId::kUnified, out, out_dram + (out_pixel * g.n + n0) * es_,
        n_tb * es_, m_blk, uint64_t(g.n) * es_);
  };
  const int n_spatial = static_cast<int>(blocks.size());
  if (channels_outside) {
    for (int nb = 0; nb < n_blocks; ++nb)
      for (int bi = 0; bi < n_spatial; ++bi) process(bi, nb);
  } else {
    for (int bi = 0; bi < n_spatial; ++bi)
      for (int nb = 0; nb < n_blocks; ++nb) process(bi, nb);
  }
  return true;
}

}  // namespace npusim::lowering
