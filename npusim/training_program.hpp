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
#include "compiler/lowering/optimizer_update.hpp"
#include "npusim/compile_target.hpp"
#include "npusim/training_state.hpp"

namespace npusim {

// The bf16 weights [in][out] of a parameter as the matrix unit reads them (the [out][in]
// transpose where `transposed`), rounded to nearest even from the fp32 masters.
std::vector<uint16_t> bf16_weight_matrix(const LayerParameters& p, bool transposed);
// As `use` reads them: [in][out], transposed, or a convolution's kernel flipped with its channel
// axes exchanged ([kh][kw][out][cin], WeightUse::flipped).
std::vector<uint16_t> bf16_weight_matrix(const LayerParameters& p, const WeightUse& use);

// A layer of a compiled step whose weights are a parameter (or a layer norm's): its segments of
// the program's off-chip memory (Program::dram_init).
struct ParameterSlot {
  size_t layer = 0;                              // in compiled().graph
  size_t weights_segment = 0, bias_segment = 0;  // a layer norm: its one segment, twice
  WeightUse use;
  bool norm = false;  // a layer norm's gamma and beta
};
// The slots of `c` (compiled from a graph whose layers with weights are exactly `uses`): the
// memory plan's segments in layer order, checked against the graph.
std::vector<ParameterSlot> parameter_slots(const Compiled& c, const std::vector<WeightUse>& uses);

// The parameters of the compiled step `c` as the optimizer's update on the chip sees them
// (compiler/lowering/optimizer_update.hpp): each gradient of `gradients` (the program's outputs
// named "<tensor><suffix>": ".allreduced" after a data-parallel step's all-reduce), the segments
// of its uses, a convolution's channels and taps from `forward`.
std::vector<OptimizerParameter> optimizer_parameters(
    const Compiled& c, const std::vector<WeightUse>& uses,
    const std::vector<ParameterGradient>& gradients, const std::string& suffix,
    const Graph& forward);

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

  // The optimizer on the chip: appends its update of `params` (in `gradients`' order, the
  // gradients the outputs "<tensor><suffix>") to the program, writes the initial fp32 masters
  // from `initial` and zero state, and adds one output per region the update writes (read back
  // after each run by finish_chip_step).
  void add_chip_optimizer(const HwConfig& hw, const std::vector<ParameterGradient>& gradients,
                          const std::string& suffix, const Graph& forward,
                          const OptimizerConstants& k, const Parameters& initial);
  bool chip_optimizer() const { return chip_; }
  const OptimizerPlan& optimizer_plan() const { return plan_; }
  // Adam's bias corrections of the coming step, into the program's scalars segment.
  void write_optimizer_scalars(float c1, float c2);
  // After a run with the optimizer on the chip: `outputs` are the run's output bytes
  // (SimulationResult::outputs). Always on: the fp32 masters the chip wrote equal, bit for bit,
  // `host` (the host's fp32 update of the same gradients), and every bf16 weight, bias and layer
  // norm segment it rewrote equals what write_parameters writes for `host`. Then the memory the
  // update wrote is carried into the next run's (as off-chip memory persists between steps).
  // Returns "" or the first difference.
  std::string finish_chip_step(const std::vector<std::vector<uint8_t>>& outputs,
                               const Parameters& host);

 private:
  using Slot = ParameterSlot;
  Compiled c_;
  std::vector<Slot> slots_;
  bool chip_ = false;
  OptimizerPlan plan_;
  std::vector<WeightUse> uses_;
  std::vector<OptimizerParameter> optimized_;
  size_t first_optimizer_output_ = 0;
  size_t constants_layer_ = 0;
  std::vector<size_t> constants_segments_;  // per core
  bool has_constants_ = false;
};

}  // namespace npusim
