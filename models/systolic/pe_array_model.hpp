// The `pe` fidelity: a register-level model of the systolic array that steps every clock. It is
// the specification the closed-form timing (timing_rules.hpp) and the fast values must match.
//
// Micro-architecture (docs/systolic_array.md has the figures and derivations):
//   ws / is ("stationary"): PE(k, q) holds a stationary operand in one of two weight registers
//     (one when weight_double_buffer is false). Stationary rows shift in from the top edge, one
//     row per cycle, through the register chain of one bank, K cycles per tile; banks alternate
//     between tiles. Streamed vectors enter the left edge, element k delayed k cycles (skew), and
//     move one PE right per cycle, carrying a tag (tile, vector) that also selects the bank.
//     Partial sums start at zero in row 0, move one PE down per cycle through all R rows and are
//     written to the accumulators below the array in the following cycle.
//     ws streams rows of a against w; is streams columns of w against a (the transposed product).
//     An N:M sparse ws tile (sparsity.hpp) loads its Kc rows of slots, each weight with its index
//     into a metadata register beside it; the element entering row r is the group of M
//     activations of r's group (r / N), and each PE multiplies the one its index selects (an
//     empty slot passes the partial sum on).
//   os: PE(m, n) accumulates one output. a[m][k] enters row m at cycle s+k+m, w[k][n] enters
//     column n at cycle s+k+n; both move on one PE per cycle. The finished value goes into the
//     PE's output slot; once the last row of a column has finished, that column's values move
//     down one slot per cycle and are written to the accumulators from the bottom slot.
// Sequencing (hardware control, decided each cycle from the state at the start of the cycle):
//   a weight load starts when the tile is issued, the load port is idle and no pending or future
//   read targets its bank; a tile streams once its weights are loaded and the previous tile's
//   last vector has entered; os tiles stream when the operand ports are free and the scoreboard
//   rule s >= s' + K' + M' - K holds (first result of this tile may not enter the drain chain
//   before the previous tile's results have moved past it). Every structural hazard (a read of a
//   bank not holding the tile's weights, a value overwriting another, mismatched tags) is an
//   always-on check, so a wrong sequencing rule cannot pass silently.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "models/systolic/array_model.hpp"
#include "models/systolic/timing_rules.hpp"

namespace npusim::systolic {

// Test-only deviations from the sequencing rules, to show that the rules are tight: a tile
// started one cycle earlier than they allow must trip a hazard check.
struct PeTestHooks {
  int os_stream_start_advance = 0;  // start os tiles this many cycles before the rule allows
  int os_advance_only_tile = -1;    // ... only the tile with this sequence number (-1: all)
};

class PeArrayModel final : public ArrayModel {
 public:
  explicit PeArrayModel(const ArrayParams& params, PeTestHooks hooks = {});

  TileTiming execute_int8(const TileShape& tile, const Int8TileOperands& operands,
                          uint64_t issue_cycle) override;
  TileTiming execute_half16(Half16Format format, const TileShape& tile,
                            const Half16TileOperands& operands, uint64_t issue_cycle) override;
  const ArrayStats& stats() const override { return stats_.stats(); }

  // Register-level activity, for the speed benchmark: PE-cycles stepped so far.
  uint64_t pe_cycles_stepped() const { return pe_cycles_stepped_; }

  enum class ValueKind { kInt8, kBf16, kFp16 };

  // One tile as the array sees it: operands copied and widened (int8 as int32, 16-bit floats as
  // fp32 bits), arranged as the stationary matrix (stat[k * Q + q]) and the streamed vectors
  // (strm[v * K + k]); for os, a[m * K + k] in `strm` and w[k * N + n] in `stat`.
  struct TileData {
    int id = 0;
    TileShape shape;
    ValueKind kind = ValueKind::kInt8;
    int k = 0, s = 0, q = 0;  // ws/is: stationary rows, streamed vectors, used columns
    std::vector<uint32_t> stat;
    std::vector<uint32_t> strm;
    // An N:M sparse ws tile (sparsity.hpp): k is Kc, stat holds the slots' weights (Kc x N), and
    // source[r * N + n] the row of a (strm, M x shape.k) that slot (r, n) multiplies, -1 for none.
    bool sparse = false;
    std::vector<int32_t> source;
    int32_t* acc_int = nullptr;
    float* acc_float = nullptr;
    int ldacc = 0;
    bool accumulate = false;
    uint64_t issue_cycle = 0;
  };

