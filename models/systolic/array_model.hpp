// Contract between the matrix unit (models/matrix_unit.*) and the systolic-array cores.
//
// An R x C systolic array executes one MATMUL tile at a time:
//     acc[m][n] (+)= sum_k a[m][k] * w[k][n]       for m < M, n < N, k < K
// The tile's stationary operand must fit the array (SCALE-Sim's mapping):
//     ws: K <= R and N <= C  (weights stay; M rows of `a` stream through)
//     os: M <= R and N <= C  (outputs stay;  K steps stream through)
//     is: K <= R and M <= C  (inputs stay;  N columns of `w` stream through)
//     ws, N:M sparse tile (sparsity.hpp): Kc = sparse_rows(K) <= R and N <= C
// The compiler emits tiles that fit; a tile that does not is an internal error.
//
// Timing contract: execute() is called in program order, once the tile's operands are in the
// buffers and the array accepted it (`issue_cycle` >= the previous tile's next_issue_cycle). The
// model remembers what the previous tile left in the array (weights loaded or preloaded, pipeline
// still draining) and returns when this tile's last result is in the accumulators and when the
// array can accept the next tile. Both fidelities return identical cycles and values.
// The operands are read during the call only (the models copy what they keep); results are in
// `acc` when the call returns. Timing formulas: docs/systolic_array.md and timing_rules.hpp.
//
// Arithmetic (identical in both fidelities):
//   int8:  products and sums in int32, two's-complement wrap-around on overflow.
//   bf16/fp16: each product is computed exactly and rounded once to fp32 (round to nearest even;
//     exact unless it overflows or lands in fp32's subnormal range). The partial sum of one output
//     starts at +0.0f and adds the products in k order (k = 0, 1, ..., K-1), each add an fp32
//     round-to-nearest-even add; subnormals are kept. Then acc = accumulate ? acc + sum : sum.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "arch/types.hpp"

namespace npusim::systolic {

enum class Fidelity { kFast, kPe };

const char* to_string(Fidelity fidelity);  // "fast", "pe"
std::optional<Fidelity> parse_fidelity(const std::string& text);

struct ArrayParams {
  int rows = 0;
  int cols = 0;
  Dataflow dataflow = Dataflow::kWeightStationary;
  // True when the PEs hold a second weight register so the next tile's weights shift in while the
  // current tile computes (TPU v1 does this).
  bool weight_double_buffer = true;
  // kCube: a Da Vinci-style cube unit (cube_model.hpp), rows = K0 and cols = N0 of its block,
  // block_m = M0; it fits tiles as ws does (K <= rows, N <= cols) and ignores dataflow and
  // weight_double_buffer.
  MatrixUnitKind kind = MatrixUnitKind::kSystolic;
  int block_m = 16;
  // ws systolic arrays only: N:M structured sparsity (sparsity.hpp); 0: dense tiles only.
  int sparse_n = 0, sparse_m = 0;
  // ws/is: the next tile's weights shift into a bank row by row behind the previous tile's last
  // reads (a row is rewritten once its last read is done), not after the whole bank is read:
  // bank_free = max(bank_free, s + S + Q - 1) instead of s + S + K + Q - 2 (timing_rules.hpp).
  bool weight_load_wavefront = false;
};

struct TileShape {
  int m = 0;
  int k = 0;
  int n = 0;
  // Run on the array's N:M sparse path (sparsity.hpp): the weights have at most N non-zeros in
  // every M rows, and the tile takes Kc = sparse_rows(k) stationary rows instead of k.
  bool sparse = false;
};

// int8 x int8 -> int32 operands, row-major with leading dimensions in elements.
struct Int8TileOperands {
  const int8_t* a = nullptr;
  int lda = 0;
  const int8_t* w = nullptr;
  int ldw = 0;
  int32_t* acc = nullptr;
  int ldacc = 0;
  bool accumulate = false;  // false: acc = a*w; true: acc += a*w
};

// 16-bit floating-point operands (bf16 or fp16 bit patterns) -> fp32 accumulators, row-major.
struct Half16TileOperands {
  const uint16_t* a = nullptr;
  int lda = 0;
  const uint16_t* w = nullptr;
  int ldw = 0;
  float* acc = nullptr;
  int ldacc = 0;
  bool accumulate = false;  // false: acc = a*w; true: acc += a*w
};

enum class Half16Format { kBf16, kFp16 };

struct TileTiming {
  uint64_t start_cycle = 0;       // first cycle the tile uses the array (weight load or stream)
  uint64_t done_cycle = 0;        // cycle at which the last result is in the accumulators
  uint64_t next_issue_cycle = 0;  // earliest cycle the array accepts the next tile
  uint64_t busy_cycles = 0;       // cycles of array activity charged to this tile
};

// Totals over every tile an array executed (the energy model's event counts). busy_cycles of a
// tile are the cycles it added to the array's timeline: done_cycle - max(start_cycle, latest
// done_cycle of the earlier tiles), or 0.
struct ArrayStats {
  uint64_t tiles = 0;
  // Multiply-accumulates performed, all types: M*K*N per dense tile, M*Kc*N per sparse one.
  uint64_t macs = 0;
  uint64_t int8_macs = 0;
  uint64_t bf16_macs = 0;
  uint64_t fp16_macs = 0;
  uint64_t stationary_rows_loaded = 0;  // ws/is: rows shifted into a bank (K or Kc), C wide
  uint64_t sparse_tiles = 0;            // tiles run on the N:M sparse path
  uint64_t accumulator_writes = 0;      // results written (M*N per tile)
  uint64_t accumulator_reads = 0;       // read-modify-write reads (M*N per accumulating tile)
  uint64_t busy_cycles = 0;
  uint64_t last_done_cycle = 0;
};

bool tile_fits(const ArrayParams& array, const TileShape& tile);

class ArrayModel {
 public:
  virtual ~ArrayModel() = default;
  virtual TileTiming execute_int8(const TileShape& tile, const Int8TileOperands& operands,
                                  uint64_t issue_cycle) = 0;
  virtual TileTiming execute_half16(Half16Format format, const TileShape& tile,
                                    const Half16TileOperands& operands, uint64_t issue_cycle) = 0;
  TileTiming execute_bf16(const TileShape& tile, const Half16TileOperands& operands,
                          uint64_t issue_cycle) {
    return execute_half16(Half16Format::kBf16, tile, operands, issue_cycle);
  }
  TileTiming execute_fp16(const TileShape& tile, const Half16TileOperands& operands,
                          uint64_t issue_cycle) {
    return execute_half16(Half16Format::kFp16, tile, operands, issue_cycle);
  }
  // The timing of a tile without its values (`npusim run --values off`): the same cycles and
  // stats as execute_int8 / execute_half16 of `type`, nothing read or written. Timing never
  // depends on operand values, so this default runs the tile on zero operands into a scratch
  // accumulator (the pe model still clocks every PE); the fast model only evaluates its formula.
  virtual TileTiming time_only(const TileShape& tile, DataType type, bool accumulate,
                               uint64_t issue_cycle);
  virtual const ArrayStats& stats() const = 0;
};

std::unique_ptr<ArrayModel> make_array_model(const ArrayParams& params, Fidelity fidelity);

}  // namespace npusim::systolic
