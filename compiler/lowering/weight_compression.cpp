// Compressed weights off chip (--compress-weights, docs/compression.md). A layer marked
// compress_weights has the boxes its lowering loads recorded by a first run (lowering_context.hpp);
// the second run stores each box on its own in the bitmap, the CSR-like or (int8 weights with
// --compress-weights huffman) the Huffman format (arch/compressed_weights.hpp), padded to whole
// rows of the dense box so that the DMA reads it as a plain box of such rows, and the DMA's
// decompressor expands it into the weight buffer. The format is the layer's: of the candidates the
// one whose boxes take fewer bytes in all, a box that would not shrink being stored dense; a layer
// whose boxes would not shrink in all keeps its dense weights. int4 weights with group scales
// (--weight-group) are always stored so, in the int4-groups format (a box that would not shrink:
// its int8 values), and int4 weights of a bf16 run (W4A16) in the int4-bf16 format, with bf16
// scales per group or per channel (a box that would not shrink: its bf16 values). Boxes are stored
// apart, not cut from one compressed matrix, because a box of a variable-length format can only be
// found from the start of its own record. fp8 weights
// (--dtype fp8-*) are always stored so, one byte a weight, which the decompressor widens to bf16.
#include <fmt/format.h>

#include <algorithm>

#include "compiler/lowering/lowering_context.hpp"
#include "support/error.hpp"

