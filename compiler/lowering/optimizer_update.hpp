// The optimizer's update on the chip (issue 23, docs/training.md "The optimizer on the chip"):
// appended to a compiled training step after its backward pass (and after the all-reduce of a
// data-parallel step), as mixed-precision training on TPUs updates its weights: fp32 master weights
// and fp32 optimizer state in off-chip memory, the fp32 element-wise work on the vector unit
// (Fp32Op), the bf16 weights the next step's matrix products read written back by the chip.
//
// Per parameter, in tiles of whole rows of its forward weights [in][out] (a tile's buffers fit an
// eighth of the unified buffer, so consecutive tiles overlap), on core (tile index mod cores):
//   1. DMA loads: the tile's gradient (bf16; a transposing load where the gradient is stored
//      outputs first, [out][in + 1]), its fp32 master rows and state rows;
//   2. the update on the vector unit, each operation rounded to fp32 as the host's float code
//      rounds it (so the chip's masters equal the host's update bit for bit):
//        sgd       w = w - lr g
//        momentum  m = 0.9 m + g;  w = w - lr m
//        adam      m = b1 m + (1 - b1) g;  v = b2 v + ((1 - b2) g) g;
//                  w = w - (lr (m / c1)) / (sqrt(v / c2) + eps)   (c1, c2: the bias corrections
//                  1 - b1^t, 1 - b2^t, two fp32 scalars the host writes before each step)
//   3. DMA stores of the master and state rows, and of the master rounded to bf16 into the
//      forward layer's weights; each other use of the weights is rewritten from those: a
//      transposed use ([out][in]) and a flipped kernel ([kh][kw][out][cin]) by a transposing load
//      of the rows just stored and a strided store, a layer norm's diag(gamma) by a strided store
//      of its diagonal.
// Biases (fp32 in the program, [out]) and a layer norm's gamma and beta (fp32 [2n]) are their own
// masters: the update reads and rewrites them in place.
//
// The update starts when the step before it has ended on every core (its instructions without
// another dependency inside it wait for each unit's last instruction), so the phase is its own
// span of the step.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "arch/hw_config.hpp"
#include "arch/program.hpp"

namespace npusim {

// The update's constants, as the host's optimizer (npusim/training_state.hpp) holds them.
struct OptimizerConstants {
  enum class Kind { kSgd, kMomentum, kAdam };
  Kind kind = Kind::kSgd;
  float lr = 0.01f;
  float momentum = 0.9f;
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-7f;
  float one_minus_beta1 = 0.1f, one_minus_beta2 = 0.001f;
  int state_per_parameter() const {
    return kind == Kind::kAdam ? 2 : kind == Kind::kMomentum ? 1 : 0;
  }
};

// One trained parameter of the step program.
struct OptimizerParameter {
  std::string name;  // the forward layer
  // The gradient off chip, bf16: [in + has_bias][out], or [out][in + has_bias] (outputs_first).
  uint64_t gradient_addr = 0;
  int in = 0, out = 0;
  bool has_bias = false, outputs_first = true;
  // A layer norm: its gradient [2][n] (in 1, out n) and its fp32 [gamma | beta] at weights_addr,
  // updated in place.
  bool norm = false;
  uint64_t weights_addr = 0;         // bf16 [in][out]: the forward layer's weights
  uint64_t bias_addr = 0;            // fp32 [out] (has_bias)
  std::vector<uint64_t> transposed;  // bf16 [out][in]
  std::vector<uint64_t> flipped;     // bf16 [kh][kw][out][cin]
  int cin = 1, taps = 1;             // a convolution's input channels and kh x kw
  std::vector<uint64_t> diagonal;    // bf16 [n][n] with gamma on the diagonal
};

// What the update writes off chip, per parameter: its fp32 master weights (a matrix parameter's,
// in new space), its state (new space), and the program's own segments it rewrites (the bf16
// weights of every use, the fp32 biases, a layer norm's gamma and beta).
struct OptimizerRegion {
  uint64_t addr = 0, bytes = 0;
};
struct OptimizerPlan {
  uint64_t scalars_addr = 0;  // fp32 [c1, c2] (Adam), rewritten by the host before each step
  size_t scalars_segment = 0;
  // Per parameter, in the order given: its master's address ([in][out] fp32; a layer norm's is
  // its weights_addr) and the new segments (master, then state), indices into Program::dram_init.
  std::vector<uint64_t> master_addr;
  std::vector<std::vector<size_t>> new_segments;
  // Everything the update writes (each a whole segment of Program::dram_init), for the host to
  // carry from one step's memory to the next.
  std::vector<OptimizerRegion> written;
  uint64_t dram_read_bytes = 0, dram_write_bytes = 0;
  uint64_t state_bytes = 0, master_bytes = 0;  // the new space
  uint64_t program_dram_bytes = 0;             // the program's off-chip space before the update's
};

// Appends the update of `params` to `p` (p.cores cores share it, tile by tile): one layer record
// per parameter, "optimizer <name>", and zeroed fp32 segments for the masters and the state (the
// caller writes the initial masters; `contents` false: timing-only segments, as a program
// compiled without values has).
OptimizerPlan append_optimizer_update(Program& p, const HwConfig& hw,
                                      const std::vector<OptimizerParameter>& params,
                                      const OptimizerConstants& k, bool contents);

}  // namespace npusim
