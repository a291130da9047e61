#include "compiler/lowering/ring_allreduce.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "arch/activation.hpp"
#include "compiler/lowering/tail_emitter.hpp"
#include "compiler/lowering/tiling_math.hpp"
#include "support/error.hpp"

namespace npusim {

namespace {

constexpr uint64_t kElementBytes = 2;      // bf16
constexpr uint64_t kChunkElements = 32;    // chunk boundaries: 64-byte aligned buffer addresses
constexpr uint64_t kDramAlignment = 4096;  // as the memory plan aligns tensors

struct Range {
  uint64_t begin = 0, end = 0;  // elements
  uint64_t bytes() const { return (end - begin) * kElementBytes; }
};

// `elements` in `n` chunks of whole kChunkElements runs, as even as they come, the first ones one
// run longer (a chunk may be empty when the piece has fewer runs than cores).
std::vector<Range> chunks(uint64_t elements, int n) {
  const uint64_t runs = (elements + kChunkElements - 1) / kChunkElements;
  std::vector<Range> out;
  uint64_t run = 0;
  for (int k = 0; k < n; ++k) {
    const uint64_t take = runs / uint64_t(n) + (uint64_t(k) < runs % uint64_t(n) ? 1 : 0);
    out.push_back({std::min(elements, run * kChunkElements),
                   std::min(elements, (run + take) * kChunkElements)});
    run += take;
  }
  return out;
}

// Pieces of at most piece_bytes of a tensor of `elements`.
std::vector<Range> pieces(uint64_t elements, uint64_t piece_bytes) {
  const uint64_t per = piece_bytes / kElementBytes;
  std::vector<Range> out;
  for (uint64_t b = 0; b < elements; b += per) out.push_back({b, std::min(elements, b + per)});
  return out;
}

int mod(int a, int n) { return ((a % n) + n) % n; }

// Emits instructions at the end of a program: dependencies from the hazard tracker over the
// all-reduce's own accesses, and an instruction with none of those waits for the barrier (each
// unit's last instruction before the all-reduce).
class Emitter : public TailEmitter {
 public:
  explicit Emitter(Program& p) : TailEmitter(p) {}

