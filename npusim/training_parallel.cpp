#include "npusim/training_parallel.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "arch/activation.hpp"
#include "support/error.hpp"

namespace npusim {

TrainingParallelism plan_training_parallelism(const HwConfig& hw, const std::string& parallel,
                                              int batch) {
  if (parallel != "auto" && parallel != "data") {
    throw UserError(fmt::format(
        "--parallel '{}': training runs data parallel (data, or auto: data parallel when the batch "
        "splits evenly over the cores); tensor and pipeline parallel training are not built",
        parallel));
  }
  TrainingParallelism p;
  if (hw.cores == 1) {
    p.mode = "single core";
    p.summary = "single core (a chip of one core)";
    return p;
  }
  if (batch % hw.cores != 0) {
    if (parallel == "data") {
      throw UserError(fmt::format(
          "--parallel data: --batch {} does not split evenly over the {} cores of '{}' (each core "
          "trains on batch / cores samples): use a multiple of {}",
          batch, hw.cores, hw.name, hw.cores));
    }
    p.mode = "single core";
    p.summary = fmt::format(
        "single core (auto: batch {} does not split evenly over {} cores; the step runs on core 0)",
        batch, hw.cores);
    return p;
  }
  p.cores = hw.cores;
  p.mode = "data";
  p.summary = fmt::format(
      "data parallel ({}): {} samples on each of {} cores, gradients summed by a ring all-reduce "
      "over the interconnect",
      parallel, batch / hw.cores, hw.cores);
  return p;
}

void spread_step_over_cores(Graph& step, const TrainingStep& ts, int cores,
                            const std::vector<float>& constants) {
  step.batch = cores;
  auto it = std::find_if(step.layers.begin(), step.layers.end(),
                         [&](const Layer& l) { return l.name == ts.labels_layer; });
  NPUSIM_CHECK(it != step.layers.end(), "training: no labels layer {}", ts.labels_layer);
  NPUSIM_CHECK(it->move_constants.size() * size_t(cores) == constants.size(),
               "training: {} constants for a labels layer of {} on {} cores", constants.size(),
               it->move_constants.size(), cores);
  it->move_op = kPerImageConstants;
  it->move_constants = constants;
}

AllReduceSummary add_gradient_allreduce(Compiled& c, const TrainingStep& ts) {
  std::vector<size_t> outputs;
  for (const ParameterGradient& pg : ts.parameters) {
    const auto& outs = c.program.outputs;
    const auto it = std::find_if(outs.begin(), outs.end(),
                                 [&](const TensorPlacement& t) { return t.name == pg.tensor; });
    NPUSIM_CHECK(it != outs.end(), "training: gradient {} is no output of the program", pg.tensor);
    outputs.push_back(size_t(it - outs.begin()));
  }
  AllReduceSummary s = append_ring_allreduce(c.program, c.hw, outputs);
  // The data-parallel merge counted each core's step as one image.
  c.program.parallel = fmt::format(
      "data parallel training step: one replica of the step on each of {} cores, each on its "
      "share of the batch, weights shared in off-chip memory and loaded by each core; the {} "
      "parameter gradients ({} bytes) summed by a ring all-reduce over the interconnect",
      c.program.cores, outputs.size(), s.tensor_bytes);
  return s;
}

std::string check_gradient_allreduce(const std::map<std::string, Tensor>& outputs,
                                     const TrainingStep& ts, int cores, uint64_t piece_bytes) {
  for (const ParameterGradient& pg : ts.parameters) {
    const std::vector<float>& partials = outputs.at(pg.tensor).values;
    const std::vector<float>& sum = outputs.at(pg.tensor + ".allreduced").values;
    NPUSIM_CHECK(partials.size() == sum.size() * size_t(cores),
                 "training: {} partial values of {} for {} cores of {}", partials.size(), pg.tensor,
                 cores, sum.size());
    std::vector<std::vector<uint16_t>> parts(static_cast<size_t>(cores));
    for (int c = 0; c < cores; ++c) {
      for (size_t i = 0; i < sum.size(); ++i)
        parts[size_t(c)].push_back(float_to_bf16_bits(partials[size_t(c) * sum.size() + i]));
    }
    const std::vector<uint16_t> want = ring_sum_bf16(parts, piece_bytes);
    for (size_t i = 0; i < sum.size(); ++i) {
      if (float_to_bf16_bits(sum[i]) != want[i]) {
        return fmt::format(
            "FUNCTIONAL MISMATCH in the all-reduce of {}: element {} is {}, the ring's sum of the "
            "cores' partial gradients {}. This is a bug in npusim.",
            pg.tensor, i, sum[i], bf16_bits_to_float(want[i]));
      }
    }
  }
  return "";
}

}  // namespace npusim
