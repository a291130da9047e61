#include "compiler/lowering/optimizer_update.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "compiler/lowering/tail_emitter.hpp"
#include "compiler/lowering/tiling_math.hpp"
#include "support/error.hpp"

namespace npusim {

namespace {

constexpr uint64_t kDramAlignment = 4096;  // as the memory plan aligns tensors
using Kind = OptimizerConstants::Kind;

// The unified-buffer side of a tile: each buffer's address on the tile's core.
struct TileBuffers {
  uint64_t g = 0, w = 0, m = 0, v = 0, t = 0, d = 0, wb = 0, x = 0;
};

// The update's instructions wait for each unit's last instruction before them.
class Emitter : public TailEmitter {
 public:
  Emitter(Program& p, const HwConfig& hw)
      : TailEmitter(p),
        capacity_(hw.unified_buffer.capacity_bytes),
        next_(size_t(std::max(1, p.cores)), lowering::kAlign) {}

  // A DMA of count[1] rows of `row` bytes, `stride` apart off chip, packed on chip (transposed:
  // a load whose buffer side is the box's transpose, elements of 2 bytes).
  void dma(int core, bool load, uint64_t ub, uint64_t dram, uint64_t row, uint64_t rows,
           uint64_t stride, bool transpose = false) {
    NPUSIM_CHECK(row > 0 && rows > 0 && row <= UINT32_MAX && rows <= UINT32_MAX,
                 "optimizer: a DMA of {} rows of {} bytes", rows, row);
    DmaOp d;
    d.buffer = BufferId::kUnified;
    d.buffer_addr = ub;
    d.dram_addr = dram;
    d.count[0] = uint32_t(row);
    d.count[1] = uint32_t(rows);
    d.dram_stride[0] = rows > 1 ? stride : 0;
    d.transpose = transpose;
    d.transpose_element_bytes = 2;
    const uint64_t bytes = row * rows;
    const uint64_t span = (rows - 1) * (rows > 1 ? stride : 0) + row;
    emit(core, load ? UnitKind::kDmaLoad : UnitKind::kDmaStore, d,
         {{BufferId::kDram, dram, dram + span, !load}, {BufferId::kUnified, ub, ub + bytes, load}});
    LayerRecord& rec = p_.layers.back();
    (load ? rec.dram_read_bytes : rec.dram_write_bytes) += bytes;
    (load ? read_ : written_) += bytes;
  }
  // One fp32 operation over `n` packed elements.
  void op(int core, Fp32Kind kind, uint64_t n, uint64_t a, bool a_bf16, uint64_t b, bool b_bf16,
          bool b_scalar, uint64_t out, bool out_bf16, float ra, float rb) {
    Fp32Op f;
    f.kind = kind;
    f.a_ub_addr = a, f.b_ub_addr = b, f.out_ub_addr = out;
    NPUSIM_CHECK(n > 0 && n <= uint64_t(INT32_MAX), "optimizer: {} elements in one operation", n);
    f.rows = 1;
    f.cols = f.a_ld = f.b_ld = f.out_ld = int(n);
    f.a_bf16 = a_bf16, f.b_bf16 = b_bf16, f.out_bf16 = out_bf16, f.b_scalar = b_scalar;
    f.ra = ra, f.rb = rb;
    std::vector<BufferAccess> acc{{BufferId::kUnified, a, a + n * f.a_bytes(), false}};
    if (f.reads_b()) {
      acc.push_back({BufferId::kUnified, b, b + (b_scalar ? 4 : n * f.b_bytes()), false});
    }
    acc.push_back({BufferId::kUnified, out, out + n * f.out_bytes(), true});
    emit(core, UnitKind::kVector, f, acc);
  }
  // Unified-buffer space on `core`: a ring over the buffer (after the scalars' slot) whose reuse
  // the hazard tracker orders.
  uint64_t alloc(int core, uint64_t bytes) {
    bytes = lowering::align_up(bytes);
    uint64_t& next = next_[size_t(core)];
    if (next + bytes > capacity_) next = lowering::kAlign;
    const uint64_t at = next;
    next += bytes;
    return at;
  }
  uint64_t read_bytes() const { return read_; }
  uint64_t written_bytes() const { return written_; }

