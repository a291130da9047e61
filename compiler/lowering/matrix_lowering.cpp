// Conv, dense and matmul layers: blocks of output rows x channels, array-sized MATMUL tiles per
// dataflow, the REQUANT epilogue and the store (docs/architecture.md, "How a layer is tiled").
#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "compiler/lowering/lowering_context.hpp"
#include "compiler/lowering/tensor_parallel.hpp"
#include "support/error.hpp"

namespace npusim::lowering {

// One conv / dense / matmul layer being lowered: its geometry and tiling, where its operands sit
// in the buffers, and the state of the block loop (the loaded slab and weights, the parities of
// the double buffers). Blocks are emitted in the tiling's loop order by `block`.
class Lowering::MatrixLayer {
 public:
  MatrixLayer(Lowering& lo, const Layer& l, const ConvGeometry& g, const ConvTiling& t);

  std::string describe() const;
  // The program's requantization table and activation table of the layer (-1: none), and the
  // activation table of each fused epilogue stage.
  void set_tables(int requant, int lut, std::vector<int> stage_luts) {
    table_ = requant;
    table_lut_ = lut;
    stage_luts_ = std::move(stage_luts);
  }
  // The output channels [begin, end) the next blocks compute, on a core of their own: the state
  // of the block loop starts afresh (a core loads its own slabs, weights and biases).
  void set_columns(int begin, int end);
  void load_resident_weights();
  void emit_all_blocks();

 private:
  struct SpatialBlock {
    int img, od, oh0, rows;
  };
  // The matrix unit, accumulator block and weights one channel block of one K chunk works on.
  struct TileTarget {
    int unit = 0;
    uint64_t acc = 0;
    uint64_t wb = 0, wb_end = 0;
    int w_ld = 0;
    int kc0 = 0, k_cb = 0;  // the K chunk
    int m_blk = 0;          // output pixels of the block
    int n0 = 0, n_tb = 0;   // the channel block
  };

  void load_weights(uint64_t wb, uint64_t src_image, int kc0, int k_cb, int n0, int n_cb);
  // The layer's biases, once, before its first REQUANT.
  void load_bias();
  void load_slab(int bi);
  void set_window(int origin_z, int origin_y);
  // Spatial blocks [bi, bi + count) (whole images of a resident input) x channel block nb; the
  // images share each streamed weight chunk.
  void block(int bi, int count, int nb);
  // Spatial block bi x channel blocks [nb0, nb1), one per matrix unit (the tiling's unit_groups):
  // each K chunk of the group's columns comes in one DMA box and every unit works on its columns.
  void block_group(int bi, int nb0, int nb1);
  // The next accumulator block of channel block nb, on its unit.
  TileTarget target_of(const SpatialBlock& sb, int nb);
  // Points `target` at the weights of K chunk [kc0, kc0 + k_cb), loading them when they stream.
  void place_weights(TileTarget& target, int img);
  // The j-th image of a block of several: its own accumulators after the earlier images'.
  TileTarget at_image(TileTarget target, int j) const {
    target.acc += uint64_t(j) * target.m_blk * target.n_tb * 4;
    return target;
  }
  // One group's channels [c_lo, c_hi) of the channel block, split into array tiles per dataflow.
  void emit_group_tiles(const TileTarget& target, int grp, int c_lo, int c_hi);
  void emit_tile(const TileTarget& target, int grp, int c_lo, int m_off, int m, int k_off, int kk,
                 int n_off, int n);
  // REQUANT of the block's accumulators into the output block (or the resident output in place),
  // the fused stages on that block (residual add, pool), then the store off chip unless the output
  // is resident.
  void emit_epilogue(const TileTarget& target, const SpatialBlock& sb);
  // Where an epilogue reads `pixels` pixels x channels [n0, n0 + n_tb) of `tensor` (laid out like
  // this layer's output) from output pixel `pixel` on: a resident tensor in place (rows g.n
  // apart), else one DMA brings them to unified buffer address `ub`, packed (`fetched`).
  struct BlockRef {
    uint64_t addr;
    int ld;
    bool fetched;
  };
  BlockRef fetch_output_block(const std::string& tensor, uint64_t pixel, int pixels, int n0,
                              int n_tb, uint64_t ub);

