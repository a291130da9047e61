// Data movement (OpKind::kMove) on the DMA queues. The source table (runs of elements,
// compiler/ir/move_table.hpp) is compressed into strided boxes: runs of consecutive output elements
// that copy consecutive elements of one input, then runs of equal length at a constant distance (a
// 2-D box), then such boxes at a constant distance (a 3-D box). Each box is one load DRAM ->
// unified buffer (packed) and one store buffer -> DRAM with the output's strides; between them the
// vector unit rescales int8 values when an input's scale differs from the output's (a concatenation
// of differently scaled tensors). Constant elements (padding, constant operands) come from a block
// in DRAM that holds them in output order. An input or output resident in the unified buffer
// (memory_plan.cpp) is read or written there: the vector unit copies (rescales) a box's 2-D slices
// between the tensor's strided place and a packed slot, or straight from tensor to tensor when
// both are on chip, and the DMA moves only the off-chip side (a resident output is written by the
// vector unit only).
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "arch/activation.hpp"
#include "arch/quant.hpp"
#include "compiler/ir/backward_rules.hpp"
#include "compiler/lowering/lowering_context.hpp"
#include "support/error.hpp"

namespace npusim::lowering {

namespace {

// count[2] boxes of count[1] runs of `len` elements; strides in elements.
struct MoveBox {
  int input = -1;  // -1: the constant block
  uint64_t in_start = 0, out_start = 0, len = 0;
  uint64_t count[2] = {1, 1};
  uint64_t in_stride[2] = {0, 0}, out_stride[2] = {0, 0};
  uint64_t elements() const { return len * count[0] * count[1]; }
};

// Merges consecutive boxes along `level` (-1: elements into runs no longer than max_len; 0: runs
// into 2-D boxes, 1: 2-D into 3-D boxes) while the box stays within max_elements, one box at a
// time: `pending_` is the box still growing, handed to `next` once one does not join it.
template <class Next>
class BoxMerger {
 public:
  BoxMerger(int level, uint64_t max_elements, Next next)
      : level_(level), max_(max_elements), next_(std::move(next)) {}
  void add(const MoveBox& b) {
    if (has_ && joins(b)) return;
    if (has_) next_(pending_);
    pending_ = b;
    has_ = true;
  }
  void finish() {
    if (has_) next_(pending_);
    has_ = false;
  }
  // Runs only: `count` consecutive source elements from `at` (constants: consecutive in the
  // block) for output elements from `out`, as `count` one-element boxes would be merged.
  void add_consecutive(int input, uint64_t at, uint64_t out, uint64_t count) {
    while (count > 0) {
      if (!(has_ && pending_.input == input && at == pending_.in_start + pending_.len &&
            pending_.len < max_)) {
        if (has_) next_(pending_);
        pending_ = MoveBox{};
        pending_.input = input, pending_.in_start = at, pending_.out_start = out;
        has_ = true;
      }
      const uint64_t n = std::min(count, max_ - pending_.len);
      pending_.len += n, at += n, out += n, count -= n;
    }
  }

