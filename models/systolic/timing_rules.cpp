// Closed-form tile timing; the rules are stated in timing_rules.hpp.
#include "models/systolic/timing_rules.hpp"

#include <algorithm>

#include "models/systolic/sparsity.hpp"
#include "support/error.hpp"

namespace npusim::systolic {

void check_tile(const ArrayParams& params, const TileShape& tile, const void* a, int lda,
                const void* w, int ldw, const void* acc, int ldacc) {
  NPUSIM_CHECK(tile_fits(params, tile),
               "systolic: tile {}x{}x{} (MxKxN) does not fit the {}x{} {} {}", tile.m, tile.k,
               tile.n, params.rows, params.cols,
               params.kind == MatrixUnitKind::kCube ? "(K0 x N0)" : to_string(params.dataflow),
               to_string(params.kind));
  NPUSIM_CHECK(a != nullptr && w != nullptr && acc != nullptr,
               "systolic: tile {}x{}x{} has a null operand", tile.m, tile.k, tile.n);
  NPUSIM_CHECK(lda >= tile.k && ldw >= tile.n && ldacc >= tile.n,
               "systolic: leading dimensions lda={} ldw={} ldacc={} too small for tile {}x{}x{}",
               lda, ldw, ldacc, tile.m, tile.k, tile.n);
}

void StatsAccumulator::add(const TileShape& tile, DataType type, bool accumulate,
                           TileTiming& timing) {
  const uint64_t from = std::max(timing.start_cycle, stats_.last_done_cycle);
  timing.busy_cycles = timing.done_cycle > from ? timing.done_cycle - from : 0;
  const int k = tile.sparse ? sparse_rows(tile.k, sparse_n_, sparse_m_) : tile.k;
  const uint64_t macs = static_cast<uint64_t>(tile.m) * k * tile.n;
  const uint64_t outputs = static_cast<uint64_t>(tile.m) * tile.n;
  stats_.tiles += 1;
  stats_.macs += macs;
  if (type == DataType::kInt8) stats_.int8_macs += macs;
  if (type == DataType::kBf16) stats_.bf16_macs += macs;
  if (type == DataType::kFp16) stats_.fp16_macs += macs;
  if (loads_stationary_) stats_.stationary_rows_loaded += k;
  if (tile.sparse) stats_.sparse_tiles += 1;
  stats_.accumulator_writes += outputs;
  if (accumulate) stats_.accumulator_reads += outputs;
  stats_.busy_cycles += timing.busy_cycles;
  stats_.last_done_cycle = std::max(stats_.last_done_cycle, timing.done_cycle);
}

ClosedFormTiming::ClosedFormTiming(const ArrayParams& params) : params_(params) {}

TileTiming ClosedFormTiming::next(const TileShape& tile, uint64_t issue_cycle) {
  switch (params_.dataflow) {
    case Dataflow::kWeightStationary:
      return next_stationary(
          tile.sparse ? sparse_rows(tile.k, params_.sparse_n, params_.sparse_m) : tile.k, tile.m,
          tile.n, issue_cycle);
    case Dataflow::kInputStationary:
      return next_stationary(tile.k, tile.n, tile.m, issue_cycle);
    case Dataflow::kOutputStationary:
      return next_output_stationary(tile, issue_cycle);
  }
  NPUSIM_CHECK(false, "systolic: unknown dataflow {}", static_cast<int>(params_.dataflow));
  return {};
}

TileTiming ClosedFormTiming::next_stationary(int k, int s_vectors, int q_cols,
                                             uint64_t issue_cycle) {
  const uint64_t r = static_cast<uint64_t>(params_.rows);
  const int b = bank_;
  const uint64_t load = std::max({issue_cycle, port_free_, bank_free_[b]});
  const uint64_t s = std::max(load + k, stream_free_);
  TileTiming timing;
  timing.start_cycle = load;
  timing.done_cycle = s + s_vectors + q_cols + r - 1;
  port_free_ = load + k;
  stream_free_ = s + s_vectors;
  // Row r of the bank is read last in cycle s + S - 1 + r + Q - 1. A whole-bank load shifts every
  // row from its first cycle, so it waits for row K - 1; a wavefront load first writes row r in
  // cycle L + r, so it waits only until every row's last read is before that (the same for all r).
  // (Wavefront: the rows below a tile of fewer rows keep an earlier tile's weights, so the bank is
  // free once every tile's reads are done: the latest of their bounds.)
  bank_free_[b] = params_.weight_load_wavefront
                      ? std::max(bank_free_[b], s + s_vectors + q_cols - 1)
                      : s + s_vectors + k + q_cols - 2;
  if (params_.weight_double_buffer) bank_ = 1 - b;
  timing.next_issue_cycle = std::max(port_free_, bank_free_[bank_]);
  return timing;
}

TileTiming ClosedFormTiming::next_output_stationary(const TileShape& tile, uint64_t issue_cycle) {
  uint64_t s = issue_cycle;
  if (has_previous_) {
    const uint64_t ports_free = prev_start_ + prev_k_;
    const uint64_t drain_clear = ports_free + prev_m_;  // minus this tile's K, if positive
    s = std::max(s, ports_free);
    if (drain_clear > static_cast<uint64_t>(tile.k)) s = std::max(s, drain_clear - tile.k);
  }
  TileTiming timing;
  timing.start_cycle = s;
  timing.done_cycle = s + tile.k + tile.m + tile.n + params_.rows - 2;
  timing.next_issue_cycle = s + tile.k;
  has_previous_ = true;
  prev_start_ = s;
  prev_k_ = tile.k;
  prev_m_ = tile.m;
  return timing;
}

}  // namespace npusim::systolic
