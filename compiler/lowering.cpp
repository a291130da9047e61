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

// Input rows a block of `rows` output rows reads.
int slab_rows(const ConvGeometry& g, int rows) {
  return std::min(g.h, (rows - 1) * g.stride_h + g.dilation_h * (g.kernel_h - 1) + 1);
}

}  // namespace

ConvGeometry conv_geometry(const Layer& l, int batch) {
  ConvGeometry g;
  if (l.kind == OpKind::kDense) {
    // A batch of feature vectors is one image of `batch` rows, one column and K channels.
    g.images = 1;
    g.h = batch;
    g.w = 1;
    g.c = static_cast<int>(l.in_shape.elements());
    g.out_h = batch;
    g.out_w = 1;
    g.n = l.filters;
    return g;
  }
  g.images = batch;
  g.h = l.in_shape.h, g.w = l.in_shape.w, g.c = l.in_shape.c;
  g.kernel_h = l.kernel_h, g.kernel_w = l.kernel_w;
  g.stride_h = l.stride_h, g.stride_w = l.stride_w;
  g.dilation_h = l.dilation_h, g.dilation_w = l.dilation_w;
  g.pad_top = l.pad_top, g.pad_left = l.pad_left;
  g.out_h = l.out_shape.h, g.out_w = l.out_shape.w, g.n = l.out_shape.c;
  return g;
}

TilingResult choose_conv_tiling(const HwConfig& hw, const ConvGeometry& g,
                                const std::string& layer_name) {
  const auto& mu = hw.matrix_unit;
  const uint64_t k = g.k();
  const uint64_t ub = hw.unified_buffer.capacity_bytes;
  const uint64_t wb_half = hw.weight_buffer.capacity_bytes / 2;
  const uint64_t acc_half = hw.accumulators.capacity_bytes / mu.count / 2;
  const uint64_t bias_bytes = align_up(4ull * g.n);
  const bool resident = k * g.n <= wb_half;

  std::vector<int> n_candidates;
  int t = std::min(g.n, ceil_div(ceil_div(g.n, mu.count), mu.cols) * mu.cols);
  while (true) {
    n_candidates.push_back(t);
    if (t <= mu.cols) break;
    t = std::max(mu.cols, ceil_div(ceil_div(t, 2), mu.cols) * mu.cols);
  }
  auto ub_need = [&](int rows, int n_tile) {
    return 2 * align_up(uint64_t(slab_rows(g, rows)) * g.w * g.c) +
           2 * align_up(uint64_t(rows) * g.out_w * n_tile) + bias_bytes;
  };
  for (int n_tile : n_candidates) {
    uint64_t k_chunk = k;
    if (!resident) {
      k_chunk = std::min<uint64_t>(k, wb_half / n_tile / mu.rows * mu.rows);
      if (k_chunk == 0) continue;
    }
    int rows_acc = static_cast<int>(std::min<uint64_t>(
        g.out_h, acc_half / (uint64_t(g.out_w) * n_tile * 4)));
    // The largest row count in [1, rows_acc] whose buffers fit (ub_need grows with rows).
    if (rows_acc < 1 || ub_need(1, n_tile) > ub) continue;
    int rows = 1, hi = rows_acc;
    while (rows < hi) {
      int mid = rows + (hi - rows + 1) / 2;
      if (ub_need(mid, n_tile) <= ub) {
        rows = mid;
      } else {
        hi = mid - 1;
      }
    }
    TilingResult r;
    r.ok = true;
    r.tiling.out_rows = rows;
    r.tiling.n_tile = n_tile;
    r.tiling.k_chunk = static_cast<int>(k_chunk);
    r.tiling.weights_resident = resident;
    r.tiling.ub_bytes = ub_need(rows, n_tile);
    r.tiling.wb_bytes = resident ? k * g.n : 2 * k_chunk * n_tile;
    r.tiling.acc_bytes = 2ull * rows * g.out_w * n_tile * 4 * mu.count;
    return r;
  }
  // Nothing fits: report the smallest configuration's needs.
  int n_tile = std::min(g.n, mu.cols);
  TilingResult r;
  uint64_t acc_need = 2ull * g.out_w * n_tile * 4 * mu.count;
  uint64_t ub_min = ub_need(1, n_tile);
  if (acc_need > hw.accumulators.capacity_bytes) {
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
        layer_name, ub_min, slab_rows(g, 1), g.w, g.c, bias_bytes, ub, ub_min);
  }
  return r;
}

