// Closed-form per-tile timing of npusim's systolic array (the `fast` fidelity). The register-level
// model (pe_array_model.hpp) is the specification; tests assert that both give the same cycles.
//
// Cycle t is one clock; "in cycle t" means registers update at the end of t. R = array rows.
// ws and is use one rule: K stationary rows, S streamed vectors, Q used columns
//     ws: S = M, Q = N          is: S = N, Q = M   (is is ws on the transposed product)
//   L    = max(issue, port_free, bank_free[b])      weight load: one row per cycle, cycles L..L+K-1
//   s    = max(L + K, stream_free)                  first vector enters PE(0,0) in cycle s
//   done = s + S + Q + R - 1                         last psum written to the accumulators
//   port_free   = L + K                              the weight-load port is free again
//   stream_free = s + S                              the next tile's first vector may enter
//   bank_free[b] = s + S + K + Q - 2                 no PE reads bank b any more
//                  max(bank_free[b], s + S + Q - 1) with weight_load_wavefront: row r is
//                  rewritten from cycle L + r, after its last read (cycle s + S - 1 + r + Q - 1);
//                  rows below a shorter tile keep earlier tiles' weights, hence the max
//   b alternates 0,1 with weight double buffering, stays 0 without;
//   next_issue = max(port_free, bank_free[bank of the next tile])
// os (M rows and N columns of PEs each own one output; K steps stream):
//   s    = max(issue, s' + K', s' + K' + M' - K)   (' = previous tile): operand ports free, and
//          this tile's first result may not enter the drain chain before the previous tile's
//          results have moved past it
//   done = s + K + M + N + R - 2                    results drain down the columns, R rows deep
//   next_issue = s + K
// An N:M sparse ws tile (sparsity.hpp) follows the ws rule with K = Kc, its stationary rows.
// Derivations: docs/systolic_array.md.
#pragma once

#include <cstdint>

#include "models/systolic/array_model.hpp"

namespace npusim::systolic {

// Running totals shared by both fidelities (see ArrayStats for the busy_cycles rule).
class StatsAccumulator {
 public:
  explicit StatsAccumulator(const ArrayParams& params)
      : loads_stationary_(params.kind == MatrixUnitKind::kSystolic &&
                          params.dataflow != Dataflow::kOutputStationary),
        sparse_n_(params.sparse_n),
        sparse_m_(params.sparse_m) {}
  void add(const TileShape& tile, DataType type, bool accumulate, TileTiming& timing);
  const ArrayStats& stats() const { return stats_; }

 private:
  bool loads_stationary_;  // ws/is arrays shift K stationary rows in per tile; os and cubes do not
  int sparse_n_, sparse_m_;
  ArrayStats stats_;
};

// Checks shared by both fidelities: the tile fits and its operands are there.
void check_tile(const ArrayParams& params, const TileShape& tile, const void* a, int lda,
                const void* w, int ldw, const void* acc, int ldacc);

class ClosedFormTiming {
 public:
  explicit ClosedFormTiming(const ArrayParams& params);

  // Timing of the next tile in program order; busy_cycles is left 0 (StatsAccumulator sets it).
  TileTiming next(const TileShape& tile, uint64_t issue_cycle);

 private:
  TileTiming next_stationary(int k, int s_vectors, int q_cols, uint64_t issue_cycle);
  TileTiming next_output_stationary(const TileShape& tile, uint64_t issue_cycle);

  ArrayParams params_;
  // ws / is
  uint64_t port_free_ = 0;
  uint64_t stream_free_ = 0;
  uint64_t bank_free_[2] = {0, 0};
  int bank_ = 0;  // bank of the next tile
  // os
  bool has_previous_ = false;
  uint64_t prev_start_ = 0;
  int prev_k_ = 0;
  int prev_m_ = 0;
};

}  // namespace npusim::systolic