  Lowering& lo_;
  const Layer& l_;
  const ConvGeometry g_;
  const ConvTiling t_;
  const MatrixUnitConfig& mu_;
  const int es_;
  const int k_;
  const bool matmul_;  // the weights are the second input, per image
  // An operand resident in the unified buffer is read (written) in place; else it streams through
  // slabs (output blocks) in the layer's scratch range.
  const bool in_resident_, out_resident_;
  const uint64_t in_addr_, out_addr_;  // unified-buffer or off-chip address of the tensors
  const Params params_;
  const uint64_t weights_per_image_;
  // Scratch (tiling.cpp's conv_scratch): two input slabs unless the input is resident, two output
  // blocks unless the output is resident and written in place, the bias, then for a fused
  // epilogue two blocks per residual operand off chip and two pooled blocks unless the output is
  // resident (the pool writes it in place).
  const bool pool_, in_place_;  // a fused pool; REQUANT (and ADD) write the resident output
  const uint64_t pixel_bytes_, plane_bytes_, slab_bytes_, block_bytes_, out_bytes_;
  const uint64_t scratch_, out_ub_, bias_ub_, residual_ub_, pooled_ub_, pooled_bytes_;
  const uint64_t wb_half_, acc_unit_, acc_block_;
  int table_ = -1, table_lut_ = -1;
  std::vector<int> stage_luts_;
  int n_lo_ = 0, n_hi_ = 0;  // the columns of set_columns; resident weights hold only them
  std::vector<SpatialBlock> blocks_;
  bool block_weights_fit_ = false;
  bool bias_loaded_ = false;

