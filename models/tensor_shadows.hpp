// Copies of the tensors that live in the unified buffer, for the every-tensor functional check and
// --save-intermediates: a resident tensor's bytes are reused once it is dead, so its values are
// captured while it is written. Exact: every byte of a resident tensor is written by a vector-unit
// instruction of the layer that produces it (the matrix units write only accumulators, and no DMA
// loads into a live tensor); each such instruction's written range (accesses_of) is copied into the
// shadow when it issues, which is when the vector unit computes its values. A byte written twice
// keeps its later value, as in the buffer. Cheap: one copy of each written byte. Each core of a
// chip has its own: on a data-parallel program a core's unified buffer holds its part of a tensor
// (TensorPart, core c), captured from that core's instructions. A timing-only run (no values)
// computes nothing to capture: it has no shadows at all, and asking for one is an internal error.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "arch/program.hpp"
#include "support/zeroed_bytes.hpp"

namespace npusim {

class TensorShadows {
 public:
  // `values`: false for a timing-only run (no shadows).
  TensorShadows(const Program& program, int core, bool values);

  // After `instr` wrote its values into `unified` (the unified buffer's bytes).
  void capture(const Instruction& instr, const uint8_t* unified);
  // The bytes of part `part` of program.tensors[i] (the whole tensor when it has no parts and
  // `part` is 0) when that part is resident on this core, else null.
  const uint8_t* bytes(size_t tensor, size_t part = 0) const;

 private:
  struct Shadow {
    uint64_t begin, end;  // unified-buffer range
    int layer;            // the layer whose instructions write it
    ZeroedBytes data;     // from calloc: a timing-only run, which captures nothing, touches no page
  };
  const Program& program_;
  const int core_;
  const bool values_;
  std::vector<Shadow> shadows_;
  // (program.tensors index, part index) -> shadows_ index
  std::map<std::pair<size_t, size_t>, size_t> of_part_;
  std::vector<std::vector<size_t>> by_layer_;  // the shadows each layer writes
};

}  // namespace npusim