namespace npusim::lowering {

namespace {

// The dense bytes of box b of weights `data` (elements of es bytes, rows of b.ld elements).
std::vector<uint8_t> dense_box(const uint8_t* data, const WeightBox& b, int es) {
  const uint64_t row = uint64_t(b.n_cb) * es;
  std::vector<uint8_t> box(uint64_t(b.k_cb) * row);
  for (int r = 0; r < b.k_cb; ++r) {
    const uint8_t* src = data + (uint64_t(b.kc0 + r) * b.ld + b.n0) * es;
    std::copy(src, src + row, box.begin() + uint64_t(r) * row);
  }
  return box;
}

uint64_t padded(uint64_t bytes, uint64_t row) { return (bytes + row - 1) / row * row; }

}  // namespace

bool Lowering::plan_compressed_weights(const Layer& l) {
  if (!compress_ || boxes_ == nullptr) return false;
  if (l.fp8 != Fp8Format::kNone && !l.on_host) {
    plan_fp8_weights(l);
    return true;
  }
  if (l.int4_weights && (l.weight_group > 0 || es_ == 2)) {
    plan_int4_groups(l);
    return true;
  }
  if (!l.compress_weights) return false;
  const auto it = boxes_->find(l.name);
  const uint8_t* data = es_ == 1 ? reinterpret_cast<const uint8_t*>(l.qweights.data())
                                 : reinterpret_cast<const uint8_t*>(l.bf16_weights.data());
  if (it == boxes_->end() || (l.qweights.empty() && l.bf16_weights.empty())) return false;
  NPUSIM_CHECK(!l.int4_weights, "layer {}: int4 weights marked for compression", l.name);
  // The candidate formats (Huffman for int8 weights when asked), each box encoded in each.
  std::vector<WeightFormat> formats{WeightFormat::kBitmap, WeightFormat::kCsr};
  if (l.huffman_weights && es_ == 1) formats.push_back(WeightFormat::kHuffman);
  struct Encoded {
    std::vector<uint8_t> dense;
    std::vector<std::vector<uint8_t>> by_format;
  };
  std::vector<Encoded> enc;
  uint64_t dense_total = 0;
  std::vector<uint64_t> totals(formats.size(), 0);
  for (const WeightBox& b : it->second) {
    NPUSIM_CHECK(b.k_cb > 0 && b.n_cb > 0 && b.n0 + b.n_cb <= b.ld &&
                     uint64_t(b.kc0 + b.k_cb) * b.ld <= weight_elements(l),
                 "layer {}: weight box rows [{}, {}) columns [{}, {}) of {}", l.name, b.kc0,
                 b.kc0 + b.k_cb, b.n0, b.n0 + b.n_cb, b.ld);
    Encoded e;
    e.dense = dense_box(data, b, es_);
    const WeightBoxShape shape{uint32_t(b.k_cb), uint32_t(b.n_cb), uint32_t(es_), 0, 0};
    const uint64_t row = uint64_t(b.n_cb) * es_;
    dense_total += e.dense.size();
    for (size_t f = 0; f < formats.size(); ++f) {
      e.by_format.push_back(compress_weight_box(e.dense, shape, formats[f]));
      totals[f] += std::min<uint64_t>(padded(e.by_format.back().size(), row), e.dense.size());
    }
    enc.push_back(std::move(e));
  }
  // The smallest in all; on a tie the earlier (simpler) format.
  const size_t chosen = size_t(std::min_element(totals.begin(), totals.end()) - totals.begin());
  const WeightFormat format = formats[chosen];
  const uint64_t total = totals[chosen];
  if (total >= dense_total) return false;
  CompressedWeights& cw = compressed_[l.name];
  cw.format = format;
  cw.dense_bytes = dense_total;
  cw.bytes = total;
  std::vector<uint8_t> store;
  store.reserve(total);
  for (size_t i = 0; i < enc.size(); ++i) {
    const WeightBox& b = it->second[i];
    const uint64_t row = uint64_t(b.n_cb) * es_;
    const std::vector<uint8_t>& c = enc[i].by_format[chosen];
    StoredBox sb;
    sb.addr = store.size();  // relative until the store is placed
    if (padded(c.size(), row) < enc[i].dense.size()) {
      sb.format = format;
      store.insert(store.end(), c.begin(), c.end());
      store.resize(sb.addr + padded(c.size(), row), 0);
    } else {
      store.insert(store.end(), enc[i].dense.begin(), enc[i].dense.end());
    }
    sb.bytes = store.size() - sb.addr;
    cw.boxes.emplace(b, sb);
  }
  NPUSIM_CHECK(store.size() == total, "layer {}: compressed store of {} bytes, counted {}", l.name,
               store.size(), total);
  const uint64_t base = dram_param(store.data(), store.size());
  for (auto& [box, sb] : cw.boxes) sb.addr += base;
  return true;
}

void Lowering::plan_int4_groups(const Layer& l) {
  const auto it = boxes_->find(l.name);
  NPUSIM_CHECK(it != boxes_->end(), "layer {}: int4 weights in groups not recorded", l.name);
  // int8 runs: integer scales of one byte per group (kInt4Groups); bf16 runs (W4A16): bf16 scales
  // per group, or per channel as one group of all rows (kInt4Bf16).
  const bool bf16 = es_ == 2;
  const uint32_t group = l.weight_group > 0 ? uint32_t(l.weight_group) : uint32_t(l.reduction());
  const bool values = bf16 ? !l.bf16_weights.empty() : !l.qweights.empty();
  const uint64_t scales = bf16 ? l.int4_scales.size() : l.group_scales.size();
  NPUSIM_CHECK(!values || scales == (l.reduction() + group - 1) / group * uint64_t(l.filters),
               "layer {}: {} group scales", l.name, scales);
  const uint8_t* data = bf16 ? reinterpret_cast<const uint8_t*>(l.bf16_weights.data())
                             : reinterpret_cast<const uint8_t*>(l.qweights.data());
  const uint8_t* scale_data =
      bf16 ? reinterpret_cast<const uint8_t*>(l.int4_scales.data()) : l.group_scales.data();
  CompressedWeights& cw = compressed_[l.name];
  cw.format = bf16 ? WeightFormat::kInt4Bf16 : WeightFormat::kInt4Groups;
  std::vector<uint8_t> store;
  for (const WeightBox& b : it->second) {
    const WeightBoxShape shape{uint32_t(b.k_cb), uint32_t(b.n_cb), uint32_t(es_), group,
                               uint32_t(b.kc0) % group};
    const uint64_t row = uint64_t(b.n_cb) * es_;
    const uint64_t dense = shape.dense_bytes();
    const uint64_t bytes = padded(int4_box_bytes(shape), row);
    NPUSIM_CHECK(bf16 || b.n_cb % 2 == 0, "layer {}: int4 weights of {} columns", l.name, b.n_cb);
    StoredBox sb;
    sb.addr = cw.bytes;
    sb.format = bytes < dense ? cw.format : WeightFormat::kDense;
    sb.bytes = std::min(bytes, dense);
    if (values) {
      const std::vector<uint8_t> box = dense_box(data, b, es_);
      if (sb.format == WeightFormat::kDense) {
        store.insert(store.end(), box.begin(), box.end());
      } else {
        std::vector<uint8_t> box_scales;
        const uint32_t g0 = uint32_t(b.kc0) / group;
        for (uint32_t g = g0; g < g0 + shape.groups(); ++g) {
          const uint8_t* s = scale_data + (uint64_t(g) * l.filters + b.n0) * es_;
          box_scales.insert(box_scales.end(), s, s + row);
        }
        const std::vector<uint8_t> c = compress_weight_box(box, shape, cw.format, box_scales);
        store.insert(store.end(), c.begin(), c.end());
        store.resize(sb.addr + sb.bytes, 0);
      }
    }
    cw.bytes += sb.bytes;
    cw.dense_bytes += dense;
    cw.boxes.emplace(b, sb);
  }
  NPUSIM_CHECK(!values || store.size() == cw.bytes, "layer {}: int4 store of {} bytes, counted {}",
               l.name, store.size(), cw.bytes);
  const uint64_t base = dram_param(values ? store.data() : nullptr, cw.bytes);
  for (auto& [box, sb] : cw.boxes) sb.addr += base;
}

void Lowering::plan_fp8_weights(const Layer& l) {
  const auto it = boxes_->find(l.name);
  NPUSIM_CHECK(it != boxes_->end() && es_ == 2, "layer {}: fp8 weights not recorded", l.name);
  const bool values = !l.bf16_weights.empty();
  const uint8_t* data = reinterpret_cast<const uint8_t*>(l.bf16_weights.data());
  CompressedWeights& cw = compressed_[l.name];
  cw.format = l.fp8 == Fp8Format::kE4M3 ? WeightFormat::kFp8E4M3 : WeightFormat::kFp8E5M2;
  std::vector<uint8_t> store;
  for (const WeightBox& b : it->second) {
    WeightBoxShape shape{uint32_t(b.k_cb), uint32_t(b.n_cb), 2, 0, 0};
    shape.scale_exp = l.fp8_weight_exp;
    const uint64_t row = uint64_t(b.n_cb) * 2;
    StoredBox sb;
    sb.addr = cw.bytes;
    sb.format = cw.format;
    sb.bytes = padded(shape.dense_bytes() / 2, row);  // one byte a weight, whole bf16 rows
    if (values) {
      const std::vector<uint8_t> c = compress_weight_box(dense_box(data, b, 2), shape, cw.format);
      store.insert(store.end(), c.begin(), c.end());
      store.resize(sb.addr + sb.bytes, 0);
    }
    cw.bytes += sb.bytes;
    cw.dense_bytes += shape.dense_bytes();
    cw.boxes.emplace(b, sb);
  }
  NPUSIM_CHECK(!values || store.size() == cw.bytes, "layer {}: fp8 store of {} bytes, counted {}",
               l.name, store.size(), cw.bytes);
  const uint64_t base = dram_param(values ? store.data() : nullptr, cw.bytes);
  for (auto& [box, sb] : cw.boxes) sb.addr += base;
}

bool Lowering::load_compressed_weights(const Layer& l, uint64_t wb, const WeightBox& b) {
  if (boxes_ == nullptr) return false;
  if (!compress_) {
    std::vector<WeightBox>& seen = (*boxes_)[l.name];
    if (std::find(seen.begin(), seen.end(), b) == seen.end()) seen.push_back(b);
    return false;
  }
  const auto it = compressed_.find(l.name);
  if (it == compressed_.end()) return false;
  const auto box = it->second.boxes.find(b);
  NPUSIM_CHECK(box != it->second.boxes.end(),
               "layer {}: weight box rows [{}, {}) columns [{}, {}) was not recorded", l.name,
               b.kc0, b.kc0 + b.k_cb, b.n0, b.n0 + b.n_cb);
  const StoredBox& sb = box->second;
  const uint64_t row = uint64_t(b.n_cb) * es_;
  if (sb.format == WeightFormat::kDense) {
    dma(UnitKind::kDmaLoad, BufferId::kWeight, wb, sb.addr, row, b.k_cb, row);
    return true;
  }
  DmaOp d = dma_op(BufferId::kWeight, wb, sb.addr, row, sb.bytes / row, row);
  d.format = sb.format;
  d.dense = WeightBoxShape{uint32_t(b.k_cb), uint32_t(b.n_cb), uint32_t(es_), 0, 0};
  if (sb.format == WeightFormat::kFp8E4M3 || sb.format == WeightFormat::kFp8E5M2)
    d.dense.scale_exp = l.fp8_weight_exp;
  if (sb.format == WeightFormat::kInt4Groups || sb.format == WeightFormat::kInt4Bf16) {
    d.dense.group_rows = l.weight_group > 0 ? uint32_t(l.weight_group) : uint32_t(l.reduction());
    d.dense.first_row = uint32_t(b.kc0) % d.dense.group_rows;
  }
  emit(UnitKind::kDmaLoad, 0, d,
       {{BufferId::kDram, sb.addr, sb.addr + sb.bytes, false},
        {BufferId::kWeight, wb, wb + d.buffer_bytes(), true}});
  current_->dram_read_bytes += d.bytes();
  return true;
}

uint64_t Lowering::stored_weight_bytes(const Layer& l) const {
  if (const auto it = compressed_.find(l.name); it != compressed_.end()) return it->second.bytes;
  return l.int4_weights ? weight_elements(l) / 2 : weight_elements(l) * es_;
}

}  // namespace npusim::lowering