namespace {

class Lowering {
 public:
  Lowering(const Graph& graph, const HwConfig& hw) : graph_(graph), hw_(hw) {}

  CompileResult run();

 private:
  uint32_t emit(UnitKind unit, int index, Operation op, std::vector<BufferAccess> accesses);
  uint64_t dram_alloc(uint64_t bytes) {
    uint64_t addr = dram_top_;
    dram_top_ = align_up(dram_top_ + bytes, 4096);
    return addr;
  }
  void dma(UnitKind unit, BufferId buffer, uint64_t buffer_addr, uint64_t dram_addr,
           uint32_t count0, uint32_t count1, uint64_t stride0);

  bool lower_conv(const Layer& l, LayerRecord& rec);
  bool lower_pool(const Layer& l, LayerRecord& rec);
  bool lower_softmax(const Layer& l, LayerRecord& rec);
  bool lower_relu(const Layer& l, LayerRecord& rec);
  void fail(std::string reason) {
    if (reason_.empty()) reason_ = std::move(reason);
  }

  const Graph& graph_;
  const HwConfig& hw_;
  Program program_;
  HazardTracker hazards_;
  LayerRecord* current_ = nullptr;
  uint64_t dram_top_ = 0;
  std::map<std::string, uint64_t> tensor_addr_;
  std::map<std::string, std::pair<uint64_t, uint64_t>> params_addr_;  // layer -> weights, bias
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
                   uint32_t count0, uint32_t count1, uint64_t stride0) {
  DmaOp d;
  d.buffer = buffer;
  d.buffer_addr = buffer_addr;
  d.dram_addr = dram_addr;
  d.count[0] = count0;
  d.count[1] = count1;
  d.count[2] = 1;
  d.dram_stride[0] = stride0;
  d.dram_stride[1] = 0;
  bool load = unit == UnitKind::kDmaLoad;
  uint64_t dram_end = dram_addr + uint64_t(count1 - 1) * stride0 + count0;
  emit(unit, 0, d,
       {{BufferId::kDram, dram_addr, dram_end, !load},
        {buffer, buffer_addr, buffer_addr + d.bytes(), load}});
  (load ? current_->dram_read_bytes : current_->dram_write_bytes) += d.bytes();
}

bool Lowering::lower_conv(const Layer& l, LayerRecord& rec) {
  const ConvGeometry g = conv_geometry(l, graph_.batch);
  TilingResult tr = choose_conv_tiling(hw_, g, l.name);
  if (!tr.ok) {
    fail(tr.reason);
    return false;
  }
  const ConvTiling& t = tr.tiling;
  const auto& mu = hw_.matrix_unit;
  const int k = static_cast<int>(g.k());
  const uint64_t in_dram = tensor_addr_.at(l.input);
  const uint64_t out_dram = tensor_addr_.at(l.output);
  const auto [w_dram, bias_dram] = params_addr_.at(l.name);
  rec.tiling = fmt::format(
      "{} image(s) {}x{}x{} -> {}x{}x{}, K={}; blocks of {} output rows x {} channels, weights {} "
      "(k chunk {}), ub {} B, wb {} B, acc {} B",
      g.images, g.h, g.w, g.c, g.out_h, g.out_w, g.n, k, t.out_rows, t.n_tile,
      t.weights_resident ? "resident" : "streamed", t.k_chunk, t.ub_bytes, t.wb_bytes, t.acc_bytes);

  // Unified buffer: two input slabs, two output blocks, the bias.
  const uint64_t slab_bytes = align_up(uint64_t(slab_rows(g, t.out_rows)) * g.w * g.c);
  const uint64_t out_bytes = align_up(uint64_t(t.out_rows) * g.out_w * t.n_tile);
  const uint64_t slab_base[2] = {0, slab_bytes};
  const uint64_t out_base[2] = {2 * slab_bytes, 2 * slab_bytes + out_bytes};
  const uint64_t bias_ub = 2 * slab_bytes + 2 * out_bytes;
  const uint64_t wb_half = hw_.weight_buffer.capacity_bytes / 2;
  const uint64_t acc_unit = hw_.accumulators.capacity_bytes / mu.count;
  const uint64_t acc_block = uint64_t(t.out_rows) * g.out_w * t.n_tile * 4;

  dma(UnitKind::kDmaLoad, BufferId::kUnified, bias_ub, bias_dram, 4 * g.n, 1, 0);
  uint64_t resident_wb = 0;
  if (t.weights_resident) {
    resident_wb = weight_half_ * wb_half;
    weight_half_ ^= 1;
    dma(UnitKind::kDmaLoad, BufferId::kWeight, resident_wb, w_dram, g.n, k, g.n);
  }

  int block = 0, chunk_index = 0;
  std::vector<int> acc_parity(mu.count, 0);
  const int n_blocks = ceil_div(g.n, t.n_tile);
  for (int img = 0; img < g.images; ++img) {
    for (int oh0 = 0; oh0 < g.out_h; oh0 += t.out_rows, ++block) {
      const int rows = std::min(t.out_rows, g.out_h - oh0);
      const int m_blk = rows * g.out_w;
      const int top = oh0 * g.stride_h - g.pad_top;
      const int ih_lo = std::max(0, top);
      const int ih_hi = std::min(g.h, (oh0 + rows - 1) * g.stride_h - g.pad_top +
                                          g.dilation_h * (g.kernel_h - 1) + 1);
      const uint64_t slab = slab_base[block % 2];
      if (ih_hi > ih_lo) {
        dma(UnitKind::kDmaLoad, BufferId::kUnified, slab,
            in_dram + (uint64_t(img) * g.h + ih_lo) * g.w * g.c, g.w * g.c, ih_hi - ih_lo, uint64_t(g.w) * g.c);
      }
      ActivationView view;
      view.ub_addr = slab;
      view.slab_h = std::max(ih_hi - ih_lo, 0);
      view.slab_w = g.w;
      view.slab_c = g.c;
      view.kernel_h = g.kernel_h, view.kernel_w = g.kernel_w;
      view.stride_h = g.stride_h, view.stride_w = g.stride_w;
      view.dilation_h = g.dilation_h, view.dilation_w = g.dilation_w;
      view.origin_y = top - ih_lo;
      view.origin_x = -g.pad_left;
      view.out_w = g.out_w;
      const uint64_t slab_end = slab + uint64_t(view.slab_h) * g.w * g.c;

      for (int nb = 0; nb < n_blocks; ++nb) {
        const int unit = nb % mu.count;
        const int n0 = nb * t.n_tile;
        const int n_tb = std::min(t.n_tile, g.n - n0);
        const uint64_t acc = unit * acc_unit + acc_parity[unit] * (acc_unit / 2);
        acc_parity[unit] ^= 1;
        for (int kc0 = 0; kc0 < k; kc0 += t.k_chunk, ++chunk_index) {
          const int k_cb = std::min(t.k_chunk, k - kc0);
          uint64_t wb;
          int w_ld;
          if (t.weights_resident) {
            wb = resident_wb + uint64_t(kc0) * g.n + n0;
            w_ld = g.n;
          } else {
            wb = (chunk_index % 2) * wb_half;
            w_ld = n_tb;
            dma(UnitKind::kDmaLoad, BufferId::kWeight, wb, w_dram + uint64_t(kc0) * g.n + n0,
                n_tb, k_cb, g.n);
          }
          const uint64_t wb_end = wb + uint64_t(k_cb - 1) * w_ld + n_tb;
          auto matmul = [&](int m_off, int m, int k_off, int kk, int n_off, int n) {
            MatmulOp op;
            op.a = view;
            op.a.m0 = m_off;
            op.a.k0 = kc0 + k_off;
            op.wb_addr = wb + uint64_t(k_off) * w_ld + n_off;
            op.w_ld = w_ld;
            op.acc_addr = acc + (uint64_t(m_off) * n_tb + n_off) * 4;
            op.acc_ld = n_tb;
            op.m = m, op.k = kk, op.n = n;
            op.accumulate = kc0 + k_off > 0;
            emit(UnitKind::kMatrix, unit, op,
                 {{BufferId::kUnified, slab, slab_end, false},
                  {BufferId::kWeight, wb, wb_end, false},
                  {BufferId::kAccumulator, acc, acc + acc_block, true}});
          };
          switch (mu.dataflow) {
            case Dataflow::kWeightStationary:
              for (int n_off = 0; n_off < n_tb; n_off += mu.cols)
                for (int k_off = 0; k_off < k_cb; k_off += mu.rows)
                  matmul(0, m_blk, k_off, std::min(mu.rows, k_cb - k_off), n_off,
                         std::min(mu.cols, n_tb - n_off));
              break;
            case Dataflow::kOutputStationary:
              for (int m_off = 0; m_off < m_blk; m_off += mu.rows)
                for (int n_off = 0; n_off < n_tb; n_off += mu.cols)
                  matmul(m_off, std::min(mu.rows, m_blk - m_off), 0, k_cb, n_off,
                         std::min(mu.cols, n_tb - n_off));
              break;
            case Dataflow::kInputStationary:
              for (int m_off = 0; m_off < m_blk; m_off += mu.cols)
                for (int k_off = 0; k_off < k_cb; k_off += mu.rows)
                  matmul(m_off, std::min(mu.cols, m_blk - m_off), k_off,
                         std::min(mu.rows, k_cb - k_off), 0, n_tb);
              break;
          }
        }
        const uint64_t out = out_base[(block * n_blocks + nb) % 2];
        RequantOp rq;
        rq.acc_addr = acc;
        rq.acc_ld = n_tb;
        rq.bias_ub_addr = bias_ub + uint64_t(n0) * 4;
        rq.out_ub_addr = out;
        rq.out_ld = n_tb;
        rq.m = m_blk;
        rq.n = n_tb;
        rq.scale = l.requant;
        rq.relu = l.relu;
        emit(UnitKind::kVector, 0, rq,
             {{BufferId::kAccumulator, acc, acc + uint64_t(m_blk) * n_tb * 4, false},
              {BufferId::kUnified, rq.bias_ub_addr, rq.bias_ub_addr + uint64_t(n_tb) * 4, false},
              {BufferId::kUnified, out, out + uint64_t(m_blk) * n_tb, true}});
        dma(UnitKind::kDmaStore, BufferId::kUnified, out,
            out_dram + ((uint64_t(img) * g.out_h + oh0) * g.out_w) * g.n + n0, n_tb, m_blk, g.n);
      }
    }
  }
  return true;
}

bool Lowering::lower_pool(const Layer& l, LayerRecord& rec) {
  const TensorShape in = l.in_shape, out = l.out_shape;
  const uint64_t ub = hw_.unified_buffer.capacity_bytes;
  auto rows_in = [&](int rows) {
    return std::min(in.h, (rows - 1) * l.stride_h + l.kernel_h);
  };
  auto need = [&](int rows) {
    return 2 * align_up(uint64_t(rows_in(rows)) * in.w * in.c) +
           2 * align_up(uint64_t(rows) * out.w * out.c);
  };
  if (need(1) > ub) {
    fail(fmt::format("layer '{}' does not fit: one pooled output row needs {} bytes of unified "
                     "buffer, the hardware has {}: raise buffers.unified_buffer.capacity_bytes to "
                     "at least {}",
                     l.name, need(1), ub, need(1)));
    return false;
  }
  int rows = 1, hi = out.h;  // the largest block of output rows that fits
  while (rows < hi) {
    int mid = rows + (hi - rows + 1) / 2;
    if (need(mid) <= ub) {
      rows = mid;
    } else {
      hi = mid - 1;
    }
  }
  rec.tiling = fmt::format("blocks of {} output rows, ub {} B", rows, need(rows));
  const uint64_t slab_bytes = align_up(uint64_t(rows_in(rows)) * in.w * in.c);
  const uint64_t out_bytes = align_up(uint64_t(rows) * out.w * out.c);
  const uint64_t in_dram = tensor_addr_.at(l.input), out_dram = tensor_addr_.at(l.output);
  int block = 0;
  for (int img = 0; img < graph_.batch; ++img) {
    for (int oh0 = 0; oh0 < out.h; oh0 += rows, ++block) {
      const int r = std::min(rows, out.h - oh0);
      const int top = oh0 * l.stride_h - l.pad_top;
      const int ih_lo = std::max(0, top);
      const int ih_hi = std::min(in.h, (oh0 + r - 1) * l.stride_h - l.pad_top + l.kernel_h);
      const uint64_t slab = (block % 2) * slab_bytes;
      const uint64_t dst = 2 * slab_bytes + (block % 2) * out_bytes;
      dma(UnitKind::kDmaLoad, BufferId::kUnified, slab,
          in_dram + (uint64_t(img) * in.h + ih_lo) * in.w * in.c, in.w * in.c, ih_hi - ih_lo,
          uint64_t(in.w) * in.c);
      PoolOp p;
      p.in_ub_addr = slab;
      p.slab_h = ih_hi - ih_lo, p.slab_w = in.w, p.c = in.c;
      p.window_h = l.kernel_h, p.window_w = l.kernel_w;
      p.stride_h = l.stride_h, p.stride_w = l.stride_w;
      p.origin_y = top - ih_lo, p.origin_x = -l.pad_left;
      p.out_h = r, p.out_w = out.w;
      p.out_ub_addr = dst;
      const uint64_t dst_bytes = uint64_t(r) * out.w * out.c;
      emit(UnitKind::kVector, 0, p,
           {{BufferId::kUnified, slab, slab + uint64_t(p.slab_h) * in.w * in.c, false},
            {BufferId::kUnified, dst, dst + dst_bytes, true}});
      dma(UnitKind::kDmaStore, BufferId::kUnified, dst,
          out_dram + (uint64_t(img) * out.h + oh0) * out.w * out.c, static_cast<uint32_t>(dst_bytes), 1, 0);
    }
  }
  return true;
}

// Softmax and ReLU stream rows (or chunks) through the unified buffer: load, compute, store.
bool Lowering::lower_softmax(const Layer& l, LayerRecord& rec) {
  const int length = static_cast<int>(l.in_shape.elements());
  const uint64_t ub = hw_.unified_buffer.capacity_bytes;
  const uint64_t row_bytes = align_up(length);
  int rows = static_cast<int>(std::min<uint64_t>(graph_.batch, ub / (4 * row_bytes)));
  if (rows < 1) {
    fail(fmt::format("layer '{}' does not fit: a softmax row of {} values needs {} bytes of "
                     "unified buffer, the hardware has {}",
                     l.name, length, 4 * row_bytes, ub));
    return false;
  }
  rec.tiling = fmt::format("blocks of {} rows of {}", rows, length);
  const uint64_t in_dram = tensor_addr_.at(l.input), out_dram = tensor_addr_.at(l.output);
  const uint64_t block_bytes = uint64_t(rows) * row_bytes;
  int block = 0;
  for (int r0 = 0; r0 < graph_.batch; r0 += rows, ++block) {
    const int r = std::min(rows, graph_.batch - r0);
    const uint64_t src = (block % 2) * block_bytes, dst = (2 + block % 2) * block_bytes;
    const uint64_t bytes = uint64_t(r) * length;
    dma(UnitKind::kDmaLoad, BufferId::kUnified, src, in_dram + uint64_t(r0) * length,
        static_cast<uint32_t>(bytes), 1, 0);
    SoftmaxOp s;
    s.in_ub_addr = src, s.out_ub_addr = dst, s.rows = r, s.length = length;
    s.input_scale = l.in_scale;
    emit(UnitKind::kVector, 0, s,
         {{BufferId::kUnified, src, src + bytes, false}, {BufferId::kUnified, dst, dst + bytes, true}});
    dma(UnitKind::kDmaStore, BufferId::kUnified, dst, out_dram + uint64_t(r0) * length,
        static_cast<uint32_t>(bytes), 1, 0);
  }
  return true;
}

bool Lowering::lower_relu(const Layer& l, LayerRecord& rec) {
  const uint64_t total = l.in_shape.elements() * graph_.batch;
  const uint64_t chunk = std::min<uint64_t>(total, hw_.unified_buffer.capacity_bytes / 4 / kAlign * kAlign);
  rec.tiling = fmt::format("chunks of {} bytes", chunk);
  const uint64_t in_dram = tensor_addr_.at(l.input), out_dram = tensor_addr_.at(l.output);
  int block = 0;
  for (uint64_t off = 0; off < total; off += chunk, ++block) {
    const uint64_t bytes = std::min(chunk, total - off);
    const uint64_t src = (block % 2) * chunk, dst = (2 + block % 2) * chunk;
    dma(UnitKind::kDmaLoad, BufferId::kUnified, src, in_dram + off, static_cast<uint32_t>(bytes), 1, 0);
    ReluOp op;
    op.in_ub_addr = src, op.out_ub_addr = dst, op.elements = bytes;
    emit(UnitKind::kVector, 0, op,
         {{BufferId::kUnified, src, src + bytes, false}, {BufferId::kUnified, dst, dst + bytes, true}});
    dma(UnitKind::kDmaStore, BufferId::kUnified, dst, out_dram + off, static_cast<uint32_t>(bytes), 1, 0);
  }
  return true;
}

CompileResult Lowering::run() {
  program_.network = graph_.name;
  program_.batch = graph_.batch;
  program_.matrix_units = hw_.matrix_unit.count;
  program_.total_macs = graph_.total_macs();

  // Off-chip memory: parameters first, then the input, then every layer's output.
  for (const auto& l : graph_.layers) {
    if (l.kind != OpKind::kConv2d && l.kind != OpKind::kDense) continue;
    NPUSIM_CHECK(l.weights.size() == l.reduction() * l.filters, "layer {}: parameters missing",
                 l.name);
    uint64_t w = dram_alloc(l.weights.size());
    program_.dram_init.push_back({w, std::vector<uint8_t>(l.weights.begin(), l.weights.end())});
    uint64_t b = dram_alloc(l.bias.size() * 4);
    DramSegment bias{b, std::vector<uint8_t>(l.bias.size() * 4)};
    std::memcpy(bias.bytes.data(), l.bias.data(), bias.bytes.size());
    program_.dram_init.push_back(std::move(bias));
    params_addr_[l.name] = {w, b};
  }
  auto placement = [&](const std::string& name) {
    TensorShape s = graph_.shape_of(name);
    TensorPlacement p;
    p.name = name;
    p.dram_addr = tensor_addr_.at(name);
    p.batch = graph_.batch;
    p.h = s.h, p.w = s.w, p.c = s.c;
    p.scale = graph_.scale_of(name);
    return p;
  };
  tensor_addr_[graph_.input_name] = dram_alloc(graph_.input_shape.elements() * graph_.batch);
  program_.input = placement(graph_.input_name);
  for (const auto& l : graph_.layers) {
    // Flatten is free: NHWC data is already in flattened order.
    tensor_addr_[l.output] = l.kind == OpKind::kFlatten
                                 ? tensor_addr_.at(l.input)
                                 : dram_alloc(l.out_shape.elements() * graph_.batch);
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
    rec.macs = l.macs(graph_.batch);
    rec.first_instruction = static_cast<uint32_t>(program_.instructions.size());
    uint64_t in_bytes = l.in_shape.elements() * graph_.batch;
    uint64_t out_bytes = l.out_shape.elements() * graph_.batch;
    rec.dram_bytes_lower_bound = l.kind == OpKind::kFlatten
                                     ? 0
                                     : in_bytes + out_bytes + l.weights.size() + 4 * l.bias.size();
    program_.layers.push_back(rec);
    current_ = &program_.layers.back();
    bool ok = true;
    switch (l.kind) {
      case OpKind::kConv2d:
      case OpKind::kDense: ok = lower_conv(l, *current_); break;
      case OpKind::kMaxPool: ok = lower_pool(l, *current_); break;
      case OpKind::kSoftmax: ok = lower_softmax(l, *current_); break;
      case OpKind::kRelu: ok = lower_relu(l, *current_); break;
      case OpKind::kFlatten: current_->tiling = "no instructions: NHWC data is already flat"; break;
    }
    if (!ok) return {false, {}, reason_};
    current_->end_instruction = static_cast<uint32_t>(program_.instructions.size());
  }
  for (const auto& name : graph_.outputs) program_.outputs.push_back(placement(name));
  return {true, std::move(program_), ""};
}

}  // namespace

CompileResult compile(const Graph& graph, const HwConfig& hw) {
  return Lowering(graph, hw).run();
}

}  // namespace npusim