  void dma(int core, bool load, uint64_t ub, uint64_t dram, uint64_t bytes) {
    DmaOp d;
    d.buffer = BufferId::kUnified;
    d.buffer_addr = ub;
    d.dram_addr = dram;
    NPUSIM_CHECK(bytes > 0 && bytes <= UINT32_MAX, "all-reduce: a DMA of {} bytes", bytes);
    d.count[0] = uint32_t(bytes);
    emit(
        core, load ? UnitKind::kDmaLoad : UnitKind::kDmaStore, d,
        {{BufferId::kDram, dram, dram + bytes, !load}, {BufferId::kUnified, ub, ub + bytes, load}});
    LayerRecord& rec = p_.layers.back();
    (load ? rec.dram_read_bytes : rec.dram_write_bytes) += bytes;
  }
  void copy(int from, int to, uint64_t src, uint64_t dst, uint64_t bytes) {
    emit(from, UnitKind::kLink, CopyOp{to, src, dst, bytes},
         {{BufferId::kUnified, src, src + bytes, false, from},
          {BufferId::kUnified, dst, dst + bytes, true, to}});
  }
  // out = a + b, bf16, `elements` of them.
  void add(int core, uint64_t a, uint64_t b, uint64_t out, uint64_t elements) {
    EltwiseOp e;
    e.kind = EltwiseKind::kAdd;
    e.a_ub_addr = a, e.b_ub_addr = b, e.out_ub_addr = out;
    e.rows = 1;
    e.cols = int(elements);
    e.a_ld = e.b_ld = e.out_ld = e.cols;
    const uint64_t bytes = elements * kElementBytes;
    emit(core, UnitKind::kVector, e,
         {{BufferId::kUnified, a, a + bytes, false},
          {BufferId::kUnified, b, b + bytes, false},
          {BufferId::kUnified, out, out + bytes, true}});
  }
};

}  // namespace

uint64_t allreduce_piece_bytes(const HwConfig& hw) {
  // The piece and two receive slots of at most half of it (N >= 2) fit a quarter of the buffer
  // twice over: consecutive pieces can sit side by side.
  const uint64_t quarter = hw.unified_buffer.capacity_bytes / 4;
  const uint64_t piece = std::min<uint64_t>(uint64_t{1} << 20, quarter);
  const uint64_t unit = kChunkElements * kElementBytes;
  NPUSIM_CHECK(piece >= unit, "all-reduce: a unified buffer of {} bytes",
               hw.unified_buffer.capacity_bytes);
  return piece / unit * unit;
}

AllReduceSummary append_ring_allreduce(Program& p, const HwConfig& hw,
                                       const std::vector<size_t>& outputs) {
  const int n = p.cores;
  NPUSIM_CHECK(n >= 2 && n <= hw.cores, "all-reduce over {} cores of a chip of {}", n, hw.cores);
  Emitter e(p);
  const uint64_t piece_bytes = allreduce_piece_bytes(hw);
  const uint64_t capacity = hw.unified_buffer.capacity_bytes;
  uint64_t ub_next = 0;  // a bump allocator over the unified buffer, the same on every core
  auto ub_alloc = [&](uint64_t bytes) {
    bytes = lowering::align_up(bytes);
    if (ub_next + bytes > capacity) ub_next = 0;  // the tracker orders the reuse
    const uint64_t at = ub_next;
    ub_next += bytes;
    return at;
  };
  uint64_t top = (p.dram_bytes + kDramAlignment - 1) / kDramAlignment * kDramAlignment;
  AllReduceSummary s;
  std::vector<uint64_t> core_link(size_t(n), 0);
  for (const size_t o : outputs) {
    NPUSIM_CHECK(o < p.outputs.size(), "all-reduce of output {} of {}", o, p.outputs.size());
    const TensorPlacement t = p.outputs[o];
    NPUSIM_CHECK(t.element_bytes == int(kElementBytes) && t.parts.size() == size_t(n),
                 "all-reduce: output {} has {} parts of {}-byte elements, expected {} of bf16",
                 t.name, t.parts.size(), t.element_bytes, n);
    for (int c = 0; c < n; ++c) {
      const TensorPart& part = t.parts[size_t(c)];
      NPUSIM_CHECK(part.core == c && part.batch == 1 && part.buffer == BufferId::kDram,
                   "all-reduce: part {} of {} is not core {}'s one sample off chip", c, t.name, c);
    }
    const uint64_t elements = t.sample_bytes() / kElementBytes;
    TensorPlacement sum;
    sum.name = t.name + ".allreduced";
    sum.dram_addr = top;
    sum.batch = 1;
    sum.dims = t.dims;
    sum.scale = t.scale;
    sum.element_bytes = t.element_bytes;
    sum.first_layer = sum.last_layer = int(p.layers.size());
    top = (top + elements * kElementBytes + kDramAlignment - 1) / kDramAlignment * kDramAlignment;

    LayerRecord rec;
    rec.name = "allreduce " + t.name;
    rec.op = "allreduce";
    rec.first_instruction = uint32_t(p.instructions.size());
    rec.cores = n;
    rec.parallel = fmt::format("data: ring all-reduce over {} cores", n);
    const std::vector<Range> ps = pieces(elements, piece_bytes);
    rec.tiling = fmt::format(
        "ring all-reduce of {} bytes in {} piece(s) of up to {} bytes, {} chunks each: {} "
        "reduce-scatter and {} all-gather steps",
        elements * kElementBytes, ps.size(), piece_bytes, n, n - 1, n - 1);
    p.layers.push_back(rec);
    for (const Range& piece : ps) {
      const uint64_t bytes = piece.bytes();
      const std::vector<Range> ch = chunks(piece.end - piece.begin, n);
      uint64_t widest = 0;
      for (const Range& r : ch) widest = std::max(widest, r.bytes());
      const uint64_t base = ub_alloc(bytes);
      const uint64_t slot[2] = {ub_alloc(widest), ub_alloc(widest)};
      const uint64_t off = piece.begin * kElementBytes;
      for (int c = 0; c < n; ++c) e.dma(c, true, base, t.parts[size_t(c)].dram_addr + off, bytes);
      auto at = [&](const Range& r) { return base + r.begin * kElementBytes; };
      for (int step = 0; step + 1 < n; ++step) {  // reduce-scatter
        for (int c = 0; c < n; ++c) {
          const Range& r = ch[size_t(mod(c - step, n))];
          if (r.bytes() == 0) continue;
          e.copy(c, mod(c + 1, n), at(r), slot[step % 2], r.bytes());
          core_link[size_t(c)] += r.bytes();
        }
        for (int c = 0; c < n; ++c) {
          const int to = mod(c + 1, n);
          const Range& r = ch[size_t(mod(c - step, n))];
          if (r.bytes() == 0) continue;
          e.add(to, at(r), slot[step % 2], at(r), r.end - r.begin);
        }
      }
      for (int c = 0; c < n; ++c) {  // each core's completed chunk, off chip
        const Range& r = ch[size_t(mod(c + 1, n))];
        if (r.bytes() > 0)
          e.dma(c, false, at(r), sum.dram_addr + off + r.begin * kElementBytes, r.bytes());
      }
      for (int step = 0; step + 1 < n; ++step) {  // all-gather
        for (int c = 0; c < n; ++c) {
          const Range& r = ch[size_t(mod(c + 1 - step, n))];
          if (r.bytes() == 0) continue;
          e.copy(c, mod(c + 1, n), at(r), at(r), r.bytes());
          core_link[size_t(c)] += r.bytes();
        }
      }
    }
    LayerRecord& done = p.layers.back();
    done.end_instruction = uint32_t(p.instructions.size());
    s.dram_read_bytes += done.dram_read_bytes;
    s.dram_write_bytes += done.dram_write_bytes;
    s.tensor_bytes += elements * kElementBytes;
    s.reduced_outputs.push_back(p.outputs.size());
    p.outputs.push_back(sum);
  }
  for (uint64_t b : core_link) {
    s.link_bytes += b;
    s.max_core_link_bytes = std::max(s.max_core_link_bytes, b);
  }
  p.dram_bytes = top;
  return s;
}

std::vector<uint16_t> ring_sum_bf16(const std::vector<std::vector<uint16_t>>& parts,
                                    uint64_t piece_bytes) {
  const int n = int(parts.size());
  NPUSIM_CHECK(n >= 1, "a ring sum of no parts");
  const uint64_t elements = parts[0].size();
  for (const auto& part : parts) {
    NPUSIM_CHECK(part.size() == elements, "ring sum: parts of {} and {} elements", part.size(),
                 elements);
  }
  std::vector<uint16_t> out(elements);
  for (const Range& piece : pieces(elements, piece_bytes)) {
    const std::vector<Range> ch = chunks(piece.end - piece.begin, n);
    for (int k = 0; k < n; ++k) {
      for (uint64_t i = ch[size_t(k)].begin; i < ch[size_t(k)].end; ++i) {
        const uint64_t at = piece.begin + i;
        // Chunk k starts on core k and gathers cores k + 1, ..., k + n - 1 in turn.
        uint16_t acc = parts[size_t(k)][at];
        for (int j = 1; j < n; ++j) {
          const float own = bf16_bits_to_float(parts[size_t(mod(k + j, n))][at]);
          acc = float_to_bf16_bits(own + bf16_bits_to_float(acc));
        }
        out[at] = acc;
      }
    }
  }
  return out;
}

}  // namespace npusim