 private:
  uint64_t capacity_;
  std::vector<uint64_t> next_;
  uint64_t read_ = 0, written_ = 0;
};

// Unified-buffer bytes a tile of one element needs, for the optimizer `k`: the bf16 gradient, the
// fp32 master and state, Adam's two temporaries, the bf16 weights and their transposed copy.
uint64_t tile_bytes_per_element(const OptimizerConstants& k) {
  return 2 + 4 + 4 * uint64_t(k.state_per_parameter()) + (k.kind == Kind::kAdam ? 8 : 0) + 2 + 2;
}

// The update of `n` elements at `b` (the scalars [c1, c2] at `scalars`), each operation rounded as
// Optimizer::update (npusim/training_state.cpp) rounds it.
void update(Emitter& e, int core, const OptimizerConstants& k, uint64_t n, const TileBuffers& b,
            uint64_t scalars) {
  const auto f32 = false, bf16 = true;
  switch (k.kind) {
    case Kind::kSgd:  // w + g x (-lr): -(lr g) is exactly the negated product
      e.op(core, Fp32Kind::kAxpby, n, b.w, f32, b.g, bf16, false, b.w, f32, 1.0f, -k.lr);
      return;
    case Kind::kMomentum:
      e.op(core, Fp32Kind::kAxpby, n, b.m, f32, b.g, bf16, false, b.m, f32, k.momentum, 1.0f);
      e.op(core, Fp32Kind::kAxpby, n, b.w, f32, b.m, f32, false, b.w, f32, 1.0f, -k.lr);
      return;
    case Kind::kAdam:
      e.op(core, Fp32Kind::kAxpby, n, b.m, f32, b.g, bf16, false, b.m, f32, k.beta1,
           k.one_minus_beta1);
      e.op(core, Fp32Kind::kMul, n, b.g, bf16, b.g, bf16, false, b.t, f32, k.one_minus_beta2, 1.0f);
      e.op(core, Fp32Kind::kAxpby, n, b.v, f32, b.t, f32, false, b.v, f32, k.beta2, 1.0f);
      e.op(core, Fp32Kind::kSqrt, n, b.v, f32, scalars + 4, f32, true, b.d, f32, k.eps, 1.0f);
      e.op(core, Fp32Kind::kDiv, n, b.m, f32, scalars, f32, true, b.t, f32, 1.0f, 1.0f);
      e.op(core, Fp32Kind::kDiv, n, b.t, f32, b.d, f32, false, b.t, f32, k.lr, 1.0f);
      e.op(core, Fp32Kind::kAxpby, n, b.w, f32, b.t, f32, false, b.w, f32, 1.0f, -1.0f);
      return;
  }
}

TileBuffers alloc_tile(Emitter& e, int core, const OptimizerConstants& k, uint64_t n) {
  TileBuffers b;
  b.g = e.alloc(core, 2 * n);
  b.w = e.alloc(core, 4 * n);
  if (k.state_per_parameter() >= 1) b.m = e.alloc(core, 4 * n);
  if (k.state_per_parameter() >= 2) b.v = e.alloc(core, 4 * n);
  if (k.kind == Kind::kAdam) {
    b.t = e.alloc(core, 4 * n);
    b.d = e.alloc(core, 4 * n);
  }
  b.wb = e.alloc(core, 2 * n);
  b.x = e.alloc(core, 2 * n);
  return b;
}

// Master and state of `n` elements at element `at` of their arrays: loaded, updated, stored.
// `state[s]`: the state arrays' addresses.
void load_update_store(Emitter& e, int core, const OptimizerConstants& k, uint64_t n,
                       const TileBuffers& b, uint64_t master, const uint64_t state[2], uint64_t at,
                       uint64_t scalars) {
  e.dma(core, true, b.w, master + 4 * at, 4 * n, 1, 0);
  const uint64_t bufs[2] = {b.m, b.v};
  for (int s = 0; s < k.state_per_parameter(); ++s) {
    e.dma(core, true, bufs[s], state[s] + 4 * at, 4 * n, 1, 0);
  }
  update(e, core, k, n, b, scalars);
  e.dma(core, false, b.w, master + 4 * at, 4 * n, 1, 0);
  for (int s = 0; s < k.state_per_parameter(); ++s) {
    e.dma(core, false, bufs[s], state[s] + 4 * at, 4 * n, 1, 0);
  }
}

}  // namespace

OptimizerPlan append_optimizer_update(Program& p, const HwConfig& hw,
                                      const std::vector<OptimizerParameter>& params,
                                      const OptimizerConstants& k, bool contents) {
  const int cores = std::max(1, p.cores);
  Emitter e(p, hw);
  OptimizerPlan plan;
  plan.program_dram_bytes = p.dram_bytes;
  uint64_t top = lowering::align_up(p.dram_bytes, kDramAlignment);
  auto segment = [&](uint64_t bytes) {
    DramSegment s;
    s.addr = top;
    if (contents) {
      s.bytes.assign(bytes, 0);
    } else {
      s.timing_only_bytes = bytes;
    }
    p.dram_init.push_back(std::move(s));
    top = lowering::align_up(top + bytes, kDramAlignment);
    return p.dram_init.size() - 1;
  };
  plan.scalars_segment = segment(8);
  plan.scalars_addr = p.dram_init[plan.scalars_segment].addr;
  // A tile's buffers fit an eighth of the unified buffer.
  const uint64_t max_elements =
      hw.unified_buffer.capacity_bytes / 8 / tile_bytes_per_element(k) / 32 * 32;
  std::vector<bool> scalars_loaded(size_t(cores), false);
  const uint64_t scalars_ub = 0;  // each core's first 64 bytes: the step's scalars
  int tile = 0;
  auto next_core = [&] {
    const int core = tile++ % cores;
    if (k.kind == Kind::kAdam && !scalars_loaded[size_t(core)]) {
      e.dma(core, true, scalars_ub, plan.scalars_addr, 8, 1, 0);
      scalars_loaded[size_t(core)] = true;
    }
    return core;
  };
  auto record = [&](const std::string& name, const std::string& tiling) {
    LayerRecord rec;
    rec.name = "optimizer " + name;
    rec.op = "optimizer";
    rec.first_instruction = uint32_t(p.instructions.size());
    rec.cores = cores;
    rec.parallel =
        cores > 1 ? fmt::format("data: the update's tiles spread over {} cores", cores) : "core 0";
    rec.tiling = tiling;
    p.layers.push_back(rec);
  };

  for (const OptimizerParameter& q : params) {
    const uint64_t in = uint64_t(q.in), out = uint64_t(q.out);
    const uint64_t extra = q.has_bias ? 1 : 0;
    NPUSIM_CHECK(
        q.in > 0 && q.out > 0 && (!q.norm || (q.in == 1 && q.has_bias && !q.outputs_first)),
        "optimizer: parameter {} of {} x {}", q.name, q.in, q.out);
    std::vector<size_t> news;
    uint64_t master = q.weights_addr;
    if (!q.norm) {
      news.push_back(segment(4 * in * out));
      master = p.dram_init[news.back()].addr;
      plan.master_bytes += 4 * in * out;
    }
    // State: the weights' arrays, then the biases' (or a layer norm's [gamma | beta]).
    const uint64_t elements = q.norm ? 2 * out : in * out;
    uint64_t state[2] = {0, 0}, bias_state[2] = {0, 0};
    for (int s = 0; s < k.state_per_parameter(); ++s) {
      news.push_back(segment(4 * elements));
      state[s] = p.dram_init[news.back()].addr;
      plan.state_bytes += 4 * elements;
      if (q.has_bias && !q.norm) {
        news.push_back(segment(4 * out));
        bias_state[s] = p.dram_init[news.back()].addr;
        plan.state_bytes += 4 * out;
      }
    }
    for (size_t s : news) plan.written.push_back({p.dram_init[s].addr, p.dram_init[s].size()});
    plan.master_addr.push_back(master);
    plan.new_segments.push_back(news);

    // A tile holds whole rows (a layer norm's whole [gamma | beta]).
    const uint64_t least = q.norm ? elements : out;
    if (least > max_elements) {
      throw UserError(fmt::format(
          "--optimizer-on chip: layer '{}': a row of {} parameters does not fit the update's "
          "tile of {} elements (an eighth of the {}-byte unified buffer at {} bytes per element); "
          "--optimizer-on host updates it on the host",
          q.name, least, max_elements, hw.unified_buffer.capacity_bytes,
          tile_bytes_per_element(k)));
    }
    if (q.norm) {
      record(q.name, fmt::format("{} fp32 gamma and beta in place, {} diagonal use(s)", elements,
                                 q.diagonal.size()));
      const int core = next_core();
      const TileBuffers b = alloc_tile(e, core, k, elements);
      e.dma(core, true, b.g, q.gradient_addr, 2 * elements, 1, 0);
      load_update_store(e, core, k, elements, b, master, state, 0, scalars_ub);
      plan.written.push_back({master, 4 * elements});
      if (!q.diagonal.empty()) {
        e.op(core, Fp32Kind::kCopy, out, b.w, false, 0, false, false, b.wb, true, 1.0f, 1.0f);
        for (uint64_t d : q.diagonal) {
          e.dma(core, false, b.wb, d, 2, out, 2 * (out + 1));
          plan.written.push_back({d, 2 * out * out});
        }
      }
      p.layers.back().end_instruction = uint32_t(p.instructions.size());
      continue;
    }

    // Rows of the forward weights per tile; a flipped use needs tiles inside one kernel tap.
    const uint64_t rows_per_tile = std::max<uint64_t>(1, max_elements / out);
    const uint64_t block = q.flipped.empty() ? in : uint64_t(q.cin);
    NPUSIM_CHECK(q.flipped.empty() || uint64_t(q.cin) * uint64_t(q.taps) == in,
                 "optimizer: {} has {} rows for {} taps of {} channels", q.name, in, q.taps, q.cin);
    record(q.name,
           fmt::format("{} x {} fp32 master in tiles of up to {} rows{}; {} transposed, {} flipped "
                       "use(s)",
                       in, out, rows_per_tile, q.has_bias ? ", the bias in place" : "",
                       q.transposed.size(), q.flipped.size()));
    const uint64_t grad_row = (in + extra) * 2;  // outputs first: one output's gradient row
    for (uint64_t r0 = 0; r0 < in;) {
      const uint64_t r1 = std::min({in, r0 + rows_per_tile, (r0 / block + 1) * block});
      const uint64_t rows = r1 - r0, n = rows * out;
      const int core = next_core();
      const TileBuffers b = alloc_tile(e, core, k, n);
      if (q.outputs_first) {  // [out][in + 1]: columns r0..r1, transposed into [rows][out]
        e.dma(core, true, b.g, q.gradient_addr + 2 * r0, 2 * rows, out, grad_row, true);
      } else {
        e.dma(core, true, b.g, q.gradient_addr + 2 * r0 * out, 2 * n, 1, 0);
      }
      load_update_store(e, core, k, n, b, master, state, r0 * out, scalars_ub);
      e.op(core, Fp32Kind::kCopy, n, b.w, false, 0, false, false, b.wb, true, 1.0f, 1.0f);
      e.dma(core, false, b.wb, q.weights_addr + 2 * r0 * out, 2 * n, 1, 0);
      // The other uses from the rows just stored, read back transposed: [out][rows].
      if (!q.transposed.empty() || !q.flipped.empty()) {
        e.dma(core, true, b.x, q.weights_addr + 2 * r0 * out, 2 * out, rows, 2 * out, true);
      }
      for (uint64_t t : q.transposed) e.dma(core, false, b.x, t + 2 * r0, 2 * rows, out, 2 * in);
      for (uint64_t f : q.flipped) {
        const uint64_t tap = r0 / block, c0 = r0 % block;
        const uint64_t at = ((uint64_t(q.taps) - 1 - tap) * out * block + c0) * 2;
        e.dma(core, false, b.x, f + at, 2 * rows, out, 2 * block);
      }
      r0 = r1;
    }
    plan.written.push_back({q.weights_addr, 2 * in * out});
    for (uint64_t t : q.transposed) plan.written.push_back({t, 2 * in * out});
    for (uint64_t f : q.flipped) plan.written.push_back({f, 2 * in * out});
    if (q.has_bias) {
      const int core = next_core();
      const TileBuffers b = alloc_tile(e, core, k, out);
      if (q.outputs_first) {  // column `in` of [out][in + 1]
        e.dma(core, true, b.g, q.gradient_addr + 2 * in, 2, out, grad_row);
      } else {
        e.dma(core, true, b.g, q.gradient_addr + 2 * in * out, 2 * out, 1, 0);
      }
      load_update_store(e, core, k, out, b, q.bias_addr, bias_state, 0, scalars_ub);
      plan.written.push_back({q.bias_addr, 4 * out});
    }
    p.layers.back().end_instruction = uint32_t(p.instructions.size());
  }
  plan.dram_read_bytes = e.read_bytes();
  plan.dram_write_bytes = e.written_bytes();
  p.dram_bytes = top;
  return plan;
}

}  // namespace npusim