  int slab_parity_ = 0, chunk_index_ = 0, out_index_ = 0;
  int loaded_block_ = -1, loaded_image_ = -1, loaded_n_block_ = -1;
  std::vector<int> acc_parity_;
  uint64_t resident_wb_ = 0, block_wb_ = 0;
  uint64_t slab_ = 0, slab_end_ = 0;
  ActivationView view_;
};

Lowering::MatrixLayer::MatrixLayer(Lowering& lo, const Layer& l, const ConvGeometry& g,
                                   const ConvTiling& t)
    : lo_(lo),
      l_(l),
      g_(g),
      t_(t),
      mu_(lo.hw_.matrix_unit),
      es_(lo.es_),
      k_(static_cast<int>(g.k())),
      matmul_(l.kind == OpKind::kMatMul),
      in_resident_(lo.resident(l.inputs[0])),
      out_resident_(lo.resident(l.output)),
      in_addr_(in_resident_ ? lo.ub_addr(l.inputs[0]) : lo.dram_addr(l.inputs[0])),
      out_addr_(out_resident_ ? lo.ub_addr(l.output) : lo.dram_addr(l.output)),
      params_(matmul_ ? Params{lo.dram_addr(l.inputs[1]), 0, 0} : lo.params_.at(l.name)),
      weights_per_image_(matmul_ ? uint64_t(k_) * g.n * es_ : 0),
      pool_(g.pool),
      in_place_(out_resident_ && !g.pool),
      pixel_bytes_(uint64_t(g.c) * es_),
      plane_bytes_(uint64_t(g.h) * g.w * pixel_bytes_),
      slab_bytes_(in_resident_ ? 0
                               : align_up(uint64_t(slab_planes(g)) * slab_rows(g, t.out_rows) *
                                          g.w * pixel_bytes_)),
      block_bytes_(align_up(uint64_t(t.out_rows) * g.out_w * t.n_tile * es_)),
      out_bytes_(in_place_ ? 0 : block_bytes_),
      scratch_(lo.scratch_base()),
      out_ub_(scratch_ + 2 * slab_bytes_),
      bias_ub_(out_ub_ + 2 * out_bytes_),
      residual_ub_(bias_ub_ + align_up(4ull * g.n)),
      pooled_ub_(residual_ub_ +
                 2 * block_bytes_ *
                     (g.residuals -
                      resident_residuals(l, [&](const std::string& n) { return lo.resident(n); }))),
      pooled_bytes_(pool_ && !out_resident_ ? align_up(uint64_t(t.out_rows / g.pool_h) *
                                                       (g.out_w / g.pool_w) * t.n_tile * es_)
                                            : 0),
      wb_half_(lo.hw_.weight_buffer.capacity_bytes / 2),
      acc_unit_(lo.hw_.accumulators.capacity_bytes / mu_.count / 8 * 8),  // as tiling's acc_half
      acc_block_(uint64_t(t.out_rows) * g.out_w * t.n_tile * 4),
      acc_parity_(mu_.count, 0) {
  for (int img = 0; img < g.images; ++img)
    for (int od = 0; od < g.out_d; ++od)
      for (int oh0 = 0; oh0 < g.out_h; oh0 += t.out_rows)
        blocks_.push_back({img, od, oh0, std::min(t.out_rows, g.out_h - oh0)});
  block_weights_fit_ = uint64_t(k_) * t.n_tile * es_ <= wb_half_;
  n_hi_ = g.n;
}

void Lowering::MatrixLayer::set_columns(int begin, int end) {
  NPUSIM_CHECK(0 <= begin && begin < end && end <= g_.n, "layer {}: columns [{}, {}) of {}",
               l_.name, begin, end, g_.n);
  n_lo_ = begin, n_hi_ = end;
  slab_parity_ = chunk_index_ = out_index_ = 0;
  loaded_block_ = loaded_image_ = loaded_n_block_ = -1;
  std::fill(acc_parity_.begin(), acc_parity_.end(), 0);
  bias_loaded_ = false;
}

std::string Lowering::MatrixLayer::describe() const {
  return fmt::format(
      "{} image(s) {}x{}x{}x{} -> {}x{}x{}x{}, K={}{}{}; blocks of {} output rows x {} channels{}, "
      "weights {} (k chunk {}), ub {} B, wb {} B, acc {} B; loop order: {} outside (estimated {} "
      "B off-chip, other order {} B)",
      g_.images, g_.d, g_.h, g_.w, g_.c, g_.out_d, g_.out_h, g_.out_w, g_.n, k_,
      g_.groups > 1 ? fmt::format(", {} groups", g_.groups) : "",
      g_.k_rows > 0 ? fmt::format(", {}:{} sparse tiles of {} rows of K", mu_.sparse_n,
                                  mu_.sparse_m, g_.k_rows)
                    : "",
      t_.out_rows, t_.n_tile,
      t_.images_per_block > 1 ? fmt::format(" x {} images", t_.images_per_block) : "",
      t_.weights_resident ? "resident"
      : t_.unit_groups    ? fmt::format("streamed to {} units at once", mu_.count)
                          : "streamed",
      t_.k_chunk, t_.ub_bytes, t_.wb_bytes, t_.acc_bytes,
      t_.channels_outside ? "channel blocks" : "spatial blocks", t_.dram_bytes,
      t_.dram_bytes_other_order);
}

void Lowering::MatrixLayer::load_weights(uint64_t wb, uint64_t src_image, int kc0, int k_cb, int n0,
                                         int n_cb) {
  const uint64_t src = params_.weights + src_image * weights_per_image_;
  if ((l_.compress_weights || l_.int4_weights || l_.fp8 != Fp8Format::kNone) && !matmul_ &&
      lo_.load_compressed_weights(l_, wb, WeightBox{kc0, k_cb, n0, n_cb, g_.n})) {
    return;
  } else if (l_.int4_weights && es_ == 1) {  // two to a byte off chip (memory_plan.cpp), n even
    NPUSIM_CHECK(n0 % 2 == 0 && n_cb % 2 == 0 && g_.n % 2 == 0,
                 "layer {}: int4 weights of columns [{}, {}) of {}", l_.name, n0, n0 + n_cb, g_.n);
    lo_.dma(UnitKind::kDmaLoad, BufferId::kWeight, wb, src + (uint64_t(kc0) * g_.n + n0) / 2,
            n_cb / 2, k_cb, uint64_t(g_.n) / 2, false, true);
  } else if (matmul_ && l_.transpose_b) {  // the second input is [N][K]: load it transposed
    lo_.dma(UnitKind::kDmaLoad, BufferId::kWeight, wb, src + (uint64_t(n0) * k_ + kc0) * es_,
            k_cb * es_, n_cb, uint64_t(k_) * es_, true);
  } else {
    lo_.dma(UnitKind::kDmaLoad, BufferId::kWeight, wb, src + (uint64_t(kc0) * g_.n + n0) * es_,
            n_cb * es_, k_cb, uint64_t(g_.n) * es_);
  }
}

void Lowering::MatrixLayer::load_resident_weights() {
  if (t_.weights_resident && !matmul_) {
    resident_wb_ = lo_.weight_half_ * wb_half_;
    lo_.weight_half_ ^= 1;
    load_weights(resident_wb_, 0, 0, k_, n_lo_, n_hi_ - n_lo_);
  }
}

void Lowering::MatrixLayer::emit_all_blocks() {
  const int n_blocks = ceil_div(n_hi_ - n_lo_, t_.n_tile);
  const int n_spatial = static_cast<int>(blocks_.size());
  const int step = t_.images_per_block;
  if (t_.channels_outside) {
    for (int nb = 0; nb < n_blocks; ++nb)
      for (int bi = 0; bi < n_spatial; ++bi) block(bi, 1, nb);
  } else if (t_.unit_groups) {
    for (int bi = 0; bi < n_spatial; ++bi)
      for (int nb = 0; nb < n_blocks; nb += mu_.count)
        block_group(bi, nb, std::min(n_blocks, nb + mu_.count));
  } else {
    for (int bi = 0; bi < n_spatial; bi += step)
      for (int nb = 0; nb < n_blocks; ++nb) block(bi, std::min(step, n_spatial - bi), nb);
  }
}

// Brings spatial block bi's input slab into the next slab buffer; the activation view tells the
// address generator where the block's windows start in it.
void Lowering::MatrixLayer::load_slab(int bi) {
  const SpatialBlock& sb = blocks_[bi];
  loaded_block_ = bi;
  if (in_resident_) {  // the whole image is the slab, in place
    view_ = ActivationView{};
    view_.ub_addr = in_addr_ + uint64_t(sb.img) * g_.d * plane_bytes_;
    view_.slab_d = g_.d;
    view_.slab_h = g_.h;
    set_window(sb.od * g_.stride_d - g_.pad_front, sb.oh0 * g_.stride_h - g_.pad_top);
    slab_ = view_.ub_addr;
    slab_end_ = slab_ + uint64_t(g_.d) * plane_bytes_;
    return;
  }
  const int front = sb.od * g_.stride_d - g_.pad_front;
  const int iz_lo = std::max(0, front);
  const int iz_hi = std::min(g_.d, front + g_.dilation_d * (g_.kernel_d - 1) + 1);
  const int top = sb.oh0 * g_.stride_h - g_.pad_top;
  const int ih_lo = std::max(0, top);
  const int ih_hi = std::min(g_.h, (sb.oh0 + sb.rows - 1) * g_.stride_h - g_.pad_top +
                                       g_.dilation_h * (g_.kernel_h - 1) + 1);
  slab_ = scratch_ + (slab_parity_ == 0 ? 0 : slab_bytes_);
  slab_parity_ ^= 1;
  const int planes = std::max(iz_hi - iz_lo, 0), slab_h = std::max(ih_hi - ih_lo, 0);
  const uint64_t row_bytes = uint64_t(slab_h) * g_.w * pixel_bytes_;
  if (planes > 0 && slab_h > 0) {
    lo_.dma(UnitKind::kDmaLoad, BufferId::kUnified, slab_,
            in_addr_ + ((uint64_t(sb.img) * g_.d + iz_lo) * g_.h + ih_lo) * g_.w * pixel_bytes_,
            row_bytes, planes, plane_bytes_);
  }
  view_ = ActivationView{};
  view_.ub_addr = slab_;
  view_.slab_d = planes;
  view_.slab_h = slab_h;
  set_window(front - iz_lo, top - ih_lo);
  slab_end_ = slab_ + uint64_t(planes) * row_bytes;
}

// The view's geometry: the slab's width and channels, the window, and where output pixel 0's
// window starts in the slab (z, y; x is the left padding).
void Lowering::MatrixLayer::set_window(int origin_z, int origin_y) {
  view_.slab_w = g_.w;
  view_.slab_c = g_.c;
  view_.kernel_d = g_.kernel_d, view_.kernel_h = g_.kernel_h, view_.kernel_w = g_.kernel_w;
  view_.stride_h = g_.stride_h, view_.stride_w = g_.stride_w;
  view_.dilation_d = g_.dilation_d, view_.dilation_h = g_.dilation_h;
  view_.dilation_w = g_.dilation_w;
  view_.origin_z = origin_z;
  view_.origin_y = origin_y;
  view_.origin_x = -g_.pad_left;
  view_.out_w = g_.out_w;
  view_.window_c = g_.cin_g();
}

// Spatial block bi x channel block nb: slab and weights in, tiles per K chunk and group, then the
// epilogue and the store.
void Lowering::MatrixLayer::block(int bi, int count, int nb) {
  const SpatialBlock& sb = blocks_[bi];
  if (t_.weights_resident && matmul_ && loaded_image_ != sb.img) {
    resident_wb_ = lo_.weight_half_ * wb_half_;
    lo_.weight_half_ ^= 1;
    load_weights(resident_wb_, sb.img, 0, k_, n_lo_, n_hi_ - n_lo_);
    loaded_image_ = sb.img;
  }
  if (loaded_block_ != bi) load_slab(bi);

  TileTarget target = target_of(sb, nb);
  if (t_.channels_outside && block_weights_fit_ && loaded_n_block_ != nb) {
    block_wb_ = (chunk_index_++ % 2) * wb_half_;  // this channel block's K x n weights, once
    load_weights(block_wb_, 0, 0, k_, target.n0, target.n_tb);
    loaded_n_block_ = nb;
  }
  const int cout_g = g_.cout_g();
  for (int kc0 = 0; kc0 < k_; kc0 += t_.k_chunk) {
    target.kc0 = kc0;
    target.k_cb = std::min(t_.k_chunk, k_ - kc0);
    place_weights(target, sb.img);
    const int n0 = target.n0, n_end = target.n0 + target.n_tb;
    for (int j = 0; j < count; ++j) {
      if (loaded_block_ != bi + j) load_slab(bi + j);
      const TileTarget image = at_image(target, j);
      for (int grp = n0 / cout_g; grp * cout_g < n_end; ++grp) {
        emit_group_tiles(image, grp, std::max(n0, grp * cout_g),
                         std::min(n_end, (grp + 1) * cout_g));
      }
    }
  }
  load_bias();
  for (int j = 0; j < count; ++j) emit_epilogue(at_image(target, j), blocks_[bi + j]);
}

Lowering::MatrixLayer::TileTarget Lowering::MatrixLayer::target_of(const SpatialBlock& sb, int nb) {
  TileTarget target;
  target.m_blk = sb.rows * g_.out_w;
  target.unit = nb % mu_.count;
  target.n0 = n_lo_ + nb * t_.n_tile;
  target.n_tb = std::min(t_.n_tile, n_hi_ - target.n0);
  target.acc = target.unit * acc_unit_ + acc_parity_[target.unit] * (acc_unit_ / 2);
  acc_parity_[target.unit] ^= 1;
  return target;
}

void Lowering::MatrixLayer::load_bias() {
  if (matmul_ || bias_loaded_) return;
  // The biases come just before the first REQUANT needs them: loaded earlier, the DMA load queue
  // would hold this layer's weights back until its scratch range is free of the previous layer's
  // operands, and the weights could not prefetch.
  lo_.dma(UnitKind::kDmaLoad, BufferId::kUnified, bias_ub_ + 4ull * n_lo_,
          params_.bias + 4ull * n_lo_, 4ull * (n_hi_ - n_lo_), 1, 0);
  bias_loaded_ = true;
}

void Lowering::MatrixLayer::block_group(int bi, int nb0, int nb1) {
  const SpatialBlock& sb = blocks_[bi];
  NPUSIM_CHECK(!matmul_ && !t_.weights_resident && nb1 - nb0 <= mu_.count,
               "layer {}: a unit group of channel blocks [{}, {})", l_.name, nb0, nb1);
  if (loaded_block_ != bi) load_slab(bi);
  std::vector<TileTarget> targets;
  for (int nb = nb0; nb < nb1; ++nb) targets.push_back(target_of(sb, nb));
  const int n0 = targets.front().n0;
  const int width = targets.back().n0 + targets.back().n_tb - n0;
  for (int kc0 = 0; kc0 < k_; kc0 += t_.k_chunk) {
    const int k_cb = std::min(t_.k_chunk, k_ - kc0);
    const uint64_t wb = (chunk_index_++ % 2) * wb_half_;
    load_weights(wb, sb.img, kc0, k_cb, n0, width);
    for (TileTarget& target : targets) {
      target.kc0 = kc0;
      target.k_cb = k_cb;
      target.wb = wb + uint64_t(target.n0 - n0) * es_;
      target.w_ld = width;
      target.wb_end = target.wb + (uint64_t(k_cb - 1) * width + target.n_tb) * es_;
      emit_group_tiles(target, 0, target.n0, target.n0 + target.n_tb);
    }
  }
  load_bias();
  for (const TileTarget& target : targets) emit_epilogue(target, sb);
}

void Lowering::MatrixLayer::place_weights(TileTarget& target, int img) {
  const int kc0 = target.kc0, n0 = target.n0, n_tb = target.n_tb;
  if (t_.weights_resident) {
    target.wb = resident_wb_ + (uint64_t(kc0) * (n_hi_ - n_lo_) + n0 - n_lo_) * es_;
    target.w_ld = n_hi_ - n_lo_;
  } else if (t_.channels_outside && block_weights_fit_) {
    target.wb = block_wb_ + uint64_t(kc0) * n_tb * es_;
    target.w_ld = n_tb;
  } else {
    target.wb = (chunk_index_++ % 2) * wb_half_;
    target.w_ld = n_tb;
    load_weights(target.wb, img, kc0, target.k_cb, n0, n_tb);
  }
  target.wb_end = target.wb + (uint64_t(target.k_cb - 1) * target.w_ld + n_tb) * es_;
}

void Lowering::MatrixLayer::emit_group_tiles(const TileTarget& target, int grp, int c_lo,
                                             int c_hi) {
  const int width = c_hi - c_lo, m_blk = target.m_blk, k_cb = target.k_cb;
  const int rows = mu_.rows, cols = mu_.cols;
  switch (mu_.dataflow) {
    case Dataflow::kWeightStationary: {  // K <= rows (sparse: K <= k_rows), N <= cols
      const int k_rows = g_.k_rows > 0 ? g_.k_rows : rows;
      for (int n_off = 0; n_off < width; n_off += cols)
        for (int k_off = 0; k_off < k_cb; k_off += k_rows)
          emit_tile(target, grp, c_lo, 0, m_blk, k_off, std::min(k_rows, k_cb - k_off), n_off,
                    std::min(cols, width - n_off));
      break;
    }
    case Dataflow::kOutputStationary:  // M <= rows, N <= cols
      for (int m_off = 0; m_off < m_blk; m_off += rows)
        for (int n_off = 0; n_off < width; n_off += cols)
          emit_tile(target, grp, c_lo, m_off, std::min(rows, m_blk - m_off), 0, k_cb, n_off,
                    std::min(cols, width - n_off));
      break;
    case Dataflow::kInputStationary:  // K <= rows, M <= cols
      for (int m_off = 0; m_off < m_blk; m_off += cols)
        for (int k_off = 0; k_off < k_cb; k_off += rows)
          emit_tile(target, grp, c_lo, m_off, std::min(cols, m_blk - m_off), k_off,
                    std::min(rows, k_cb - k_off), 0, width);
      break;
  }
}

void Lowering::MatrixLayer::emit_tile(const TileTarget& target, int grp, int c_lo, int m_off, int m,
                                      int k_off, int kk, int n_off, int n) {
  const int column = (c_lo - target.n0) + n_off;  // within the channel block
  MatmulOp op;
  op.a = view_;
  op.a.m0 = m_off;
  op.a.k0 = target.kc0 + k_off;
  op.a.c0 = grp * g_.cin_g();
  op.wb_addr = target.wb + (uint64_t(k_off) * target.w_ld + column) * es_;
  op.w_ld = target.w_ld;
  op.acc_addr = target.acc + (uint64_t(m_off) * target.n_tb + column) * 4;
  op.acc_ld = target.n_tb;
  op.m = m, op.k = kk, op.n = n;
  op.accumulate = target.kc0 + k_off > 0;
  if (g_.k_rows > 0) op.sparse_n = mu_.sparse_n, op.sparse_m = mu_.sparse_m;
  if (!matmul_) op.fp8 = l_.fp8, op.a_scale_exp = l_.fp8_input_exp;
  lo_.emit(UnitKind::kMatrix, target.unit, op,
           {{BufferId::kUnified, slab_, slab_end_, false},
            {BufferId::kWeight, target.wb, target.wb_end, false},
            {BufferId::kAccumulator, target.acc, target.acc + acc_block_, true}});
}

void Lowering::MatrixLayer::emit_epilogue(const TileTarget& target, const SpatialBlock& sb) {
  const int m_blk = target.m_blk, n0 = target.n0, n_tb = target.n_tb;
  const int parity = out_index_++ % 2;
  uint64_t pixel = ((uint64_t(sb.img) * g_.out_d + sb.od) * g_.out_h + sb.oh0) * g_.out_w;
  // A resident output without a pool is written in place (rows of the block's channels, g.n
  // apart); else the block goes to an output buffer in the scratch.
  const uint64_t out =
      in_place_ ? out_addr_ + (pixel * g_.n + n0) * es_ : out_ub_ + parity * out_bytes_;
  const int out_ld = in_place_ ? g_.n : n_tb;
  const uint64_t out_end = out + (uint64_t(m_blk - 1) * out_ld + n_tb) * es_;
  RequantOp rq;
  rq.acc_addr = target.acc;
  rq.acc_ld = n_tb;
  rq.has_bias = !matmul_;
  rq.bias_ub_addr = bias_ub_ + uint64_t(n0) * 4;
  rq.out_ub_addr = out;
  rq.out_ld = out_ld;
  rq.m = m_blk;
  rq.n = n_tb;
  rq.table = table_;
  rq.channel0 = n0;
  rq.lo = l_.clamp_lo;
  rq.hi = l_.clamp_hi;
  rq.lut = table_lut_;
  rq.activation = l_.activation;
  rq.clip_min = l_.clip_min, rq.clip_max = l_.clip_max;
  std::vector<BufferAccess> accesses = {
      {BufferId::kAccumulator, target.acc, target.acc + uint64_t(m_blk) * n_tb * 4, false},
      {BufferId::kUnified, out, out_end, true}};
  if (rq.has_bias) {
    accesses.push_back(
        {BufferId::kUnified, rq.bias_ub_addr, rq.bias_ub_addr + uint64_t(n_tb) * 4, false});
  }
  lo_.emit(UnitKind::kVector, 0, rq, accesses);
  // The fused stages on the block; then the store of whichever block came last, unless the output
  // is resident and written in place.
  uint64_t block = out;
  int pixels = m_blk;
  uint64_t residual = residual_ub_ + parity * block_bytes_;
  for (size_t i = 0; i < l_.epilogue.size(); ++i) {
    const Layer& s = l_.epilogue[i];
    if (s.kind == OpKind::kAdd) {
      const BlockRef r =
          fetch_output_block(l_.inputs[s.residual_input], pixel, m_blk, n0, n_tb, residual);
      if (r.fetched) residual += 2 * block_bytes_;
      const uint64_t r_end = r.addr + (uint64_t(m_blk - 1) * r.ld + n_tb) * es_;
      EltwiseOp e = eltwise_op(s, stage_luts_[i]);
      e.a_ub_addr = s.chain_operand == 0 ? out : r.addr;
      e.b_ub_addr = s.chain_operand == 0 ? r.addr : out;
      e.a_ld = s.chain_operand == 0 ? out_ld : r.ld;
      e.b_ld = s.chain_operand == 0 ? r.ld : out_ld;
      e.out_ub_addr = out;
      e.out_ld = out_ld;
      e.rows = m_blk, e.cols = n_tb;
      lo_.emit(UnitKind::kVector, 0, e,
               {{BufferId::kUnified, out, out_end, false},
                {BufferId::kUnified, r.addr, r_end, false},
                {BufferId::kUnified, out, out_end, true}});
      continue;
    }
    // A pool of whole windows (stride = window, no padding; fusion.cpp): the block's rows are a
    // multiple of the window's, so the pooled block is whole rows of the pooled tensor.
    NPUSIM_CHECK(i + 1 == l_.epilogue.size() && sb.rows % g_.pool_h == 0 &&
                     sb.oh0 % g_.pool_h == 0 && g_.out_w % g_.pool_w == 0,
                 "layer {}: pool {} cannot run on a block of {} rows at row {}", l_.name, s.name,
                 sb.rows, sb.oh0);
    PoolOp p = pool_op(s);
    p.in_ub_addr = out;
    p.slab_h = sb.rows, p.slab_w = g_.out_w, p.c = n_tb;
    p.out_h = sb.rows / g_.pool_h, p.out_w = g_.out_w / g_.pool_w;
    pixels = p.out_h * p.out_w;
    pixel = ((uint64_t(sb.img) * g_.out_d + sb.od) * (g_.out_h / g_.pool_h) + sb.oh0 / g_.pool_h) *
            p.out_w;
    // A resident pooled tensor is written in place, its pixels g.n channels apart.
    if (out_resident_) p.out_ld = g_.n;
    block =
        out_resident_ ? out_addr_ + (pixel * g_.n + n0) * es_ : pooled_ub_ + parity * pooled_bytes_;
    p.out_ub_addr = block;
    lo_.emit(UnitKind::kVector, 0, p,
             {{BufferId::kUnified, out, out_end, false},
              {BufferId::kUnified, block, block + p.out_span() * es_, true}});
  }
  if (out_resident_) return;
  lo_.dma(UnitKind::kDmaStore, BufferId::kUnified, block, out_addr_ + (pixel * g_.n + n0) * es_,
          n_tb * es_, pixels, uint64_t(g_.n) * es_);
}

Lowering::MatrixLayer::BlockRef Lowering::MatrixLayer::fetch_output_block(const std::string& tensor,
                                                                          uint64_t pixel,
                                                                          int pixels, int n0,
                                                                          int n_tb, uint64_t ub) {
  const uint64_t offset = (pixel * g_.n + n0) * es_;
  if (lo_.resident(tensor)) return {lo_.ub_addr(tensor) + offset, g_.n, false};  // in place
  lo_.dma(UnitKind::kDmaLoad, BufferId::kUnified, ub, lo_.dram_addr(tensor) + offset, n_tb * es_,
          pixels, uint64_t(g_.n) * es_);
  return {ub, n_tb, true};
}

bool Lowering::lower_matrix(const Layer& l, LayerRecord& rec) {
  ConvGeometry g = conv_geometry(l, graph_.batch, es_);
  const ConvOperands operands{
      ub_capacity(), resident(l.inputs[0]), resident(l.output),
      resident_residuals(l, [&](const std::string& n) { return resident(n); })};
  // On an N:M sparse array, a layer whose weights have the structure runs sparse tiles
  // (models/systolic/sparsity.hpp) of rows / N * M rows of K, when such tiles fit the buffers.
  const MatrixUnitConfig& mu = hw_.matrix_unit;
  TilingResult tr;
  if (mu.sparse_n > 0 && has_nm_structure(l, mu.sparse_n, mu.sparse_m)) {
    g.k_rows = mu.rows / mu.sparse_n * mu.sparse_m;
    tr = choose_conv_tiling(hw_, g, l.name, operands);
    if (!tr.ok) g.k_rows = 0;
  }
  if (!tr.ok) tr = choose_conv_tiling(hw_, g, l.name, operands);
  if (!tr.ok) return fail(tr.reason);
  MatrixLayer layer(*this, l, g, tr.tiling);
  rec.tiling = layer.describe();
  if (const auto it = compressed_.find(l.name); it != compressed_.end()) {
    rec.tiling +=
        fmt::format("; weights stored {} off chip, {} of {} B", to_string(it->second.format),
                    it->second.bytes, it->second.dense_bytes);
  }
  const int table = l.requant.empty() ? -1 : requant_table(l.requant);
  std::vector<int> stage_luts;
  for (const Layer& s : l.epilogue) stage_luts.push_back(lut(s.lut));
  layer.set_tables(table, lut(l.lut), std::move(stage_luts));
  // Split over cores (tensor_parallel.hpp): each core the same blocks of its own columns, its
  // resident weights in the same half of its own weight buffer.
  const std::vector<ColumnRange> columns =
      split_columns(g.n, hw_.matrix_unit.cols, layer_cores(size_t(layer_index_)));
  const int half = weight_half_, base = core_;
  for (size_t c = 0; c < columns.size(); ++c) {
    core_ = base + int(c);
    weight_half_ = half;
    layer.set_columns(columns[c].begin, columns[c].end);
    layer.load_resident_weights();
    layer.emit_all_blocks();
  }
  core_ = base;
  if (columns.size() > 1) {
    std::string where;
    for (size_t c = 0; c < columns.size(); ++c) {
      where += fmt::format("{}[{}, {}) on core {}", c == 0 ? "" : ", ", columns[c].begin,
                           columns[c].end, c);
    }
    rec.parallel += fmt::format("; output channels {}", where);
  }
  return true;
}

}  // namespace npusim::lowering
