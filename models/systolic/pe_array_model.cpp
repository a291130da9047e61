// Register-level systolic array (the `pe` fidelity); micro-architecture in pe_array_model.hpp.
// Each call to step() is one clock: sequencer decisions from the state at the start of the cycle,
// then every register's next value, written in place in an order (bottom-up, right-to-left) that
// lets each PE read its neighbours' values from the start of the cycle.
#include "models/systolic/pe_array_model.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

#include "models/systolic/number_formats.hpp"
#include "models/systolic/sparsity.hpp"
#include "support/error.hpp"

namespace npusim::systolic {

namespace {

using ValueKind = PeArrayModel::ValueKind;
using Token = PeArrayModel::Token;

uint32_t mac(ValueKind kind, uint32_t psum, uint32_t a, uint32_t w) {
  if (kind == ValueKind::kInt8) {
    return psum + static_cast<uint32_t>(static_cast<int32_t>(a) * static_cast<int32_t>(w));
  }
  const float sum =
      std::bit_cast<float>(psum) + half16_product(std::bit_cast<float>(a), std::bit_cast<float>(w));
  return std::bit_cast<uint32_t>(sum);
}

uint32_t widen_int8(int8_t value) { return static_cast<uint32_t>(static_cast<int32_t>(value)); }

// Hazard reports, kept out of line so that the PE loop stays tight.
[[noreturn, gnu::cold, gnu::noinline]] void fail_tag_mismatch(int k, int n, uint64_t t, Token a,
                                                              Token p) {
  fail_check(__FILE__, __LINE__, "operand and partial sum of the same tile and vector",
             fmt::format("systolic pe: PE({}, {}) cycle {}: operand of tile {} vector {} meets "
                         "psum of tile {} vector {}",
                         k, n, t, a.tile, a.index, p.tile, p.index));
}

[[noreturn, gnu::cold, gnu::noinline]] void fail_missing_operand(int k, int n, uint64_t t,
                                                                 Token p) {
  fail_check(__FILE__, __LINE__, "operand present where the tile has a row",
             fmt::format("systolic pe: PE({}, {}) cycle {}: psum of tile {} without its operand", k,
                         n, t, p.tile));
}

[[noreturn, gnu::cold, gnu::noinline]] void fail_bank_read(int k, int n, uint64_t t, int tile,
                                                           int bank, int owner) {
  fail_check(__FILE__, __LINE__, "bank holds the tile's complete weights",
             fmt::format("systolic pe: PE({}, {}) cycle {}: tile {} reads bank {} holding tile {}",
                         k, n, t, tile, bank, owner));
}

}  // namespace

PeArrayModel::PeArrayModel(const ArrayParams& params, PeTestHooks hooks)
    : params_(params), hooks_(hooks), rows_(params.rows), cols_(params.cols), stats_(params) {
  NPUSIM_CHECK(rows_ >= 1 && cols_ >= 1, "systolic pe: array of {}x{} PEs", rows_, cols_);
  ring_ = std::max(rows_, cols_);
  const size_t pes = static_cast<size_t>(rows_) * cols_;
  state_.a_reg.assign(pes, Token{});
  state_.p_reg.assign(pes, Token{});
  const bool stationary = params_.dataflow != Dataflow::kOutputStationary;
  if (stationary) {
    state_.bank[0].assign(pes, 0);
    if (params_.weight_double_buffer) state_.bank[1].assign(pes, 0);
    state_.row_owner[0].assign(static_cast<size_t>(rows_), -1);
    if (params_.weight_double_buffer) state_.row_owner[1].assign(static_cast<size_t>(rows_), -1);
    if (params_.sparse_n > 0) {
      state_.meta_bank[0].assign(pes, -1);
      if (params_.weight_double_buffer) state_.meta_bank[1].assign(pes, -1);
    }
  } else {
    state_.pe_acc.assign(pes, 0);
    state_.out_slot.assign(pes, Token{});
    state_.out_moving.assign(pes, 0);
  }
  state_.injected.assign(ring_, Token{});
}

const PeArrayModel::TileData& PeArrayModel::tile_data(int tile) const {
  const size_t offset = static_cast<size_t>(tile - first_tile_);
  if (tile < first_tile_ || offset >= tiles_.size()) fail_tile_not_live(tile);
  return tiles_[offset];
}

void PeArrayModel::fail_tile_not_live(int tile) const {
  fail_check(__FILE__, __LINE__, "tile is live",
             fmt::format("systolic pe: tile {} is not live (live: {}..{})", tile, first_tile_,
                         first_tile_ + static_cast<int>(tiles_.size()) - 1));
}

const PeArrayModel::TileData* PeArrayModel::ring_tile(const Token& entry) const {
  // A port entry of a tile that has already finished is history, not an element in flight.
  if (entry.tile < first_tile_) return nullptr;
  return &tile_data(entry.tile);
}

int PeArrayModel::bank_of(int tile) const {
  return params_.weight_double_buffer ? tile % 2 : 0;  // banks alternate tile by tile
}

PeArrayModel::TileProgress& PeArrayModel::progress(State& state, int tile) {
  return state.progress[tile - first_tile_];
}

TileTiming PeArrayModel::execute_int8(const TileShape& tile, const Int8TileOperands& op,
                                      uint64_t issue_cycle) {
  check_tile(params_, tile, op.a, op.lda, op.w, op.ldw, op.acc, op.ldacc);
  TileData data;
  data.shape = tile;
  data.kind = ValueKind::kInt8;
  data.acc_int = op.acc;
  data.ldacc = op.ldacc;
  data.accumulate = op.accumulate;
  data.issue_cycle = issue_cycle;
  std::vector<uint32_t> a(static_cast<size_t>(tile.m) * tile.k);
  std::vector<uint32_t> w(static_cast<size_t>(tile.k) * tile.n);
  for (int m = 0; m < tile.m; ++m)
    for (int k = 0; k < tile.k; ++k)
      a[static_cast<size_t>(m) * tile.k + k] =
          widen_int8(op.a[static_cast<ptrdiff_t>(m) * op.lda + k]);
  for (int k = 0; k < tile.k; ++k)
    for (int n = 0; n < tile.n; ++n)
      w[static_cast<size_t>(k) * tile.n + n] =
          widen_int8(op.w[static_cast<ptrdiff_t>(k) * op.ldw + n]);
  data.stat = std::move(w);
  data.strm = std::move(a);
  return run_tile(std::move(data));
}

TileTiming PeArrayModel::execute_half16(Half16Format format, const TileShape& tile,
                                        const Half16TileOperands& op, uint64_t issue_cycle) {
  check_tile(params_, tile, op.a, op.lda, op.w, op.ldw, op.acc, op.ldacc);
  TileData data;
  data.shape = tile;
  data.kind = format == Half16Format::kBf16 ? ValueKind::kBf16 : ValueKind::kFp16;
  data.acc_float = op.acc;
  data.ldacc = op.ldacc;
  data.accumulate = op.accumulate;
  data.issue_cycle = issue_cycle;
  std::vector<uint32_t> a(static_cast<size_t>(tile.m) * tile.k);
  std::vector<uint32_t> w(static_cast<size_t>(tile.k) * tile.n);
  for (int m = 0; m < tile.m; ++m)
    for (int k = 0; k < tile.k; ++k)
      a[static_cast<size_t>(m) * tile.k + k] = std::bit_cast<uint32_t>(
          half16_to_float(format, op.a[static_cast<ptrdiff_t>(m) * op.lda + k]));
  for (int k = 0; k < tile.k; ++k)
    for (int n = 0; n < tile.n; ++n)
      w[static_cast<size_t>(k) * tile.n + n] = std::bit_cast<uint32_t>(
          half16_to_float(format, op.w[static_cast<ptrdiff_t>(k) * op.ldw + n]));
  data.stat = std::move(w);
  data.strm = std::move(a);
  return run_tile(std::move(data));
}

TileTiming PeArrayModel::run_tile(TileData data) {
  const TileShape shape = data.shape;
  // state_ rests at the cycle the previous tile reported as next_issue_cycle (0 at first).
  NPUSIM_CHECK(data.issue_cycle >= state_.cycle,
               "systolic: tile {}x{}x{} issued at cycle {}, before the array accepts it ({})",
               shape.m, shape.k, shape.n, data.issue_cycle, state_.cycle);
  // Arrange the operands as the array holds them (see TileData).
  switch (params_.dataflow) {
    case Dataflow::kWeightStationary:
      data.k = shape.k, data.s = shape.m, data.q = shape.n;  // stat = w[k][n], strm = a[m][k]
      if (shape.sparse) compress_stationary(data);
      break;
    case Dataflow::kInputStationary: {
      data.k = shape.k, data.s = shape.n, data.q = shape.m;
      // stat[k * M + m] = a[m][k]; strm[n * K + k] = w[k][n]
      std::vector<uint32_t> stat(static_cast<size_t>(shape.k) * shape.m);
      std::vector<uint32_t> strm(static_cast<size_t>(shape.n) * shape.k);
      for (int m = 0; m < shape.m; ++m)
        for (int k = 0; k < shape.k; ++k)
          stat[static_cast<size_t>(k) * shape.m + m] =
              data.strm[static_cast<size_t>(m) * shape.k + k];
      for (int k = 0; k < shape.k; ++k)
        for (int n = 0; n < shape.n; ++n)
          strm[static_cast<size_t>(n) * shape.k + k] =
              data.stat[static_cast<size_t>(k) * shape.n + n];
      data.stat = std::move(stat);
      data.strm = std::move(strm);
      break;
    }
    case Dataflow::kOutputStationary:
      data.k = shape.k, data.s = shape.k, data.q = shape.n;
      break;
  }
  NPUSIM_CHECK(next_id_ < (1 << 30), "systolic pe: too many tiles for the pe fidelity");
  const int id = next_id_++;
  data.id = id;
  const uint64_t issue_cycle = data.issue_cycle;
  const ValueKind kind = data.kind;
  const bool accumulate = data.accumulate;
  tiles_.push_back(std::move(data));
  TileProgress fresh;
  fresh.writes_left = static_cast<int64_t>(shape.m) * shape.n;
  if (params_.dataflow == Dataflow::kOutputStationary) fresh.captured.assign(cols_, 0);
  state_.progress.push_back(std::move(fresh));

  // Generous bound on the cycles the array may need for the tiles in flight (a deadlock check).
  uint64_t work = 64 + 4 * static_cast<uint64_t>(rows_ + cols_);
  for (const TileData& t : tiles_)
    work += 4 * static_cast<uint64_t>(t.shape.m + t.shape.k + t.shape.n);

  // Run the array until this tile was accepted and the array would accept the next one; that
  // state is where the next call resumes.
  const uint64_t limit = std::max(state_.cycle, issue_cycle) + work;
  while (!(progress(state_, id).started && ready_for_next(state_))) {
    if (state_.cycle < issue_cycle && array_idle(state_)) {
      state_.cycle = issue_cycle;
      std::fill(state_.injected.begin(), state_.injected.end(), Token{});
      continue;
    }
    NPUSIM_CHECK(state_.cycle < limit, "systolic pe: tile {} not accepted by cycle {}", id,
                 state_.cycle);
    step(state_);
  }
  TileTiming timing;
  timing.next_issue_cycle = state_.cycle;
  const TileProgress& now = progress(state_, id);
  timing.start_cycle = now.start_cycle;
  if (now.writes_left == 0) {
    timing.done_cycle = now.done_cycle;
  } else {
    // Look ahead on a copy to the tile's last result; the later tiles may still overlap it.
    State ahead = state_;
    while (progress(ahead, id).writes_left > 0) {
      NPUSIM_CHECK(ahead.cycle < limit, "systolic pe: tile {} not done by cycle {}", id,
                   ahead.cycle);
      step(ahead);
    }
    timing.done_cycle = progress(ahead, id).done_cycle;
  }
  committed_upto_ = id;
  drop_finished_tiles();
  const DataType type = kind == ValueKind::kInt8   ? DataType::kInt8
                        : kind == ValueKind::kBf16 ? DataType::kBf16
                                                   : DataType::kFp16;
  stats_.add(shape, type, accumulate, timing);
  return timing;
}

void PeArrayModel::compress_stationary(TileData& data) const {
  const TileShape& shape = data.shape;
  // stat holds widened weights: int8 as int32, 16-bit floats as fp32 bits (zero: +0 or -0).
  const bool is_float = data.kind != ValueKind::kInt8;
  const SparseSlots slots = sparse_slots(params_, shape, [&](int k, int n) {
    const uint32_t bits = data.stat[static_cast<size_t>(k) * shape.n + n];
    return (is_float ? bits & 0x7fffffffu : bits) == 0;
  });
  std::vector<uint32_t> stat(static_cast<size_t>(slots.rows) * shape.n, 0);
  for (size_t i = 0; i < stat.size(); ++i) {
    const int32_t k = slots.source[i];
    if (k >= 0) stat[i] = data.stat[static_cast<size_t>(k) * shape.n + i % shape.n];
  }
  data.sparse = true;
  data.k = slots.rows;
  data.stat = std::move(stat);
  data.source = slots.source;
}

void PeArrayModel::drop_finished_tiles() {
  while (!tiles_.empty() && first_tile_ <= committed_upto_) {
    const TileProgress& p = state_.progress.front();
    if (p.writes_left > 0 || !p.streaming_done) break;
    if (state_.load_tile == first_tile_) break;
    tiles_.pop_front();
    state_.progress.pop_front();
    ++first_tile_;
  }
}

bool PeArrayModel::array_idle(const State& state) const {
  if (state.load_tile >= 0 || state.stream_tile >= 0) return false;
  // Tiles not yet started (issued later) have nothing in the array.
  for (const TileProgress& p : state.progress) {
    if (p.started && (p.writes_left > 0 || !p.streaming_done)) return false;
  }
  return true;
}

bool PeArrayModel::bank_has_future_reads(const State& state, int bank) const {
  const int owner = state.bank_owner[bank];
  if (owner >= first_tile_ && !state.progress[owner - first_tile_].streaming_done) return true;
  for (const Token& token : state.a_reg) {
    if (token.tile >= 0 && bank_of(token.tile) == bank) return true;
  }
  // Vectors already at the port whose lower rows still have to enter (row k enters k cycles
  // after row 0).
  for (int d = 0; d < rows_ && d < ring_; ++d) {
    if (static_cast<uint64_t>(d) > state.cycle) break;
    const Token& entry = state.injected[(state.cycle - d) % ring_];
    const TileData* tile = ring_tile(entry);
    if (tile != nullptr && bank_of(tile->id) == bank && d < tile->k) return true;
  }
  return false;
}

bool PeArrayModel::bank_blocks_wavefront_load(const State& state, int bank) const {
  // Every live tile that holds weights in the bank (the owner, and earlier tiles whose rows below
  // a later, shorter tile were never rewritten). A tile's vectors enter in consecutive cycles from
  // stream_cycle; vector v reads row r, column n in cycle stream_cycle + v + r + n, and a load
  // starting now first writes row r in cycle now + r: every read must come before, the last one
  // (v = S - 1, n = Q - 1) included, whatever r.
  for (int id = first_tile_; id < state.next_to_load; ++id) {
    if (bank_of(id) != bank) continue;
    const TileProgress& p = state.progress[id - first_tile_];
    if (!p.streaming_done) return true;
    const TileData& tile = tile_data(id);
    if (p.stream_cycle + static_cast<uint64_t>(tile.s) - 1 + static_cast<uint64_t>(tile.q) >
        state.cycle) {
      return true;
    }
  }
  return false;
}

bool PeArrayModel::bank_blocks_load(const State& state, int bank) const {
  return params_.weight_load_wavefront ? bank_blocks_wavefront_load(state, bank)
                                       : bank_has_future_reads(state, bank);
}

bool PeArrayModel::ready_for_next(State& state) {
  if (params_.dataflow == Dataflow::kOutputStationary) {
    return state.stream_tile < 0 && state.next_to_load == next_id_;
  }
  // A tile issued now could load from this cycle on; the port's injection for this cycle does not
  // depend on it (its weights are not loaded yet), so decide it first.
  inject_stationary(state);
  if (state.load_tile >= 0 || state.next_to_load != next_id_) return false;
  return !bank_blocks_load(state, bank_of(next_id_));
}

void PeArrayModel::step(State& state) {
  if (params_.dataflow == Dataflow::kOutputStationary) {
    step_output_stationary(state);
  } else {
    step_stationary(state);
  }
  pe_cycles_stepped_ += static_cast<uint64_t>(rows_) * cols_;
  ++state.cycle;
}

void PeArrayModel::write_result(State& state, const TileData& tile, int m, int n, uint32_t bits) {
  TileProgress& p = progress(state, tile.id);
  NPUSIM_CHECK(p.writes_left > 0, "systolic pe: tile {} writes output ({}, {}) twice at cycle {}",
               tile.id, m, n, state.cycle);
  if (tile.id > committed_upto_) {
    const size_t at = static_cast<size_t>(m) * tile.ldacc + n;
    if (tile.kind == ValueKind::kInt8) {
      const int32_t value = static_cast<int32_t>(bits);
      tile.acc_int[at] = tile.accumulate
                             ? static_cast<int32_t>(static_cast<uint32_t>(tile.acc_int[at]) + bits)
                             : value;
    } else {
      const float value = std::bit_cast<float>(bits);
      tile.acc_float[at] = tile.accumulate ? tile.acc_float[at] + value : value;
    }
  }
  if (--p.writes_left == 0) p.done_cycle = state.cycle + 1;
}

void PeArrayModel::inject_stationary(State& state) {
  if (state.port_cycle == state.cycle) return;
  state.port_cycle = state.cycle;
  const uint64_t t = state.cycle;
  // Sequencer: the port injects the next vector of the streaming tile, or starts the next tile
  // whose weights are complete in its bank.
  Token& port = state.injected[t % ring_];
  port = Token{};
  if (state.stream_tile < 0 && state.stream_next == 0) {
    const int candidate = state.last_streamed + 1;
    if (candidate < next_id_ && state.bank_owner[bank_of(candidate)] == candidate) {
      state.stream_tile = candidate;
      progress(state, candidate).stream_cycle = t;
    }
  }
  if (state.stream_tile >= 0) {
    const TileData& tile = tile_data(state.stream_tile);
    port = Token{tile.id, state.stream_next, 0};
    if (++state.stream_next == tile.s) {
      progress(state, tile.id).streaming_done = true;
      state.last_streamed = tile.id;
      state.stream_tile = -1;
      state.stream_next = 0;
    }
  }
}

void PeArrayModel::step_stationary(State& state) {
  const uint64_t t = state.cycle;
  const int rows = rows_, cols = cols_;

  inject_stationary(state);
  // Sequencer: start the next weight load once nothing will read its bank from this cycle on.
  if (state.load_tile < 0 && state.next_to_load < next_id_) {
    const TileData& tile = tile_data(state.next_to_load);
    if (tile.issue_cycle <= t && !bank_blocks_load(state, bank_of(tile.id))) {
      state.load_tile = tile.id;
      state.load_rows_done = 0;
      TileProgress& p = progress(state, tile.id);
      p.started = true;
      p.start_cycle = t;
      ++state.next_to_load;
    }
  }

  // Elements only ever sit in the used columns of a live tile, operands only in its K rows:
  // registers outside these bounds are empty and need no stepping.
  int used_cols = 0, operand_rows = 0;
  for (const TileData& tile : tiles_) {
    used_cols = std::max(used_cols, tile.q);
    operand_rows = std::max(operand_rows, tile.k);
  }

  // Partial sums leaving the bottom row last cycle are written to the accumulators.
  for (int n = 0; n < used_cols; ++n) {
    Token& psum = state.p_reg[static_cast<size_t>(rows - 1) * cols + n];
    if (psum.tile < 0) continue;
    const TileData& tile = tile_data(psum.tile);
    NPUSIM_CHECK(n < tile.q, "systolic pe: tile {} psum in unused column {}", tile.id, n);
    if (params_.dataflow == Dataflow::kWeightStationary) {
      write_result(state, tile, psum.index, n, psum.bits);
    } else {
      write_result(state, tile, n, psum.index, psum.bits);
    }
  }

  // Rows below every live tile's operands only pass partial sums down.
  for (int k = rows - 1; k >= std::max(operand_rows, 1); --k) {
    const size_t at = static_cast<size_t>(k) * cols;
    std::copy(state.p_reg.begin() + (at - cols), state.p_reg.begin() + (at - cols) + used_cols,
              state.p_reg.begin() + at);
  }

  // The PEs, bottom-up and right-to-left so that neighbours' registers still hold their values
  // from the start of the cycle when read. Consecutive PEs almost always hold the same tile, so
  // the tile is looked up (and its bank's ownership checked: it cannot change during the cycle)
  // only when it changes.
  Token* const a_reg = state.a_reg.data();
  Token* const p_reg = state.p_reg.data();
  int current_id = -1, current_bank = 0, checked_row = -1;
  const TileData* current = nullptr;
  const uint32_t* weights = nullptr;
  const int32_t* meta = nullptr;
  for (int k = std::min(operand_rows, rows) - 1; k >= 0; --k) {
    // Streamed element entering row k this cycle: the vector injected k cycles ago (the skew).
    Token edge;
    if (static_cast<uint64_t>(k) <= t) {
      const Token& entry = state.injected[(t - k) % ring_];
      const TileData* tile = ring_tile(entry);
      if (tile != nullptr && k < tile->k) {
        // A sparse tile's row takes its whole group; each PE reads its own element of it.
        edge =
            Token{entry.tile, entry.index,
                  tile->sparse ? 0u : tile->strm[static_cast<size_t>(entry.index) * tile->k + k]};
      }
    }
    Token* const a_row = a_reg + static_cast<size_t>(k) * cols;
    Token* const p_row = p_reg + static_cast<size_t>(k) * cols;
    const Token* const p_above = k > 0 ? p_row - cols : nullptr;
    for (int n = used_cols - 1; n >= 0; --n) {
      const Token a_in = n == 0 ? edge : a_row[n - 1];
      if (a_in.tile >= 0) {
        if (a_in.tile != current_id) {
          current = &tile_data(a_in.tile);
          current_bank = bank_of(a_in.tile);
          weights = state.bank[current_bank].data();
          meta = current->sparse ? state.meta_bank[current_bank].data() : nullptr;
          current_id = a_in.tile;
          checked_row = -1;
        }
        // Row k holds the tile's weights (checked once per row and tile: it cannot change during
        // the cycle).
        if (checked_row != k) {
          const int owner = state.row_owner[current_bank][k];
          if (owner != a_in.tile) fail_bank_read(k, n, t, a_in.tile, current_bank, owner);
          checked_row = k;
        }
        uint32_t psum = 0;  // row 0 starts the partial sum
        if (p_above != nullptr) {
          const Token& p_in = p_above[n];
          if (p_in.tile != a_in.tile || p_in.index != a_in.index) {
            fail_tag_mismatch(k, n, t, a_in, p_in);
          }
          psum = p_in.bits;
        }
        const size_t pe = static_cast<size_t>(k) * cols + n;
        if (meta == nullptr) {
          p_row[n] = Token{a_in.tile, a_in.index, mac(current->kind, psum, a_in.bits, weights[pe])};
        } else if (meta[pe] < 0) {
          p_row[n] = Token{a_in.tile, a_in.index, psum};  // an empty slot
        } else {
          const uint32_t a_bits =
              current->strm[static_cast<size_t>(a_in.index) * current->shape.k + meta[pe]];
          p_row[n] = Token{a_in.tile, a_in.index, mac(current->kind, psum, a_bits, weights[pe])};
        }
        a_row[n] = n + 1 < current->q ? a_in : Token{};
      } else {
        if (p_above != nullptr) {
          const Token& p_in = p_above[n];
          if (p_in.tile >= 0 && k < tile_data(p_in.tile).k) fail_missing_operand(k, n, t, p_in);
          p_row[n] = p_in;
        } else {
          p_row[n] = Token{};
        }
        a_row[n] = Token{};
      }
    }
  }

  // Weight load: the bank's register chain shifts down one row; row 0 takes the next row of the
  // stationary matrix (last row first, so that row k lands in PE row k after K shifts).
  if (state.load_tile >= 0) {
    const TileData& tile = tile_data(state.load_tile);
    const int b = bank_of(tile.id);
    std::vector<uint32_t>& bank = state.bank[b];
    // A whole-bank load shifts every row; a wavefront load's step j only the rows its values have
    // reached (0..j), so rows below still hold the previous tile's weights for its last reads.
    const int moved =
        params_.weight_load_wavefront ? std::min(state.load_rows_done, rows - 1) : rows - 1;
    if (moved > 0) {
      std::memmove(bank.data() + cols, bank.data(),
                   sizeof(uint32_t) * static_cast<size_t>(moved) * cols);
    }
    const int row = tile.k - 1 - state.load_rows_done;
    for (int q = 0; q < cols; ++q) {
      bank[q] = q < tile.q ? tile.stat[static_cast<size_t>(row) * tile.q + q] : 0;
    }
    std::vector<int32_t>& meta_bank = state.meta_bank[b];
    if (!meta_bank.empty()) {  // a sparse array's metadata registers shift with the weights
      if (moved > 0) {
        std::memmove(meta_bank.data() + cols, meta_bank.data(),
                     sizeof(int32_t) * static_cast<size_t>(moved) * cols);
      }
      for (int q = 0; q < cols; ++q) {
        meta_bank[q] =
            tile.sparse && q < tile.q ? tile.source[static_cast<size_t>(row) * tile.q + q] : -1;
      }
    }
    state.bank_owner[b] = -1;
    std::vector<int>& owners = state.row_owner[b];
    std::fill(owners.begin(), owners.begin() + moved + 1, -1);  // the rows this step wrote
    if (++state.load_rows_done == tile.k) {
      state.bank_owner[b] = tile.id;
      std::fill(owners.begin(), owners.begin() + tile.k, tile.id);
      state.load_tile = -1;
    }
  }
}

void PeArrayModel::step_output_stationary(State& state) {
  const uint64_t t = state.cycle;
  const int rows = rows_, cols = cols_;

  // Sequencer: inject the next k step, or start the next tile once the ports are free and the
  // scoreboard rule holds (s >= s' + K' + M' - K, see the header).
  Token& port = state.injected[t % ring_];
  port = Token{};
  if (state.stream_tile < 0 && state.next_to_load < next_id_) {
    const TileData& tile = tile_data(state.next_to_load);
    bool allowed = tile.issue_cycle <= t;
    if (state.last_streamed >= 0) {
      const bool hooked = hooks_.os_advance_only_tile < 0 || hooks_.os_advance_only_tile == tile.id;
      const int advance = hooked ? hooks_.os_stream_start_advance : 0;
      const int64_t earliest = static_cast<int64_t>(state.prev_stream_cycle) + state.prev_k +
                               state.prev_m - tile.shape.k - advance;
      allowed = allowed && static_cast<int64_t>(t) >= earliest;
    }
    if (allowed) {
      state.stream_tile = tile.id;
      state.stream_next = 0;
      ++state.next_to_load;
      TileProgress& p = progress(state, tile.id);
      p.started = true;
      p.start_cycle = p.stream_cycle = t;
      state.prev_stream_cycle = t;
      state.prev_k = tile.shape.k;
      state.prev_m = tile.shape.m;
    }
  }
  if (state.stream_tile >= 0) {
    const TileData& tile = tile_data(state.stream_tile);
    port = Token{tile.id, state.stream_next, 0};
    if (++state.stream_next == tile.shape.k) {
      progress(state, tile.id).streaming_done = true;
      state.last_streamed = tile.id;
      state.stream_tile = -1;
      state.stream_next = 0;
    }
  }

  // Drain chains: moving values go down one slot; from the bottom slot into the accumulators.
  for (int n = 0; n < cols; ++n) {
    for (int r = rows - 1; r >= 0; --r) {
      const size_t at = static_cast<size_t>(r) * cols + n;
      if (!state.out_moving[at]) continue;
      const Token value = state.out_slot[at];
      state.out_slot[at] = Token{};
      state.out_moving[at] = 0;
      if (r == rows - 1) {
        write_result(state, tile_data(value.tile), value.index, n, value.bits);
      } else {
        const size_t below = at + cols;
        NPUSIM_CHECK(state.out_slot[below].tile < 0,
                     "systolic pe: cycle {}: output ({}, {}) of tile {} runs into output of tile "
                     "{} in drain slot ({}, {})",
                     t, value.index, n, value.tile, state.out_slot[below].tile, r + 1, n);
        state.out_slot[below] = value;
        state.out_moving[below] = 1;
      }
    }
  }

  int cached_id = -1;
  const TileData* cached = nullptr;
  const auto lookup = [&](int id) -> const TileData& {
    if (id != cached_id) {
      cached = &tile_data(id);
      cached_id = id;
    }
    return *cached;
  };

  // The PEs, bottom-up and right-to-left (see step_stationary).
  for (int m = rows - 1; m >= 0; --m) {
    Token a_edge;
    if (static_cast<uint64_t>(m) <= t) {
      const Token& entry = state.injected[(t - m) % ring_];
      const TileData* tile = ring_tile(entry);
      if (tile != nullptr && m < tile->shape.m) {
        a_edge = Token{entry.tile, entry.index,
                       tile->strm[static_cast<size_t>(m) * tile->shape.k + entry.index]};
      }
    }
    for (int n = cols - 1; n >= 0; --n) {
      const size_t at = static_cast<size_t>(m) * cols + n;
      const Token a_in = n == 0 ? a_edge : state.a_reg[at - 1];
      Token w_in;
      if (m == 0) {
        if (static_cast<uint64_t>(n) <= t) {
          const Token& entry = state.injected[(t - n) % ring_];
          const TileData* tile = ring_tile(entry);
          if (tile != nullptr && n < tile->shape.n) {
            w_in = Token{entry.tile, entry.index,
                         tile->stat[static_cast<size_t>(entry.index) * tile->shape.n + n]};
          }
        }
      } else {
        w_in = state.p_reg[at - cols];
      }
      if (a_in.tile < 0 && w_in.tile < 0) {
        state.a_reg[at] = Token{};
        state.p_reg[at] = Token{};
        continue;
      }
      NPUSIM_CHECK(a_in.tile == w_in.tile && a_in.index == w_in.index,
                   "systolic pe: PE({}, {}) cycle {}: a of tile {} step {} meets w of tile {} "
                   "step {}",
                   m, n, t, a_in.tile, a_in.index, w_in.tile, w_in.index);
      const TileData& tile = lookup(a_in.tile);
      const uint32_t sum =
          mac(tile.kind, a_in.index == 0 ? 0 : state.pe_acc[at], a_in.bits, w_in.bits);
      state.pe_acc[at] = sum;
      if (a_in.index == tile.shape.k - 1) {
        NPUSIM_CHECK(state.out_slot[at].tile < 0,
                     "systolic pe: PE({}, {}) cycle {}: result of tile {} finds its output slot "
                     "holding tile {}",
                     m, n, t, tile.id, state.out_slot[at].tile);
        state.out_slot[at] = Token{tile.id, m, sum};
        state.out_moving[at] = 0;
        if (++progress(state, tile.id).captured[n] == tile.shape.m) {
          state.drain_starts.emplace_back(tile.id, n);
        }
      }
      state.a_reg[at] = n + 1 < tile.shape.n ? a_in : Token{};
      state.p_reg[at] = m + 1 < tile.shape.m ? w_in : Token{};
    }
  }

  // A column whose last row finished this cycle starts moving its values next cycle.
  for (const auto& [tile, n] : state.drain_starts) {
    for (int r = 0; r < rows; ++r) {
      const size_t at = static_cast<size_t>(r) * cols + n;
      if (state.out_slot[at].tile == tile) state.out_moving[at] = 1;
    }
  }
  state.drain_starts.clear();
}

}  // namespace npusim::systolic