 private:
  bool joins(const MoveBox& b) {
    MoveBox& g = pending_;
    if (level_ < 0) {
      if (g.input == b.input && b.in_start == g.in_start + g.len && g.len < max_) {
        ++g.len;
        return true;
      }
      return false;
    }
    bool same = g.input == b.input && g.len == b.len && g.elements() + b.elements() <= max_ &&
                b.out_start > g.out_start && b.in_start >= g.in_start;
    if (level_ == 1) {
      same = same && g.count[0] == b.count[0] && g.in_stride[0] == b.in_stride[0] &&
             g.out_stride[0] == b.out_stride[0];
    }
    if (!same) return false;
    const uint64_t din = b.in_start - g.in_start, dout = b.out_start - g.out_start;
    if (g.count[level_] == 1) {
      g.in_stride[level_] = din;
      g.out_stride[level_] = dout;
      ++g.count[level_];
      return true;
    }
    if (din == g.count[level_] * g.in_stride[level_] &&
        dout == g.count[level_] * g.out_stride[level_]) {
      ++g.count[level_];
      return true;
    }
    return false;
  }
  int level_;
  uint64_t max_;
  Next next_;
  MoveBox pending_;
  bool has_ = false;
};

// The strided boxes of a move: runs of consecutive output elements that copy consecutive elements
// of one input, no longer than max_elements, merged into 2-D boxes, then 3-D ones, in output
// order, straight from the table's runs (no per-element table). The constants copied are appended
// to `constants` (in the output's element type, `bytes_of` converts one) in output order, so
// constant runs are consecutive in it.
template <class BytesOf>
std::vector<MoveBox> move_boxes(const Layer& l, uint64_t max_elements,
                                std::vector<uint8_t>& constants, size_t element_bytes,
                                BytesOf bytes_of) {
  std::vector<MoveBox> boxes;
  BoxMerger boxes_3d(1, max_elements, [&](const MoveBox& b) { boxes.push_back(b); });
  BoxMerger boxes_2d(0, max_elements, [&](const MoveBox& b) { boxes_3d.add(b); });
  BoxMerger runs(-1, max_elements, [&](const MoveBox& b) { boxes_2d.add(b); });
  for (const MoveRun& r : l.move_from.runs()) {
    if (r.input < 0) {
      const uint64_t at = constants.size() / element_bytes;
      for (uint64_t i = 0; i < r.count; ++i) {
        bytes_of(l.move_constants.at(size_t(r.at(i).element)), constants);
      }
      runs.add_consecutive(-1, at, r.out, r.count);
    } else if (r.stride == 1 || r.count == 1) {
      runs.add_consecutive(r.input, uint64_t(r.first), r.out, r.count);
    } else {
      for (uint64_t i = 0; i < r.count; ++i) {
        MoveBox b;
        b.input = r.input, b.in_start = uint64_t(r.at(i).element), b.out_start = r.out + i;
        b.len = 1;
        runs.add(b);
      }
    }
  }
  runs.finish();
  boxes_2d.finish();
  boxes_3d.finish();
  return boxes;
}

}  // namespace

void Lowering::dma_box(UnitKind unit, uint64_t ub_addr, uint64_t dram_addr,
                       const uint32_t (&count)[3], const uint64_t (&stride)[2]) {
  DmaOp d;
  d.buffer = BufferId::kUnified;
  d.buffer_addr = ub_addr;
  d.dram_addr = dram_addr;
  std::copy(count, count + 3, d.count);
  std::copy(stride, stride + 2, d.dram_stride);
  d.transpose_element_bytes = es_;
  const bool load = unit == UnitKind::kDmaLoad;
  const uint64_t dram_end =
      dram_addr + (count[2] - 1) * stride[1] + (count[1] - 1) * stride[0] + count[0];
  emit(unit, 0, d,
       {{BufferId::kDram, dram_addr, dram_end, !load},
        {BufferId::kUnified, ub_addr, ub_addr + d.bytes(), load}});
  (load ? current_->dram_read_bytes : current_->dram_write_bytes) += d.bytes();
}

bool Lowering::lower_move(const Layer& l, LayerRecord& rec) {
  // Two slots for loaded boxes and two for boxes on their way out, in the layer's scratch range.
  // A transpose's operands stay off chip (memory_plan.cpp); other moves' may be resident.
  const uint64_t slot = ub_capacity() / 4 / kAlign * kAlign;
  if (slot < uint64_t(es_)) {
    return fail(fmt::format("layer '{}' does not fit: the unified buffer ({} bytes) is too small",
                            l.name, ub_capacity()));
  }
  const uint64_t max_elements = slot / es_;
  if (l.move_op == kTransposeRowsMove) return lower_transpose_move(l, rec, slot);
  // The constants on the output's scale (int8) or in bf16.
  std::vector<uint8_t> constants;
  const std::vector<MoveBox> boxes =
      move_boxes(l, max_elements, constants, es_, [&](float c, std::vector<uint8_t>& to) {
        if (es_ == 1) {
          to.push_back(static_cast<uint8_t>(saturate_round(c / l.out_scale)));
        } else {
          const uint16_t bits = float_to_bf16_bits(c);
          uint8_t b[2];
          std::memcpy(b, &bits, 2);
          to.insert(to.end(), b, b + 2);
        }
      });
  uint64_t constants_dram = 0;
  if (!constants.empty()) {
    constants_dram = dram_param(constants.data(), constants.size());
    program_.dram_bytes = std::max(program_.dram_bytes, dram_top_);
  }
  rec.tiling = fmt::format("{} strided boxes per sample", boxes.size());
  const uint64_t out_elements = l.out_shape.elements();
  const bool out_on_chip = resident(l.output);
  // A box's elements in the unified buffer: strided as a tensor's (in elements), or packed.
  struct Side {
    uint64_t addr;
    uint64_t stride[2];
  };
  auto packed_side = [](const MoveBox& b, uint64_t addr) {
    return Side{addr, {b.len, b.len * b.count[0]}};
  };
  auto is_packed = [](const MoveBox& b, const Side& s) {
    return (b.count[0] == 1 || s.stride[0] == b.len) &&
           (b.count[1] == 1 || s.stride[1] == b.len * b.count[0]);
  };
  // The vector unit copies (or rescales by `ratio`) a box from one place of the unified buffer to
  // another: one instruction for a packed box, else one per 2-D slice.
  auto copy_box = [&](const MoveBox& b, const Side& from, const Side& to, float ratio) {
    const bool whole = is_packed(b, from) && is_packed(b, to);
    const uint64_t rows = whole ? 1 : b.count[0], cols = whole ? b.elements() : b.len;
    for (uint64_t z = 0; z < (whole ? 1 : b.count[1]); ++z) {
      EltwiseOp e;
      e.kind = EltwiseKind::kRescale;
      e.a_ub_addr = from.addr + z * from.stride[1] * es_;
      e.out_ub_addr = to.addr + z * to.stride[1] * es_;
      e.rows = static_cast<int>(rows), e.cols = static_cast<int>(cols);
      e.a_ld = static_cast<int>(whole ? cols : from.stride[0]);
      e.out_ld = static_cast<int>(whole ? cols : to.stride[0]);
      e.ra = ratio;
      const uint64_t a_end = e.a_ub_addr + ((rows - 1) * uint64_t(e.a_ld) + cols) * es_;
      const uint64_t out_end = e.out_ub_addr + ((rows - 1) * uint64_t(e.out_ld) + cols) * es_;
      emit(UnitKind::kVector, 0, e,
           {{BufferId::kUnified, e.a_ub_addr, a_end, false},
            {BufferId::kUnified, e.out_ub_addr, out_end, true}});
    }
  };
  int n = 0;
  for (int img = 0; img < graph_.batch; ++img) {
    for (const MoveBox& b : boxes) {
      const auto k = static_cast<size_t>(b.input);
      const bool in_on_chip = b.input >= 0 && resident(l.inputs[k]);
      const uint64_t in_at = b.input < 0 ? 0 : uint64_t(img) * l.in_shapes[k].elements();
      const uint64_t src = b.input < 0  ? constants_dram + b.in_start * es_
                           : in_on_chip ? ub_addr(l.inputs[k]) + (in_at + b.in_start) * es_
                                        : tensor_addr_.at(l.inputs[k]) + (in_at + b.in_start) * es_;
      const uint64_t dst = (out_on_chip ? ub_addr(l.output) : tensor_addr_.at(l.output)) +
                           (img * out_elements + b.out_start) * es_;
      const uint32_t count[3] = {static_cast<uint32_t>(b.len * es_),
                                 static_cast<uint32_t>(b.count[0]),
                                 static_cast<uint32_t>(b.count[1])};
      const uint64_t in_stride[2] = {b.in_stride[0] * es_, b.in_stride[1] * es_};
      const uint64_t out_stride[2] = {b.out_stride[0] * es_, b.out_stride[1] * es_};
      const float ratio = b.input < 0 || l.input_ratios.empty() ? 1.0f : l.input_ratios[k];
      const bool rescale = es_ == 1 && ratio != 1.0f;
      // An off-chip side passes through a packed slot of the layer's scratch range: two for loaded
      // boxes, two for boxes on their way out.
      const Side loaded = packed_side(b, scratch_base() + (n % 2) * slot);
      const Side leaving = packed_side(b, scratch_base() + (2 + n % 2) * slot);
      ++n;
      // A resident output is written by the vector unit only, never loaded into by the DMA
      // (models/tensor_shadows.hpp captures a resident tensor's values from its vector writes).
      const Side from = in_on_chip ? Side{src, {b.in_stride[0], b.in_stride[1]}} : loaded;
      const Side to = out_on_chip ? Side{dst, {b.out_stride[0], b.out_stride[1]}} : leaving;
      if (!in_on_chip) dma_box(UnitKind::kDmaLoad, from.addr, src, count, in_stride);
      if (!out_on_chip && !rescale && is_packed(b, from)) {
        dma_box(UnitKind::kDmaStore, from.addr, dst, count, out_stride);  // no copy needed
        continue;
      }
      copy_box(b, from, to, ratio);
      if (!out_on_chip) dma_box(UnitKind::kDmaStore, to.addr, dst, count, out_stride);
    }
  }
  return true;
}

// The transpose of a [rows, cols] matrix (kTransposeRowsMove, compiler/ir/backward_rules.hpp) in
// blocks of rb rows x cb columns: a 2-D load of rb rows of cb elements that the DMA packs
// transposed (DmaOp::transpose: cb rows of rb elements), then one store of those cb rows at the
// output's row stride. Off chip, both sides read and write runs of a block's width, not elements.
bool Lowering::lower_transpose_move(const Layer& l, LayerRecord& rec, uint64_t slot) {
  NPUSIM_CHECK(l.inputs.size() == 1 && l.reshape_to.size() == 2, "layer {}: not a 2-D transpose",
               l.name);
  const uint64_t cols = uint64_t(l.reshape_to[0]), rows = uint64_t(l.reshape_to[1]);
  NPUSIM_CHECK(l.move_from.size() == rows * cols && l.in_shapes[0].elements() == rows * cols,
               "layer {}: a transpose of {} elements for [{}, {}]", l.name, l.move_from.size(),
               rows, cols);
  for (const MoveRun& m : l.move_from.runs()) {  // always on: the table is the transpose it claims
    const uint64_t c = m.out / rows, r = m.out % rows;
    if (m.input == 0 && uint64_t(m.first) == r * cols + c &&
        (m.count == 1 || uint64_t(m.stride) == cols) && r + m.count <= rows) {
      continue;  // a stretch of column c
    }
    for (uint64_t j = m.out; j < m.out + m.count; ++j) {
      NPUSIM_CHECK(
          m.input == 0 && uint64_t(m.at(j - m.out).element) == (j % rows) * cols + j / rows,
          "layer {}: element ({}, {}) is no transpose", l.name, j / rows, j % rows);
    }
  }
  const uint64_t max_elements = slot / es_;
  const uint64_t cb = std::min(cols, max_elements), rb = std::min(rows, max_elements / cb);
  rec.tiling = fmt::format("transposing loads of {} rows x {} columns", rb, cb);
  const uint64_t in = tensor_addr_.at(l.inputs[0]), out = tensor_addr_.at(l.output);
  int n = 0;
  for (int img = 0; img < graph_.batch; ++img) {
    const uint64_t base = uint64_t(img) * rows * cols;
    for (uint64_t r0 = 0; r0 < rows; r0 += rb) {
      const uint64_t nr = std::min(rb, rows - r0);
      for (uint64_t c0 = 0; c0 < cols; c0 += cb) {
        const uint64_t nc = std::min(cb, cols - c0);
        const uint64_t ub = scratch_base() + (n++ % 2) * slot;
        dma(UnitKind::kDmaLoad, BufferId::kUnified, ub, in + (base + r0 * cols + c0) * es_,
            nc * es_, nr, cols * es_, /*transpose=*/true);
        dma(UnitKind::kDmaStore, BufferId::kUnified, ub, out + (base + c0 * rows + r0) * es_,
            nr * es_, nc, rows * es_);
      }
    }
  }
  return true;
}

// An embedding lookup: per sample, chunks of ids, each one indexed load of the rows its ids select
// (the table and the ids stay off chip) into one of two slots of the unified buffer, then one
// store of the packed rows to the output. The rows keep the table's scale or bf16 values.
bool Lowering::lower_embedding(const Layer& l, LayerRecord& rec) {
  NPUSIM_CHECK(graph_.input_ids && l.inputs[0] == graph_.input_name,
               "embedding {} does not read the graph's int32 ids", l.name);
  const uint64_t row = uint64_t(l.filters) * es_;
  const uint64_t vocab = (es_ == 1 ? l.qweights.size() : l.bf16_weights.size()) / l.filters;
  const uint64_t slot = ub_capacity() / 2 / kAlign * kAlign;
  if (slot < row) {
    return fail(
        fmt::format("layer '{}' does not fit: an embedding row of {} bytes needs {} bytes "
                    "of the unified buffer, it has {}",
                    l.name, row, 2 * row, ub_capacity()));
  }
  const uint64_t ids = l.in_shapes[0].elements();
  const uint64_t chunk = std::min<uint64_t>({ids, slot / row, UINT32_MAX});
  rec.tiling =
      fmt::format("{} indexed loads of up to {} rows per sample", (ids + chunk - 1) / chunk, chunk);
  const uint64_t table = params_.at(l.name).weights;
  int n = 0;
  for (int img = 0; img < graph_.batch; ++img) {
    for (uint64_t i = 0; i < ids; i += chunk) {
      const uint64_t rows = std::min(chunk, ids - i);
      const uint64_t ub = scratch_base() + (n++ % 2) * slot;
      DmaOp d = dma_op(BufferId::kUnified, ub, table, row, rows, row);
      d.indexed = true;
      d.index_addr = dram_addr(l.inputs[0]) + (img * ids + i) * 4;
      d.index_rows = static_cast<uint32_t>(vocab);
      emit(UnitKind::kDmaLoad, 0, d,
           {{BufferId::kDram, table, table + vocab * row, false},
            {BufferId::kDram, d.index_addr, d.index_addr + 4 * rows, false},
            {BufferId::kUnified, ub, ub + d.bytes(), true}});
      current_->dram_read_bytes += d.bytes() + d.index_bytes();
      dma_linear(UnitKind::kDmaStore, ub, dram_addr(l.output) + (img * ids + i) * row, rows * row);
    }
  }
  return true;
}

}  // namespace npusim::lowering
