#include "compiler/lowering.hpp"

#include <algorithm>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include "compiler/hazards.hpp"
#include "support/error.hpp"

namespace npusim {

namespace {

constexpr uint64_t kAlign = 64;
uint64_t align_up(uint64_t x, uint64_t a = kAlign) { return (x + a - 1) / a * a; }
int ceil_div(int a, int b) { return (a + b - 1) / b; }

int unit_key(UnitKind kind, int index) { return static_cast<int>(kind) * 256 + index; }

// The largest n in [1, hi] with fits(n), given fits(1) and fits growing false with n.
template <class Fits>
int largest_fitting(int hi, Fits fits) {
  int lo = 1;
  while (lo < hi) {
    const int mid = lo + (hi - lo + 1) / 2;
    if (fits(mid)) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

// Input rows a block of `rows` output rows reads, and input depth planes one output plane reads.
int slab_rows(const ConvGeometry& g, int rows) {
  return std::min(g.h, (rows - 1) * g.stride_h + g.dilation_h * (g.kernel_h - 1) + 1);
}
int slab_planes(const ConvGeometry& g) {
  return std::min(g.d, g.dilation_d * (g.kernel_d - 1) + 1);
}

}  // namespace

ConvGeometry conv_geometry(const Layer& l, int batch, int element_bytes) {
  ConvGeometry g;
  g.element_bytes = element_bytes;
  const TensorShape& in = l.in_shapes[0];
  if (l.kind == OpKind::kDense) {
    // Every row of every sample is one pixel of a single (batch x rows) x 1 image of K channels.
    g.h = static_cast<int>(batch * in.outer());
    g.c = in.last();
    g.out_h = g.h;
    g.n = l.filters;
    return g;
  }
  if (l.kind == OpKind::kMatMul) {
    const int m = in.dims[in.rank() - 2];
    g.images = static_cast<int>(batch * (in.elements() / (uint64_t(m) * in.last())));
    g.h = g.out_h = m;
    g.c = in.last();
    g.n = l.out_shape.last();
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

TilingResult choose_conv_tiling(const HwConfig& hw, const ConvGeometry& g,
                                const std::string& layer_name) {
  const auto& mu = hw.matrix_unit;
  const uint64_t k = g.k();
  const uint64_t ub = hw.unified_buffer.capacity_bytes;
  const uint64_t wb_half = hw.weight_buffer.capacity_bytes / 2;
  // Each unit's slice of the accumulators, whole 32-bit words in each half (count 3 splits unevenly).
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
  auto ub_need = [&](int rows, int n_tile) {
    return 2 * align_up(slab_rows(g, rows) * plane_bytes) +
           2 * align_up(uint64_t(rows) * g.out_w * n_tile * es) + bias_bytes;
  };
  // Off-chip bytes of a tiling in either loop order. Spatial blocks outside: each slab is read
  // once, streamed weights once per spatial block. Channel blocks outside: a channel block's
  // weights are read once when they fit half the weight buffer, every slab once per channel block.
  const uint64_t weight_bytes = k * g.n * es;
  auto traffic = [&](int rows, int n_tile, bool channels_outside) {
    const uint64_t row_blocks = static_cast<uint64_t>(ceil_div(g.out_h, rows));
    const uint64_t blocks = uint64_t(g.images) * g.out_d * row_blocks;
    uint64_t slabs = 0;
    for (int oh0 = 0; oh0 < g.out_h; oh0 += rows) {
      const int r = std::min(rows, g.out_h - oh0);
      const int top = oh0 * g.stride_h - g.pad_top;
      const int lo = std::max(0, top);
      const int hi = std::min(g.h, top + (r - 1) * g.stride_h + g.dilation_h * (g.kernel_h - 1) + 1);
      slabs += uint64_t(std::max(hi - lo, 0)) * plane_bytes;
    }
    slabs *= uint64_t(g.images) * g.out_d;
    const uint64_t n_blocks = static_cast<uint64_t>(ceil_div(g.n, n_tile));
    if (resident) return slabs + weight_bytes;
    if (!channels_outside) return slabs + blocks * weight_bytes;
    const bool fit = k * n_tile * es <= wb_half;
    return slabs * n_blocks + (fit ? 1 : blocks) * weight_bytes;
  };
  TilingResult best;
  for (int n_tile : n_candidates) {
    uint64_t k_chunk = k;
    if (!resident) {
      k_chunk = std::min<uint64_t>(k, wb_half / es / n_tile / mu.rows * mu.rows);
      if (k_chunk == 0) continue;
    }
    const int rows_acc = static_cast<int>(
        std::min<uint64_t>(g.out_h, acc_half / (uint64_t(g.out_w) * n_tile * 4)));
    if (rows_acc < 1 || ub_need(1, n_tile) > ub) continue;
    const int rows = largest_fitting(rows_acc, [&](int r) { return ub_need(r, n_tile) <= ub; });
    for (bool channels_outside : {false, true}) {
      if (channels_outside && (resident || g.images > 1 || n_tile == g.n)) continue;
      const uint64_t bytes = traffic(rows, n_tile, channels_outside);
      if (best.ok && bytes >= best.tiling.dram_bytes) continue;
      best.ok = true;
      best.tiling.out_rows = rows;
      best.tiling.n_tile = n_tile;
      best.tiling.k_chunk = static_cast<int>(k_chunk);
      best.tiling.weights_resident = resident;
      best.tiling.channels_outside = channels_outside;
      best.tiling.dram_bytes = bytes;
      best.tiling.dram_bytes_other_order = traffic(rows, n_tile, !channels_outside);
      best.tiling.ub_bytes = ub_need(rows, n_tile);
      best.tiling.wb_bytes = (resident ? k * g.n : 2 * k_chunk * n_tile) * es;
      best.tiling.acc_bytes = 2ull * rows * g.out_w * n_tile * 4 * mu.count;
    }
  }
  if (best.ok) return best;
  // Nothing fits: report the smallest configuration's needs.
  const int n_tile = std::min(g.n, mu.cols);
  TilingResult r;
  const uint64_t acc_need = 2ull * g.out_w * n_tile * 4 * mu.count;
  const uint64_t ub_min = ub_need(1, n_tile);
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

namespace {

class Lowering {
 public:
  Lowering(const Graph& graph, const HwConfig& hw)
      : graph_(graph), hw_(hw), es_(graph.dtype == DataType::kBf16 ? 2 : 1) {}

  CompileResult run();

 private:
  uint32_t emit(UnitKind unit, int index, Operation op, std::vector<BufferAccess> accesses);
  uint64_t dram_alloc(uint64_t bytes) {
    uint64_t addr = dram_top_;
    dram_top_ = align_up(dram_top_ + bytes, 4096);
    return addr;
  }
  uint64_t dram_param(const void* data, uint64_t bytes) {
    const uint64_t addr = dram_alloc(bytes);
    DramSegment seg{addr, std::vector<uint8_t>(bytes)};
    std::memcpy(seg.bytes.data(), data, bytes);
    program_.dram_init.push_back(std::move(seg));
    return addr;
  }
  // A 1-D or 2-D copy (count1 rows of count0 bytes, DRAM rows stride0 apart).
  void dma(UnitKind unit, BufferId buffer, uint64_t buffer_addr, uint64_t dram_addr,
           uint64_t count0, uint64_t count1, uint64_t stride0, bool transpose = false);
  // A packed 1-D copy of any size, split into rows the DMA descriptor can hold.
  void dma_linear(UnitKind unit, uint64_t ub_addr, uint64_t dram_addr, uint64_t bytes);
  int requant_table(std::vector<QuantMultiplier> table) {
    program_.requant_tables.push_back(std::move(table));
    return static_cast<int>(program_.requant_tables.size() - 1);
  }
  int lut(const std::vector<int8_t>& table) {
    if (table.empty()) return -1;
    program_.luts.push_back(table);
    return static_cast<int>(program_.luts.size() - 1);
  }
  bool fail(std::string reason) {
    if (reason_.empty()) reason_ = std::move(reason);
    return false;
  }
  uint64_t ub_capacity() const { return hw_.unified_buffer.capacity_bytes; }

  bool lower_matrix(const Layer& l, LayerRecord& rec);
  bool lower_pool(const Layer& l, LayerRecord& rec);
  bool lower_rows(const Layer& l, LayerRecord& rec);
  bool lower_eltwise(const Layer& l, LayerRecord& rec);
  bool lower_concat(const Layer& l, LayerRecord& rec);

  const Graph& graph_;
  const HwConfig& hw_;
  const int es_;  // bytes per activation / weight element
  Program program_;
  HazardTracker hazards_;
  LayerRecord* current_ = nullptr;
  uint64_t dram_top_ = 0;
  std::map<std::string, uint64_t> tensor_addr_;
  struct Params {
    uint64_t weights = 0, bias = 0, norm = 0;
  };
  std::map<std::string, Params> params_;
  int weight_half_ = 0;  // resident weights alternate between the halves of the weight buffer
  std::string reason_;
};

uint32_t Lowering::emit(UnitKind unit, int index, Operation op, std::vector<BufferAccess> accesses) {
  Instruction instr;
  instr.id = static_cast<uint32_t>(program_.instructions.size());
  instr.unit = unit;
  instr.unit_index = index;
  instr.layer = static_cast<uint32_t>(program_.layers.size() - 1);
  instr.deps = hazards_.add(instr.id, unit_key(unit, index), accesses);
  instr.op = std::move(op);
  program_.instructions.push_back(std::move(instr));
  return program_.instructions.back().id;
}

void Lowering::dma(UnitKind unit, BufferId buffer, uint64_t buffer_addr, uint64_t dram_addr,
                   uint64_t count0, uint64_t count1, uint64_t stride0, bool transpose) {
  NPUSIM_CHECK(count0 > 0 && count0 <= UINT32_MAX && count1 > 0 && count1 <= UINT32_MAX,
               "DMA box {}x{} out of range", count1, count0);
  DmaOp d;
  d.buffer = buffer;
  d.buffer_addr = buffer_addr;
  d.dram_addr = dram_addr;
  d.count[0] = static_cast<uint32_t>(count0);
  d.count[1] = static_cast<uint32_t>(count1);
  d.dram_stride[0] = stride0;
  d.transpose = transpose;
  d.transpose_element_bytes = es_;
  const bool load = unit == UnitKind::kDmaLoad;
  const uint64_t dram_end = dram_addr + (count1 - 1) * stride0 + count0;
  emit(unit, 0, d,
       {{BufferId::kDram, dram_addr, dram_end, !load},
        {buffer, buffer_addr, buffer_addr + d.bytes(), load}});
  (load ? current_->dram_read_bytes : current_->dram_write_bytes) += d.bytes();
}

void Lowering::dma_linear(UnitKind unit, uint64_t ub_addr, uint64_t dram_addr, uint64_t bytes) {
  constexpr uint64_t kRow = 1 << 20;  // rows of 1 MiB: the bus sees the same bytes either way
  if (bytes <= kRow) {
    dma(unit, BufferId::kUnified, ub_addr, dram_addr, bytes, 1, 0);
    return;
  }
  const uint64_t rows = bytes / kRow;
  dma(unit, BufferId::kUnified, ub_addr, dram_addr, kRow, rows, kRow);
  if (bytes % kRow != 0) {
    dma(unit, BufferId::kUnified, ub_addr + rows * kRow, dram_addr + rows * kRow, bytes % kRow, 1,
        0);
  }
}

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
      t.weights_resident ? "resident" : "streamed", t.k_chunk, t.ub_bytes, t.wb_bytes,
      t.acc_bytes);

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
  const uint64_t acc_unit = hw_.accumulators.capacity_bytes / mu.count / 8 * 8;  // as acc_half
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
      const int ih_hi = std::min(g.h, (oh0 + rows - 1) * g.stride_h - g.pad_top +
                                          g.dilation_h * (g.kernel_h - 1) + 1);
      slab = slab_base[slab_parity];
      slab_parity ^= 1;
      const int planes = std::max(iz_hi - iz_lo, 0), slab_h = std::max(ih_hi - ih_lo, 0);
      const uint64_t row_bytes = uint64_t(slab_h) * g.w * pixel_bytes;
      if (planes > 0 && slab_h > 0) {
        dma(UnitKind::kDmaLoad, BufferId::kUnified, slab,
            in_dram + ((uint64_t(img) * g.d + iz_lo) * g.h + ih_lo) * g.w * pixel_bytes,
            row_bytes, planes, plane_bytes);
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

bool Lowering::lower_pool(const Layer& l, LayerRecord& rec) {
  const TensorShape &in = l.in_shapes[0], &out = l.out_shape;
  const int D = in.d(), H = in.h(), W = in.w();
  const int C = in.last() * es_;  // bytes per pixel
  const int planes_max = std::min(D, l.kernel[0]);
  auto rows_in = [&](int rows) { return std::min(H, (rows - 1) * l.strides[1] + l.kernel[1]); };
  auto need = [&](int rows) {
    return 2 * align_up(uint64_t(planes_max) * rows_in(rows) * W * C) +
           2 * align_up(uint64_t(rows) * out.w() * C);
  };
  if (need(1) > ub_capacity()) {
    return fail(fmt::format("layer '{}' does not fit: one pooled output row needs {} bytes of "
                            "unified buffer, the hardware has {}: raise "
                            "buffers.unified_buffer.capacity_bytes to at least {}",
                            l.name, need(1), ub_capacity(), need(1)));
  }
  const int rows = largest_fitting(out.h(), [&](int r) { return need(r) <= ub_capacity(); });
  rec.tiling = fmt::format("blocks of {} output rows, ub {} B", rows, need(rows));
  const uint64_t slab_bytes = align_up(uint64_t(planes_max) * rows_in(rows) * W * C);
  const uint64_t out_bytes = align_up(uint64_t(rows) * out.w() * C);
  const uint64_t in_dram = tensor_addr_.at(l.inputs[0]), out_dram = tensor_addr_.at(l.output);
  const uint64_t plane = uint64_t(H) * W * C;
  int block = 0;
  for (int img = 0; img < graph_.batch; ++img) {
    for (int od = 0; od < out.d(); ++od) {
      const int front = od * l.strides[0] - l.pads_begin[0];
      const int iz_lo = std::max(0, front), iz_hi = std::min(D, front + l.kernel[0]);
      for (int oh0 = 0; oh0 < out.h(); oh0 += rows, ++block) {
        const int r = std::min(rows, out.h() - oh0);
        const int top = oh0 * l.strides[1] - l.pads_begin[1];
        const int ih_lo = std::max(0, top);
        const int ih_hi = std::min(H, (oh0 + r - 1) * l.strides[1] - l.pads_begin[1] + l.kernel[1]);
        const uint64_t slab = (block % 2) * slab_bytes;
        const uint64_t dst = 2 * slab_bytes + (block % 2) * out_bytes;
        const uint64_t row_bytes = uint64_t(ih_hi - ih_lo) * W * C;
        dma(UnitKind::kDmaLoad, BufferId::kUnified, slab,
            in_dram + ((uint64_t(img) * D + iz_lo) * H + ih_lo) * W * C, row_bytes,
            iz_hi - iz_lo, plane);
        PoolOp p;
        p.average = l.kind == OpKind::kAvgPool;
        p.count_include_pad = l.count_include_pad;
        p.in_ub_addr = slab;
        p.slab_d = iz_hi - iz_lo, p.slab_h = ih_hi - ih_lo, p.slab_w = W, p.c = in.last();
        p.window_d = l.kernel[0], p.window_h = l.kernel[1], p.window_w = l.kernel[2];
        p.stride_h = l.strides[1], p.stride_w = l.strides[2];
        p.origin_z = front - iz_lo, p.origin_y = top - ih_lo, p.origin_x = -l.pads_begin[2];
        p.out_h = r, p.out_w = out.w();
        p.out_ub_addr = dst;
        const uint64_t dst_bytes = uint64_t(r) * out.w() * C;  // C is in bytes
        emit(UnitKind::kVector, 0, p,
             {{BufferId::kUnified, slab, slab + uint64_t(p.slab_d) * row_bytes, false},
              {BufferId::kUnified, dst, dst + dst_bytes, true}});
        dma_linear(UnitKind::kDmaStore, dst,
                   out_dram + ((uint64_t(img) * out.d() + od) * out.h() + oh0) * out.w() * C,
                   dst_bytes);
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
  // Two input and two output blocks of rows, plus the layer-norm parameters.
  auto need = [&](uint64_t rows) { return 4 * align_up(rows * row_bytes) + params_bytes; };
  if (need(1) > ub_capacity()) {
    return fail(fmt::format("layer '{}' does not fit: a row of {} values needs {} bytes of unified "
                            "buffer, the hardware has {}",
                            l.name, length, need(1), ub_capacity()));
  }
  const uint64_t block_rows = static_cast<uint64_t>(largest_fitting(
      static_cast<int>(std::min<uint64_t>(rows_total, 1u << 30)),
      [&](int r) { return need(static_cast<uint64_t>(r)) <= ub_capacity(); }));
  rec.tiling = fmt::format("blocks of {} rows of {}", block_rows, length);
  const uint64_t in_dram = tensor_addr_.at(l.inputs[0]), out_dram = tensor_addr_.at(l.output);
  const uint64_t block_bytes = align_up(block_rows * row_bytes);
  const uint64_t params_ub = 4 * block_bytes;
  if (l.kind == OpKind::kLayerNorm) {
    dma(UnitKind::kDmaLoad, BufferId::kUnified, params_ub, params_.at(l.name).norm, 8 * length, 1,
        0);
  }
  const int table = elementwise ? lut(l.lut) : -1;
  int block = 0;
  for (uint64_t r0 = 0; r0 < rows_total; r0 += block_rows, ++block) {
    const uint64_t r = std::min(block_rows, rows_total - r0);
    const uint64_t bytes = r * row_bytes;
    const uint64_t src = (block % 2) * block_bytes, dst = (2 + block % 2) * block_bytes;
    dma_linear(UnitKind::kDmaLoad, src, in_dram + r0 * row_bytes, bytes);
    Operation op;
    std::vector<BufferAccess> accesses = {{BufferId::kUnified, src, src + bytes, false},
                                          {BufferId::kUnified, dst, dst + bytes, true}};
    if (l.kind == OpKind::kSoftmax) {
      op = SoftmaxOp{src, dst, static_cast<int>(r), static_cast<int>(length), l.in_scales[0]};
    } else if (l.kind == OpKind::kLayerNorm) {
      op = LayerNormOp{src, dst, params_ub, static_cast<int>(r), static_cast<int>(length),
                       l.in_scales[0], 1.0f / l.out_scale, l.epsilon};
      accesses.push_back({BufferId::kUnified, params_ub, params_ub + 8 * length, false});
    } else {
      op = LutOp{src, dst, r, table, l.activation, l.clip_min, l.clip_max};
    }
    emit(UnitKind::kVector, 0, op, accesses);
    dma_linear(UnitKind::kDmaStore, dst, out_dram + r0 * row_bytes, bytes);
  }
  return true;
}

bool Lowering::lower_eltwise(const Layer& l, LayerRecord& rec) {
  const uint64_t total = uint64_t(graph_.batch) * l.out_shape.elements() * es_;
  const uint64_t chunk = std::min<uint64_t>(total, ub_capacity() / 6 / kAlign * kAlign);
  rec.tiling = fmt::format("chunks of {} bytes", chunk);
  const uint64_t a_dram = tensor_addr_.at(l.inputs[0]), b_dram = tensor_addr_.at(l.inputs[1]);
  const uint64_t out_dram = tensor_addr_.at(l.output);
  const int table = lut(l.lut);
  int block = 0;
  for (uint64_t off = 0; off < total; off += chunk, ++block) {
    const uint64_t bytes = std::min(chunk, total - off);
    const uint64_t base = (block % 2) * 3 * chunk;
    const uint64_t a = base, b = base + chunk, out = base + 2 * chunk;
    dma_linear(UnitKind::kDmaLoad, a, a_dram + off, bytes);
    dma_linear(UnitKind::kDmaLoad, b, b_dram + off, bytes);
    EltwiseOp e;
    e.kind = l.kind == OpKind::kAdd ? EltwiseKind::kAdd : EltwiseKind::kMul;
    e.a_ub_addr = a, e.b_ub_addr = b, e.out_ub_addr = out;
    e.rows = 1, e.cols = static_cast<int>(bytes / es_);
    e.a_ld = e.b_ld = e.out_ld = e.cols;
    e.ra = l.input_ratios.empty() ? 1.0f : l.input_ratios[0];
    e.rb = l.input_ratios.size() > 1 ? l.input_ratios[1] : 1.0f;
    e.lo = l.clamp_lo, e.hi = l.clamp_hi;
    e.lut = table;
    e.activation = l.activation;
    e.clip_min = l.clip_min, e.clip_max = l.clip_max;
    emit(UnitKind::kVector, 0, e,
         {{BufferId::kUnified, a, a + bytes, false},
          {BufferId::kUnified, b, b + bytes, false},
          {BufferId::kUnified, out, out + bytes, true}});
    dma_linear(UnitKind::kDmaStore, out, out_dram + off, bytes);
  }
  return true;
}

// Concat along channels: each input's rows are loaded, rescaled to the output scale into their
// columns of the output block, and the block is stored once.
bool Lowering::lower_concat(const Layer& l, LayerRecord& rec) {
  const uint64_t total_rows = uint64_t(graph_.batch) * l.out_shape.outer();
  const int C = l.out_shape.last();
  int widest = 0;
  for (const auto& s : l.in_shapes) widest = std::max(widest, s.last());
  const uint64_t per_row = (2 * uint64_t(widest) + 2 * uint64_t(C)) * es_;
  if (per_row > ub_capacity()) {
    return fail(fmt::format("layer '{}' does not fit: one row of the concatenation needs {} bytes "
                            "of unified buffer, the hardware has {}",
                            l.name, per_row, ub_capacity()));
  }
  const uint64_t rows = std::min<uint64_t>(total_rows, ub_capacity() / per_row);
  rec.tiling = fmt::format("blocks of {} rows of {} channels", rows, C);
  const uint64_t in_block = align_up(rows * widest * es_), out_block = align_up(rows * C * es_);
  const uint64_t out_dram = tensor_addr_.at(l.output);
  int block = 0, load = 0;
  for (uint64_t r0 = 0; r0 < total_rows; r0 += rows, ++block) {
    const uint64_t r = std::min(rows, total_rows - r0);
    const uint64_t out = 2 * in_block + (block % 2) * out_block;
    int offset = 0;
    for (size_t i = 0; i < l.inputs.size(); ++i, ++load) {
      const int ci = l.in_shapes[i].last();
      const uint64_t src = (load % 2) * in_block;
      dma_linear(UnitKind::kDmaLoad, src, tensor_addr_.at(l.inputs[i]) + r0 * ci * es_,
                 r * ci * es_);
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
    dma_linear(UnitKind::kDmaStore, out, out_dram + r0 * C * es_, r * C * es_);
  }
  return true;
}

CompileResult Lowering::run() {
  NPUSIM_CHECK(graph_.quantized, "graph {} must be quantized before lowering", graph_.name);
  program_.network = graph_.name;
  program_.batch = graph_.batch;
  program_.matrix_units = hw_.matrix_unit.count;
  program_.total_macs = graph_.total_macs();
  program_.dtype = graph_.dtype;

  // Off-chip memory: parameters first, then the input, then every layer's output.
  for (const auto& l : graph_.layers) {
    Params p;
    if (l.has_weights() && es_ == 1) {
      NPUSIM_CHECK(l.qweights.size() == l.reduction() * l.filters, "layer {}: no int8 weights",
                   l.name);
      p.weights = dram_param(l.qweights.data(), l.qweights.size());
      p.bias = dram_param(l.qbias.data(), l.qbias.size() * 4);
    } else if (l.has_weights()) {
      NPUSIM_CHECK(l.bf16_weights.size() == l.reduction() * l.filters,
                   "layer {}: no bf16 weights", l.name);
      p.weights = dram_param(l.bf16_weights.data(), l.bf16_weights.size() * 2);
      p.bias = dram_param(l.bias.data(), l.bias.size() * 4);
    }
    if (l.kind == OpKind::kLayerNorm) {
      std::vector<float> gb(l.gamma);
      gb.insert(gb.end(), l.beta.begin(), l.beta.end());
      p.norm = dram_param(gb.data(), gb.size() * 4);
    }
    params_[l.name] = p;
  }
  auto placement = [&](const std::string& name) {
    TensorShape s = graph_.shape_of(name);
    TensorPlacement p;
    p.name = name;
    p.dram_addr = tensor_addr_.at(name);
    p.batch = graph_.batch;
    p.dims = s.dims;
    p.scale = graph_.scale_of(name);
    p.element_bytes = es_;
    return p;
  };
  tensor_addr_[graph_.input_name] = dram_alloc(graph_.input_shape.elements() * graph_.batch * es_);
  program_.input = placement(graph_.input_name);
  for (const auto& l : graph_.layers) {
    // Reshape is free: the row-major element order does not change.
    tensor_addr_[l.output] = l.kind == OpKind::kReshape
                                 ? tensor_addr_.at(l.inputs[0])
                                 : dram_alloc(l.out_shape.elements() * graph_.batch * es_);
  }
  program_.dram_bytes = dram_top_;
  if (dram_top_ > hw_.memory.capacity_bytes) {
    return {false, {}, fmt::format("network '{}' needs {} bytes of off-chip memory (weights and "
                                   "activations), the hardware has {}: raise "
                                   "memory.capacity_bytes or lower the batch",
                                   graph_.name, dram_top_, hw_.memory.capacity_bytes)};
  }

  for (const auto& l : graph_.layers) {
    LayerRecord rec;
    rec.name = l.name;
    rec.op = to_string(l.kind);
    if (l.kind == OpKind::kConv) rec.op = l.in_shapes[0].rank() == 4 ? "conv3d" : "conv2d";
    if (l.kind == OpKind::kActivation) rec.op = to_string(l.activation);
    for (const auto& f : l.fused) rec.fused += (rec.fused.empty() ? "" : ",") + f;
    rec.macs = l.macs(graph_.batch);
    rec.first_instruction = static_cast<uint32_t>(program_.instructions.size());
    uint64_t bound = (l.out_shape.elements() * graph_.batch + l.qweights.size() +
                      l.bf16_weights.size()) * es_ + 4 * l.bias.size();
    for (const auto& s : l.in_shapes) bound += s.elements() * graph_.batch * es_;
    rec.dram_bytes_lower_bound = l.kind == OpKind::kReshape ? 0 : bound;
    program_.layers.push_back(rec);
    current_ = &program_.layers.back();
    bool ok = true;
    switch (l.kind) {
      case OpKind::kConv:
      case OpKind::kDense:
      case OpKind::kMatMul: ok = lower_matrix(l, *current_); break;
      case OpKind::kMaxPool:
      case OpKind::kAvgPool: ok = lower_pool(l, *current_); break;
      case OpKind::kSoftmax:
      case OpKind::kLayerNorm:
      case OpKind::kActivation: ok = lower_rows(l, *current_); break;
      case OpKind::kAdd:
      case OpKind::kMul: ok = lower_eltwise(l, *current_); break;
      case OpKind::kConcat: ok = lower_concat(l, *current_); break;
      case OpKind::kReshape:
        current_->tiling = "no instructions: the row-major element order is unchanged";
        break;
      case OpKind::kBatchNorm:
        NPUSIM_CHECK(false, "batch norm {} reached lowering unfolded", l.name);
    }
    if (!ok) return {false, {}, reason_};
    current_->end_instruction = static_cast<uint32_t>(program_.instructions.size());
  }
  for (const auto& name : graph_.outputs) program_.outputs.push_back(placement(name));
  for (const auto& l : graph_.layers) program_.tensors.push_back(placement(l.output));
  return {true, std::move(program_), ""};
}

}  // namespace

CompileResult compile(const Graph& graph, const HwConfig& hw) {
  return Lowering(graph, hw).run();
}

}  // namespace npusim
