// Register-level cube unit (the `pe` fidelity); the pipeline is described in cube_pe_model.hpp.
#include "models/systolic/cube_pe_model.hpp"

#include <algorithm>
#include <bit>

#include "models/systolic/number_formats.hpp"
#include "support/error.hpp"

namespace npusim::systolic {

namespace {

using ValueKind = CubePeModel::ValueKind;

uint32_t multiply_bits(ValueKind kind, uint32_t a, uint32_t w) {
  if (kind == ValueKind::kInt8) {
    return static_cast<uint32_t>(static_cast<int32_t>(a) * static_cast<int32_t>(w));
  }
  return std::bit_cast<uint32_t>(half16_product(std::bit_cast<float>(a), std::bit_cast<float>(w)));
}

uint32_t add_bits(ValueKind kind, uint32_t x, uint32_t y) {
  if (kind == ValueKind::kInt8) return x + y;  // two's-complement wrap-around
  return std::bit_cast<uint32_t>(cube_add(std::bit_cast<float>(x), std::bit_cast<float>(y)));
}

// The tile's operands as the pipeline's 32-bit words (`widen` turns one element into one), with
// where its results go.
template <typename Operands, typename Widen>
CubePeModel::TileData widen_operands(const TileShape& tile, const Operands& op,
                                     CubePeModel::ValueKind kind, uint64_t issue_cycle,
                                     Widen widen) {
  CubePeModel::TileData data;
  data.shape = tile;
  data.kind = kind;
  data.acc = op.acc;
  data.ldacc = op.ldacc;
  data.accumulate = op.accumulate;
  data.issue_cycle = issue_cycle;
  data.a.resize(static_cast<size_t>(tile.m) * tile.k);
  data.w.resize(static_cast<size_t>(tile.k) * tile.n);
  for (int m = 0; m < tile.m; ++m)
    for (int k = 0; k < tile.k; ++k)
      data.a[static_cast<size_t>(m) * tile.k + k] =
          widen(op.a[static_cast<ptrdiff_t>(m) * op.lda + k]);
  for (int k = 0; k < tile.k; ++k)
    for (int n = 0; n < tile.n; ++n)
      data.w[static_cast<size_t>(k) * tile.n + n] =
          widen(op.w[static_cast<ptrdiff_t>(k) * op.ldw + n]);
  return data;
}

}  // namespace

CubePeModel::CubePeModel(const ArrayParams& params)
    : params_(params), g_(cube_geometry(params)), stats_(params) {
  state_.regs.resize(static_cast<size_t>(g_.levels) + 2);
  const size_t outputs = static_cast<size_t>(g_.m0) * g_.n0;
  state_.regs[0].values.assign(static_cast<size_t>(g_.m0 + g_.n0) * g_.lanes, 0);
  for (int l = 0; l <= g_.levels; ++l) {
    state_.regs[1 + l].values.assign(outputs * (g_.lanes >> l), 0);
  }
}

TileTiming CubePeModel::execute_int8(const TileShape& tile, const Int8TileOperands& op,
                                     uint64_t issue_cycle) {
  check_tile(params_, tile, op.a, op.lda, op.w, op.ldw, op.acc, op.ldacc);
  TileTiming timing =
      run_tile(widen_operands(tile, op, ValueKind::kInt8, issue_cycle, [](int8_t v) {
        return static_cast<uint32_t>(static_cast<int32_t>(v));
      }));
  stats_.add(tile, DataType::kInt8, op.accumulate, timing);
  return timing;
}

TileTiming CubePeModel::execute_half16(Half16Format format, const TileShape& tile,
                                       const Half16TileOperands& op, uint64_t issue_cycle) {
  check_tile(params_, tile, op.a, op.lda, op.w, op.ldw, op.acc, op.ldacc);
  TileTiming timing =
      run_tile(widen_operands(tile, op, ValueKind::kFloat, issue_cycle, [format](uint16_t v) {
        return std::bit_cast<uint32_t>(half16_to_float(format, v));
      }));
  stats_.add(tile, format == Half16Format::kBf16 ? DataType::kBf16 : DataType::kFp16, op.accumulate,
             timing);
  return timing;
}

TileTiming CubePeModel::run_tile(TileData data) {
  NPUSIM_CHECK(data.issue_cycle >= state_.cycle,
               "cube pe: tile {}x{}x{} issued at cycle {}, before the cube accepts it ({})",
               data.shape.m, data.shape.k, data.shape.n, data.issue_cycle, state_.cycle);
  data.id = next_id_++;
  data.blocks = cube_blocks(g_, data.shape.m);
  state_.current = data.id;
  state_.next_block = 0;
  state_.written = 0;
  // Feed every block into the real pipeline. Cycles with an empty pipeline and nothing issued
  // change no register, so the clock jumps over them.
  auto pipeline_empty = [](const State& state) {
    return std::all_of(state.regs.begin(), state.regs.end(),
                       [](const Block& b) { return b.tile < 0; });
  };
  const int feed_limit = g_.depth + data.blocks + 1;
  for (int steps = 0; state_.next_block < data.blocks; ++steps) {
    NPUSIM_CHECK(steps <= feed_limit, "cube pe: tile {} not fed within {} cycles", data.id,
                 feed_limit);
    if (state_.cycle < data.issue_cycle && pipeline_empty(state_)) state_.cycle = data.issue_cycle;
    step(state_, &data);
  }
  // Look ahead on a copy until the tile's last block is written; nothing more enters meanwhile.
  State ahead = state_;
  const uint64_t drain_limit = ahead.cycle + static_cast<uint64_t>(g_.depth);
  while (ahead.written < data.blocks) {
    NPUSIM_CHECK(ahead.cycle <= drain_limit, "cube pe: tile {} not written by cycle {}", data.id,
                 drain_limit);
    step(ahead, nullptr);
  }
  committed_upto_ = data.id;
  TileTiming timing;
  timing.start_cycle = ahead.start_cycle;
  timing.done_cycle = ahead.done_cycle;
  timing.next_issue_cycle = state_.cycle;
  return timing;
}

void CubePeModel::step(State& state, const TileData* feeding) {
  const uint64_t t = state.cycle;
  std::vector<Block>& regs = state.regs;
  const int last = static_cast<int>(regs.size()) - 1;
  if (regs[last].tile >= 0) write(state, regs[last]);
  for (int r = last; r >= 2; --r) {
    if (regs[r - 1].tile >= 0) reduce(regs[r - 1], regs[r], g_.lanes >> (r - 2));
    regs[r].tile = regs[r - 1].tile;
    regs[r - 1].tile = -1;
  }
  if (last >= 1) {
    if (regs[0].tile >= 0) multiply(regs[0], regs[1]);
    regs[1].tile = regs[0].tile;
    regs[0].tile = -1;
  }
  if (feeding != nullptr && feeding->issue_cycle <= t && state.next_block < feeding->blocks) {
    if (state.next_block == 0) state.start_cycle = t;
    fetch(regs[0], *feeding, state.next_block++);
  }
  state.cycle = t + 1;
  ++cycles_stepped_;
}

void CubePeModel::fetch(Block& reg, const TileData& tile, int index) const {
  reg.tile = tile.id;
  reg.index = index;
  reg.blocks = tile.blocks;
  reg.rows = std::min(g_.m0, tile.shape.m - index * g_.m0);
  reg.cols = tile.shape.n;
  reg.kind = tile.kind;
  reg.acc = tile.acc;
  reg.ldacc = tile.ldacc;
  reg.accumulate = tile.accumulate;
  const int p_count = g_.lanes, k_count = tile.shape.k;
  uint32_t* a = reg.values.data();
  uint32_t* w = a + static_cast<size_t>(g_.m0) * p_count;
  std::fill(reg.values.begin(), reg.values.end(), 0u);  // the zero padding of the blocks
  for (int r = 0; r < reg.rows; ++r) {
    const uint32_t* src = &tile.a[static_cast<size_t>(index * g_.m0 + r) * k_count];
    std::copy(src, src + k_count, a + static_cast<size_t>(r) * p_count);
  }
  for (int k = 0; k < k_count; ++k) {
    const uint32_t* src = &tile.w[static_cast<size_t>(k) * tile.shape.n];
    std::copy(src, src + tile.shape.n, w + static_cast<size_t>(k) * g_.n0);
  }
}

void CubePeModel::multiply(const Block& in, Block& out) const {
  out = Block{in.tile, in.index, in.blocks, in.rows,       in.cols,
              in.kind, in.acc,   in.ldacc,  in.accumulate, std::move(out.values)};
  const int p_count = g_.lanes;
  const uint32_t* a = in.values.data();
  const uint32_t* w = a + static_cast<size_t>(g_.m0) * p_count;
  for (int r = 0; r < g_.m0; ++r)
    for (int n = 0; n < g_.n0; ++n) {
      uint32_t* lanes = &out.values[(static_cast<size_t>(r) * g_.n0 + n) * p_count];
      for (int p = 0; p < p_count; ++p) {
        lanes[p] = multiply_bits(in.kind, a[static_cast<size_t>(r) * p_count + p],
                                 w[static_cast<size_t>(p) * g_.n0 + n]);
      }
    }
}

void CubePeModel::reduce(const Block& in, Block& out, int in_width) const {
  out = Block{in.tile, in.index, in.blocks, in.rows,       in.cols,
              in.kind, in.acc,   in.ldacc,  in.accumulate, std::move(out.values)};
  const int out_width = in_width / 2;
  const size_t outputs = static_cast<size_t>(g_.m0) * g_.n0;
  for (size_t o = 0; o < outputs; ++o) {
    const uint32_t* src = &in.values[o * in_width];
    uint32_t* dst = &out.values[o * out_width];
    for (int i = 0; i < out_width; ++i) dst[i] = add_bits(in.kind, src[2 * i], src[2 * i + 1]);
  }
}

void CubePeModel::write(State& state, const Block& block) const {
  const bool follows = block.tile == state.last_tile
                           ? block.index == state.last_block + 1
                           : block.tile > state.last_tile && block.index == 0 &&
                                 (state.last_tile < 0 || state.last_block == state.last_blocks - 1);
  NPUSIM_CHECK(follows,
               "cube pe: cycle {}: block {} of tile {} written after block {} of tile {} (blocks "
               "are written once each, in order)",
               state.cycle, block.index, block.tile, state.last_block, state.last_tile);
  state.last_tile = block.tile;
  state.last_block = block.index;
  state.last_blocks = block.blocks;
  if (block.tile == state.current) {
    state.written += 1;
    if (state.written == block.blocks) state.done_cycle = state.cycle + 1;
  }
  if (block.tile <= committed_upto_) return;  // already written by its own call
  const int row0 = block.index * g_.m0;
  for (int r = 0; r < block.rows; ++r) {
    const uint32_t* sums = &block.values[static_cast<size_t>(r) * g_.n0];
    const ptrdiff_t offset = static_cast<ptrdiff_t>(row0 + r) * block.ldacc;
    if (block.kind == ValueKind::kInt8) {
      int32_t* acc = static_cast<int32_t*>(block.acc) + offset;
      for (int n = 0; n < block.cols; ++n) {
        const uint32_t old = block.accumulate ? static_cast<uint32_t>(acc[n]) : 0u;
        acc[n] = static_cast<int32_t>(block.accumulate ? old + sums[n] : sums[n]);
      }
    } else {
      float* acc = static_cast<float*>(block.acc) + offset;
      for (int n = 0; n < block.cols; ++n) {
        const float sum = std::bit_cast<float>(sums[n]);
        acc[n] = block.accumulate ? cube_add(acc[n], sum) : sum;
      }
    }
  }
}

}  // namespace npusim::systolic
