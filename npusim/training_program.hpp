// A training program compiled once (issue 23, docs/training.md): the step graph (or the forward
// graph of the held-out evaluation) compiled for the hardware one time, its parameters run-time
// inputs the host writes before every run, as it writes the batch. The parameters are the
// program's parameter segments in off-chip memory (the bf16 weights the matrix unit reads, the
// fp32 biases), rewritten from the fp32 master weights each step; the batch's labels are the
// constants block of one move (-onehot), rewritten the same way. The instructions do not change:
// the same program is simulated step after step, and the compiled graph's copy of the values is
// updated with them so that every run is checked against the reference as before.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/backward_rules.hpp"
#include "npusim/compile_target.hpp"
#include "npusim/training_state.hpp"

namespace npusim {

// The bf16 weights [in][out] of a parameter as the matrix unit reads them (the [out][in]
// transpose where `transposed`), rounded to nearest even from the fp32 masters.
std::vector<uint16_t> bf16_weight_matrix(const LayerParameters& p, bool transposed);
// As `use` reads them: [in][out], transposed, or a convolution's kernel flipped with its channel
// axes exchanged ([kh][kw][out][cin], WeightUse::flipped).
std::vector<uint16_t> bf16_weight_matrix(const LayerParameters& p, const WeightUse& use);

class TrainingProgram {
 public:
  // `compiled` from a graph whose layers with weights are exactly `uses`, with the values of
  // `initial` in them; `constants_layer`: a move of constants whose values change between runs
  // ("" for none). Checks (always) that the program's parameter segments hold what
  // write_parameters writes for `initial`: where the compiler's memory plan changes, this fails
  // instead of feeding a layer another layer's weights.
  TrainingProgram(Compiled compiled, std::vector<WeightUse> uses, const Parameters& initial,
                  const std::string& constants_layer = "");

  // The parameters, into the program's off-chip segments and the compiled graph.
  void write_parameters(const Parameters& p);
  // The constants layer's values (its move_constants, output order; on several cores each core's
  // in turn, compiler/ir/backward_rules.hpp kPerImageConstants), likewise.
  void write_constants(const std::vector<float>& values);

  const Compiled& compiled() const { return c_; }

 private:
  struct Slot {
    size_t layer = 0;                              // in compiled().graph
    size_t weights_segment = 0, bias_segment = 0;  // a layer norm: its one segment, twice
    WeightUse use;
    bool norm = false;  // a layer norm's gamma and beta
  };
  Compiled c_;
  std::vector<Slot> slots_;
  size_t constants_layer_ = 0;
  std::vector<size_t> constants_segments_;  // per core
  bool has_constants_ = false;
};

}  // namespace npusim
