// The `pe` fidelity of the cube unit: every pipeline register of cube_model.hpp stepped clock by
// clock with the values it holds. Each cycle, from the back of the pipeline to the front (so each
// stage reads its predecessor's value from the start of the cycle):
//   write    the last register's block (M0 x N0 sums) goes into the accumulators;
//   tree     each adder-tree register takes the previous level's lanes, pairwise added;
//   multiply the product register takes the M0 x N0 x P products of the fetched block;
//   fetch    the input register takes the next block of the tile being fed, one per cycle, once
//            the tile has been issued.
// Always-on checks: blocks are written exactly once each, in program order (tile by tile, block
// by block), and a tile's last block is followed by the next tile's first.
//
// A call feeds the tile's blocks into the real pipeline (earlier tiles drain meanwhile), then runs
// a copy of the pipeline until the tile's last block is written, to return its values and done
// cycle; the real state resumes at the cycle the next tile may be fetched. Writes of a tile are
// made by the call that executes it (the copy); the real state's later writes of the same blocks
// are replays and are skipped, so no caller's accumulators are touched after its call returns.
#pragma once

#include <cstdint>
#include <vector>

#include "models/systolic/array_model.hpp"
#include "models/systolic/cube_model.hpp"
#include "models/systolic/timing_rules.hpp"

namespace npusim::systolic {

class CubePeModel final : public ArrayModel {
 public:
  explicit CubePeModel(const ArrayParams& params);

  TileTiming execute_int8(const TileShape& tile, const Int8TileOperands& operands,
                          uint64_t issue_cycle) override;
  TileTiming execute_half16(Half16Format format, const TileShape& tile,
                            const Half16TileOperands& operands, uint64_t issue_cycle) override;
  const ArrayStats& stats() const override { return stats_.stats(); }

  // Register-level activity, for tests: pipeline cycles stepped so far (look-ahead included).
  uint64_t cycles_stepped() const { return cycles_stepped_; }

  enum class ValueKind { kInt8, kFloat };

  // The tile being fed: operands widened (int8 as int32 bits, 16-bit floats as fp32 bits).
  struct TileData {
    int id = 0;
    TileShape shape;
    ValueKind kind = ValueKind::kInt8;
    int blocks = 0;
    std::vector<uint32_t> a;  // a[m * K + k]
    std::vector<uint32_t> w;  // w[k * N + n]
    void* acc = nullptr;      // int32_t or float
    int ldacc = 0;
    bool accumulate = false;
    uint64_t issue_cycle = 0;
  };

  // A block in a pipeline register; tile < 0 means the register is empty. Carries what the write
  // stage needs, so a tile's operands are dropped once all its blocks are fetched.
  struct Block {
    int tile = -1;
    int index = 0;   // block j of the tile: rows j*M0 .. j*M0 + rows - 1
    int blocks = 0;  // blocks of the tile
    int rows = 0, cols = 0;
    ValueKind kind = ValueKind::kInt8;
    void* acc = nullptr;
    int ldacc = 0;
    bool accumulate = false;
    // fetch register: a (M0 x P, lane innermost) then w (P x N0), zero padded;
    // product / tree registers: (r * N0 + n) * width + lane, width = P >> level.
    std::vector<uint32_t> values;
  };

  struct State {
    uint64_t cycle = 0;
    std::vector<Block> regs;  // [0] fetch, [1] products, [1 + l] tree level l, l = 1..L
    int next_block = 0;       // next block of the tile being fed
    int last_tile = -1;       // the last block written: (last_tile, last_block) of last_blocks
    int last_block = -1;
    int last_blocks = 0;
    // The tile of the current call: its first fetch and the cycle after its last write.
    int current = -1;
    uint64_t start_cycle = 0;
    uint64_t done_cycle = 0;
    int written = 0;
  };

 private:
  TileTiming run_tile(TileData data);
  void step(State& state, const TileData* feeding);
  void fetch(Block& reg, const TileData& tile, int index) const;
  void multiply(const Block& in, Block& out) const;
  void reduce(const Block& in, Block& out, int in_width) const;
  void write(State& state, const Block& block) const;

  ArrayParams params_;
  CubeGeometry g_;
  State state_;
  int next_id_ = 0;
  int committed_upto_ = -1;  // writes of tiles <= this id were made; later ones are replays
  StatsAccumulator stats_;
  uint64_t cycles_stepped_ = 0;
};

}  // namespace npusim::systolic