  // A value travelling through the array with its control tag; tile < 0 means empty.
  struct Token {
    int tile = -1;
    int index = 0;  // ws/is: streamed vector; os: k step; psums/slots: output row or vector
    uint32_t bits = 0;
  };

  struct TileProgress {
    int64_t writes_left = 0;
    uint64_t start_cycle = 0;
    uint64_t stream_cycle = 0;
    uint64_t done_cycle = 0;
    bool started = false;
    bool streaming_done = false;
    std::vector<int> captured;  // os: finished outputs per column
  };

  // Everything that changes from cycle to cycle; copied to look ahead to a tile's completion
  // without losing the state at which the next tile may be issued.
  struct State {
    uint64_t cycle = 0;
    std::vector<Token> a_reg;  // operand moving right (ws/is: streamed; os: a)
    std::vector<Token> p_reg;  // ws/is: partial sum moving down; os: w moving down
    std::vector<uint32_t> bank[2];
    std::vector<int32_t> meta_bank[2];  // sparse arrays: each slot's index (row of a), -1: none
    int bank_owner[2] = {-1, -1};       // tile whose weights are complete in the bank
    // The tile whose weight each row of a bank holds (-1: none, or values in transit). With
    // weight_load_wavefront a load writes only the rows its values have reached, so an earlier
    // tile may still read the rows below (and those a later tile of fewer rows never writes).
    std::vector<int> row_owner[2];
    std::vector<uint32_t> pe_acc;  // os accumulators
    std::vector<Token> out_slot;   // os drain chain (index = output row)
    std::vector<uint8_t> out_moving;
    std::vector<Token> injected;         // ring of the last max(R, C) port injections
    uint64_t port_cycle = ~uint64_t{0};  // cycle whose port injection is decided
    int load_tile = -1;                  // tile whose weights are shifting in
    int load_rows_done = 0;
    int next_to_load = 0;            // next tile id to load (os: to stream)
    int stream_tile = -1;            // tile currently injecting vectors
    int stream_next = 0;             // its next vector
    int last_streamed = -1;          // last tile that finished injecting its vectors
    uint64_t prev_stream_cycle = 0;  // os scoreboard: start, K and M of the last started tile
    int prev_k = 0;
    int prev_m = 0;
    std::vector<std::pair<int, int>> drain_starts;  // os: (tile, column) moving from next cycle
    std::deque<TileProgress> progress;              // by tile id - first_tile_
  };

 private:
  TileTiming run_tile(TileData data);
  // A sparse ws tile's weights as the array holds them: Kc rows of slots and their indices.
  void compress_stationary(TileData& data) const;
  TileProgress& progress(State& state, int tile);
  const TileData& tile_data(int tile) const;
  [[noreturn, gnu::cold, gnu::noinline]] void fail_tile_not_live(int tile) const;
  int bank_of(int tile) const;
  bool ready_for_next(State& state);
  void inject_stationary(State& state);
  const TileData* ring_tile(const Token& entry) const;
  bool bank_has_future_reads(const State& state, int bank) const;
  // weight_load_wavefront: whether a load into `bank` starting this cycle would rewrite a row
  // before its owner's last read of it.
  bool bank_blocks_wavefront_load(const State& state, int bank) const;
  bool bank_blocks_load(const State& state, int bank) const;
  bool array_idle(const State& state) const;
  void step(State& state);
  void step_stationary(State& state);
  void step_output_stationary(State& state);
  void write_result(State& state, const TileData& tile, int m, int n, uint32_t bits);
  void drop_finished_tiles();

  ArrayParams params_;
  PeTestHooks hooks_;
  int rows_, cols_;
  int ring_;  // size of the injection ring
  State state_;
  std::deque<TileData> tiles_;
  int first_tile_ = 0;       // id of tiles_.front()
  int committed_upto_ = -1;  // results of tiles <= this id are final; later writes are replays
  int next_id_ = 0;
  StatsAccumulator stats_;
  uint64_t pe_cycles_stepped_ = 0;
};

}  // namespace npusim::systolic
