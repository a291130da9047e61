// Data-parallel training (issue 23 item 7, docs/training.md "Data parallel"): the step graph of
// each core's share of the batch, replicated over the cores as the data-parallel lowering spreads
// images (compiler/lowering/data_parallel.hpp: one image per core, its activations in the core's
// own off-chip region, the parameters shared), the loss a mean over the whole batch so that the
// cores' gradients sum to the batch's, each core's labels its own constants block, and the
// partial gradients summed by a ring all-reduce over the interconnect
// (compiler/lowering/ring_allreduce.hpp). The optimizer's update (on the chip, its tiles spread
// over the cores, or on the host) then updates the one weight set every core reads.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "arch/hw_config.hpp"
#include "compiler/lowering/ring_allreduce.hpp"
#include "compiler/passes/training_step.hpp"
#include "npusim/compile_target.hpp"
#include "npusim/npusim.hpp"

namespace npusim {

struct TrainingParallelism {
  int cores = 1;        // the step's replicas, one per core
  std::string mode;     // "data" or "single core"
  std::string summary;  // why, for stats.json and the report
};

// From --parallel (auto or data) on `hw` at `batch`: data parallel over every core when the
// batch splits evenly over them; `data` refuses a batch that does not (UserError); `auto` keeps a
// step the cores cannot share evenly on one core, as before; tensor and pipeline are refused.
TrainingParallelism plan_training_parallelism(const HwConfig& hw, const std::string& parallel,
                                              int batch);

// `step` (built on one core's share, the first 1 / cores of the batch's labels, with the mean
// over the whole batch) as `cores` images, one per core: the labels layer holds every core's
// constants in turn (kPerImageConstants): `constants` is the whole batch's, -onehot(labels) or
// -targets.
void spread_step_over_cores(Graph& step, const TrainingStep& ts, int cores,
                            const std::vector<float>& constants);

// The ring all-reduce of every parameter gradient of the compiled data-parallel step, appended to
// its program; the reduced gradients are the outputs "<gradient>.allreduced".
AllReduceSummary add_gradient_allreduce(Compiled& c, const TrainingStep& ts);

// Always on: each reduced gradient equals, bit for bit, the ring's sum of the cores' simulated
// partial gradients (ring_sum_bf16). "" or the message of the first that does not.
std::string check_gradient_allreduce(const std::map<std::string, Tensor>& outputs,
                                     const TrainingStep& ts, int cores, uint64_t piece_bytes);

}  // namespace npusim
