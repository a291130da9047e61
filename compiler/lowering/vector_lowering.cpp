// Layers of the vector unit: pooling, row-wise ops (softmax, layer norm, table activations),
// elementwise add / mul and concatenation. An operand resident in the unified buffer is read or
// written in place; one off chip streams through double buffers in the layer's scratch range.
#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "compiler/lowering/lowering_context.hpp"

namespace npusim::lowering {

PoolOp pool_op(const Layer& l) {
  PoolOp p;
  p.average = l.kind == OpKind::kAvgPool;
  p.count_include_pad = l.count_include_pad;
  p.window_d = l.kernel[0], p.window_h = l.kernel[1], p.window_w = l.kernel[2];
  p.stride_h = l.strides[1], p.stride_w = l.strides[2];
  return p;
}

EltwiseOp eltwise_op(const Layer& l, int table) {
  EltwiseOp e;
  e.kind = l.kind == OpKind::kAdd ? EltwiseKind::kAdd : EltwiseKind::kMul;
  e.ra = l.input_ratios.empty() ? 1.0f : l.input_ratios[0];
  e.rb = l.input_ratios.size() > 1 ? l.input_ratios[1] : 1.0f;
  e.lo = l.clamp_lo, e.hi = l.clamp_hi;
  e.lut = table;
  e.activation = l.activation;
  e.clip_min = l.clip_min, e.clip_max = l.clip_max;
  return e;
}

bool Lowering::lower_pool(const Layer& l, LayerRecord& rec) {
  const TensorShape &in = l.in_shapes[0], &out = l.out_shape;
  const int D = in.d(), H = in.h(), W = in.w();
  const int C = in.last() * es_;  // bytes per pixel
  const int planes_max = std::min(D, l.kernel[0]);
  const bool in_res = resident(l.inputs[0]), out_res = resident(l.output);
  auto rows_in = [&](int rows) { return std::min(H, (rows - 1) * l.strides[1] + l.kernel[1]); };
  auto need = [&](int rows) {
    return (in_res ? 0 : 2 * align_up(uint64_t(planes_max) * rows_in(rows) * W * C)) +
           (out_res ? 0 : 2 * align_up(uint64_t(rows) * out.w() * C));
  };
  if (need(1) > ub_capacity()) {
    return fail(
        fmt::format("layer '{}' does not fit: one pooled output row needs {} bytes of "
                    "unified buffer, the hardware has {}: raise "
                    "buffers.unified_buffer.capacity_bytes to at least {}",
                    l.name, need(1), ub_capacity(), need(1)));
  }
  const int rows = largest_fitting(out.h(), [&](int r) { return need(r) <= ub_capacity(); });
  rec.tiling = fmt::format("blocks of {} output rows, ub {} B", rows, need(rows));
  const uint64_t slab_bytes = in_res ? 0 : align_up(uint64_t(planes_max) * rows_in(rows) * W * C);
  const uint64_t out_bytes = align_up(uint64_t(rows) * out.w() * C);
  const uint64_t in_addr = in_res ? ub_addr(l.inputs[0]) : dram_addr(l.inputs[0]);
  const uint64_t out_addr = out_res ? ub_addr(l.output) : dram_addr(l.output);
  const uint64_t plane = uint64_t(H) * W * C;
  int block = 0;
  for (int img = 0; img < graph_.batch; ++img) {
    for (int od = 0; od < out.d(); ++od) {
      const int front = od * l.strides[0] - l.pads_begin[0];
      const int iz_lo = std::max(0, front), iz_hi = std::min(D, front + l.kernel[0]);
      for (int oh0 = 0; oh0 < out.h(); oh0 += rows, ++block) {
        const int r = std::min(rows, out.h() - oh0);
        const int top = oh0 * l.strides[1] - l.pads_begin[1];
        // A resident input is read in place: all its rows are the slab.
        const int ih_lo = in_res ? 0 : std::max(0, top);
        const int ih_hi =
            in_res ? H : std::min(H, (oh0 + r - 1) * l.strides[1] - l.pads_begin[1] + l.kernel[1]);
        const uint64_t in_off = ((uint64_t(img) * D + iz_lo) * H + ih_lo) * W * C;
        const uint64_t out_off = ((uint64_t(img) * out.d() + od) * out.h() + oh0) * out.w() * C;
        const uint64_t slab = in_res ? in_addr + in_off : scratch_base() + (block % 2) * slab_bytes;
        const uint64_t dst = out_res ? out_addr + out_off
                                     : scratch_base() + 2 * slab_bytes + (block % 2) * out_bytes;
        const uint64_t row_bytes = uint64_t(ih_hi - ih_lo) * W * C;
        if (!in_res) {
          dma(UnitKind::kDmaLoad, BufferId::kUnified, slab, in_addr + in_off, row_bytes,
              iz_hi - iz_lo, plane);
        }
        PoolOp p = pool_op(l);
        p.in_ub_addr = slab;
        p.slab_d = iz_hi - iz_lo, p.slab_h = ih_hi - ih_lo, p.slab_w = W, p.c = in.last();
        p.origin_z = front - iz_lo, p.origin_y = top - ih_lo, p.origin_x = -l.pads_begin[2];
        p.out_h = r, p.out_w = out.w();
        p.out_ub_addr = dst;
        const uint64_t dst_bytes = uint64_t(r) * out.w() * C;  // C is in bytes
        emit(UnitKind::kVector, 0, p,
             {{BufferId::kUnified, slab, slab + uint64_t(p.slab_d) * row_bytes, false},
              {BufferId::kUnified, dst, dst + dst_bytes, true}});
        if (!out_res) dma_linear(UnitKind::kDmaStore, dst, out_addr + out_off, dst_bytes);
      }
    }
  }
  return true;
}

// Softmax, layer norm and table activations stream blocks of rows through the unified buffer:
// load, compute on the vector unit, store.
bool Lowering::lower_rows(const Layer& l, LayerRecord& rec) {
  const bool elementwise = l.kind == OpKind::kActivation;
  const uint64_t total_rows = uint64_t(graph_.batch) * l.out_shape.outer();
  const uint64_t length = elementwise ? 1 : l.out_shape.last();
  const uint64_t row_bytes = length * es_;
  const uint64_t rows_total = elementwise ? total_rows * l.out_shape.last() : total_rows;
  const uint64_t params_bytes = l.kind == OpKind::kLayerNorm ? align_up(8 * length) : 0;
  const bool in_res = resident(l.inputs[0]), out_res = resident(l.output);
  // Two input and two output blocks of rows (unless resident), plus the layer-norm parameters.
  const int streamed = 2 * (!in_res + !out_res);
  auto need = [&](uint64_t rows) { return streamed * align_up(rows * row_bytes) + params_bytes; };
  if (need(1) > ub_capacity()) {
    return fail(
        fmt::format("layer '{}' does not fit: a row of {} values needs {} bytes of unified "
                    "buffer, the hardware has {}",
                    l.name, length, need(1), ub_capacity()));
  }
  const uint64_t block_rows = static_cast<uint64_t>(
      largest_fitting(static_cast<int>(std::min<uint64_t>(rows_total, 1u << 30)),
                      [&](int r) { return need(static_cast<uint64_t>(r)) <= ub_capacity(); }));
  rec.tiling = fmt::format("blocks of {} rows of {}", block_rows, length);
  if (!l.in_row_scales.empty()) rec.tiling += ", per-row input scales";
  const uint64_t in_addr = in_res ? ub_addr(l.inputs[0]) : dram_addr(l.inputs[0]);
  const uint64_t out_addr = out_res ? ub_addr(l.output) : dram_addr(l.output);
  const uint64_t block_bytes = align_up(block_rows * row_bytes);
  const uint64_t params_ub = scratch_base() + streamed * block_bytes;
  if (l.kind == OpKind::kLayerNorm) {
    dma(UnitKind::kDmaLoad, BufferId::kUnified, params_ub, params_.at(l.name).norm, 8 * length, 1,
        0);
  }
  const int table = elementwise ? lut(l.lut) : -1;
  int block = 0;
  for (uint64_t r0 = 0; r0 < rows_total; r0 += block_rows, ++block) {
    const uint64_t r = std::min(block_rows, rows_total - r0);
    const uint64_t bytes = r * row_bytes;
    const uint64_t src =
        in_res ? in_addr + r0 * row_bytes : scratch_base() + (block % 2) * block_bytes;
    const uint64_t dst = out_res ? out_addr + r0 * row_bytes
                                 : scratch_base() + (2 * !in_res + block % 2) * block_bytes;
    if (!in_res) dma_linear(UnitKind::kDmaLoad, src, in_addr + r0 * row_bytes, bytes);
    if (l.kind == OpKind::kLayerNorm) {
      // One instruction per run of rows on one input scale: the whole block, unless the input has
      // per-row scales (row_scales.hpp), which the instruction has one of.
      for (uint64_t a = 0; a < r;) {
        const float scale = l.in_scale_at(0, (r0 + a) * length);
        uint64_t b = a + 1;
        while (b < r && l.in_scale_at(0, (r0 + b) * length) == scale) ++b;
        const uint64_t s = src + a * row_bytes, d = dst + a * row_bytes, n = (b - a) * row_bytes;
        emit(UnitKind::kVector, 0,
             LayerNormOp{s, d, params_ub, static_cast<int>(b - a), static_cast<int>(length), scale,
                         1.0f / l.out_scale, l.epsilon, l.rms},
             {{BufferId::kUnified, s, s + n, false},
              {BufferId::kUnified, d, d + n, true},
              {BufferId::kUnified, params_ub, params_ub + 8 * length, false}});
        a = b;
      }
    } else {
      Operation op;
      if (l.kind == OpKind::kSoftmax) {
        op = SoftmaxOp{src, dst, static_cast<int>(r), static_cast<int>(length), l.in_scales[0]};
      } else {
        op = LutOp{src, dst, r, table, l.activation, l.clip_min, l.clip_max};
      }
      emit(UnitKind::kVector, 0, op,
           {{BufferId::kUnified, src, src + bytes, false},
            {BufferId::kUnified, dst, dst + bytes, true}});
    }
    if (!out_res) dma_linear(UnitKind::kDmaStore, dst, out_addr + r0 * row_bytes, bytes);
  }
  return true;
}

bool Lowering::lower_eltwise(const Layer& l, LayerRecord& rec) {
  const uint64_t total = uint64_t(graph_.batch) * l.out_shape.elements() * es_;
  // Operands a, b, out: resident ones in place, the others in double-buffered chunks.
  const std::string* names[3] = {&l.inputs[0], &l.inputs[1], &l.output};
  int streamed = 0;
  for (const std::string* n : names) streamed += !resident(*n);
  const uint64_t chunk = std::min<uint64_t>(
      {total, uint64_t(1) << 30,
       streamed == 0 ? total : ub_capacity() / (2 * streamed) / kAlign * kAlign});
  rec.tiling = fmt::format("chunks of {} bytes", chunk);
  const bool row_scales = !l.in_row_scales.empty() || !l.out_row_scales.empty();
  if (row_scales) rec.tiling += ", per-row scales";
  const int table = lut(l.lut);
  // Per-row scales: the ratios change only at multiples of every row-scaled operand's row.
  uint64_t row_step = 0;
  for (size_t k = 0; k <= l.in_row_scales.size(); ++k) {
    const bool out = k == l.in_row_scales.size();
    const std::vector<float>& rows = out ? l.out_row_scales : l.in_row_scales[k];
    if (rows.empty()) continue;
    const uint64_t row = (out ? l.out_shape : l.in_shapes[k]).elements() / rows.size();
    row_step = row_step == 0 ? row : std::gcd(row_step, row);
  }
  int block = 0;
  for (uint64_t off = 0; off < total; off += chunk, ++block) {
    const uint64_t bytes = std::min(chunk, total - off);
    uint64_t at[3];
    uint64_t slot = scratch_base() + (block % 2) * streamed * chunk;
    for (int i = 0; i < 3; ++i) {
      if (resident(*names[i])) {
        at[i] = ub_addr(*names[i]) + off;
      } else {
        at[i] = slot;
        slot += chunk;
        if (i < 2) dma_linear(UnitKind::kDmaLoad, at[i], dram_addr(*names[i]) + off, bytes);
      }
    }
    // One instruction per run of elements on one pair of ratios: the whole chunk, unless an
    // operand has per-row scales (row_scales.hpp).
    for (uint64_t e0 = off / es_, end = (off + bytes) / es_; e0 < end;) {
      EltwiseOp e = eltwise_op(l, table);
      uint64_t e1 = end;
      if (row_scales) {
        e.ra = l.input_ratio_at(0, e0), e.rb = l.input_ratio_at(1, e0);
        e1 = std::min(end, (e0 / row_step + 1) * row_step);
        while (e1 < end && l.input_ratio_at(0, e1) == e.ra && l.input_ratio_at(1, e1) == e.rb) {
          e1 = std::min(end, e1 + row_step);
        }
      }
      const uint64_t skip = e0 * es_ - off, n = (e1 - e0) * es_;
      const uint64_t a = at[0] + skip, b = at[1] + skip, out = at[2] + skip;
      e.a_ub_addr = a, e.b_ub_addr = b, e.out_ub_addr = out;
      e.rows = 1, e.cols = static_cast<int>(n / es_);
      e.a_ld = e.b_ld = e.out_ld = e.cols;
      emit(UnitKind::kVector, 0, e,
           {{BufferId::kUnified, a, a + n, false},
            {BufferId::kUnified, b, b + n, false},
            {BufferId::kUnified, out, out + n, true}});
      e0 = e1;
    }
    const uint64_t out = at[2];
    if (!resident(l.output)) dma_linear(UnitKind::kDmaStore, out, dram_addr(l.output) + off, bytes);
  }
  return true;
}

// Concat along channels: each input's rows are loaded, rescaled to the output scale into their
// columns of the output block, and the block is stored once.
bool Lowering::lower_concat(const Layer& l, LayerRecord& rec) {
  const uint64_t total_rows = uint64_t(graph_.batch) * l.out_shape.outer();
  const int C = l.out_shape.last();
  // Resident inputs are rescaled in place, the others loaded a block at a time; a resident output
  // is written in place.
  int widest = 0;
  for (size_t i = 0; i < l.inputs.size(); ++i) {
    if (!resident(l.inputs[i])) widest = std::max(widest, l.in_shapes[i].last());
  }
  const bool out_res = resident(l.output);
  const uint64_t per_row = (2 * uint64_t(widest) + (out_res ? 0 : 2 * uint64_t(C))) * es_;
  if (per_row > ub_capacity()) {
    return fail(
        fmt::format("layer '{}' does not fit: one row of the concatenation needs {} bytes "
                    "of unified buffer, the hardware has {}",
                    l.name, per_row, ub_capacity()));
  }
  const uint64_t rows = std::min<uint64_t>(
      {total_rows, uint64_t(1) << 30, per_row == 0 ? total_rows : ub_capacity() / per_row});
  rec.tiling = fmt::format("blocks of {} rows of {} channels", rows, C);
  const uint64_t in_block = align_up(rows * widest * es_), out_block = align_up(rows * C * es_);
  int block = 0, load = 0;
  for (uint64_t r0 = 0; r0 < total_rows; r0 += rows, ++block) {
    const uint64_t r = std::min(rows, total_rows - r0);
    const uint64_t out = out_res ? ub_addr(l.output) + r0 * C * es_
                                 : scratch_base() + 2 * in_block + (block % 2) * out_block;
    int offset = 0;
    for (size_t i = 0; i < l.inputs.size(); ++i) {
      const int ci = l.in_shapes[i].last();
      uint64_t src = 0;
      if (resident(l.inputs[i])) {
        src = ub_addr(l.inputs[i]) + r0 * ci * es_;
      } else {
        src = scratch_base() + (load++ % 2) * in_block;
        dma_linear(UnitKind::kDmaLoad, src, dram_addr(l.inputs[i]) + r0 * ci * es_, r * ci * es_);
      }
      EltwiseOp e;
      e.kind = EltwiseKind::kRescale;
      e.a_ub_addr = src, e.out_ub_addr = out + offset;
      e.rows = static_cast<int>(r), e.cols = ci;
      e.a_ld = ci, e.out_ld = C;
      e.out_ub_addr = out + offset * es_;
      e.ra = l.input_ratios.empty() ? 1.0f : l.input_ratios[i];
      emit(UnitKind::kVector, 0, e,
           {{BufferId::kUnified, src, src + r * ci * es_, false},
            {BufferId::kUnified, out + offset * es_, out + ((r - 1) * C + offset + ci) * es_,
             true}});
      offset += ci;
    }
    if (!out_res)
      dma_linear(UnitKind::kDmaStore, out, dram_addr(l.output) + r0 * C * es_, r * C * es_);
  }
  return true;
}

}  // namespace npusim::lowering
