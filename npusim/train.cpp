// npusim train (npusim/npusim.hpp, docs/training.md): the forward graph differentiated into one
// training-step graph (compiler/passes/training_step), compiled once with the weights and labels
// as run-time inputs (npusim/training_program.hpp), then simulated every step with values and
// checked like any run; the simulated gradients update the fp32 master weights on the host
// (npusim/training_state.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>

#include "compiler/frontend/workload.hpp"
#include "compiler/passes/training_step.hpp"
#include "npusim/compile_target.hpp"
#include "npusim/npusim.hpp"
#include "npusim/run_traces.hpp"
#include "npusim/simulate.hpp"
#include "npusim/tensor_io.hpp"
#include "npusim/training_parallel.hpp"
#include "npusim/training_program.hpp"
#include "npusim/training_state.hpp"
#include "support/error.hpp"

namespace npusim {

namespace {

struct Batch {
  std::vector<float> x;  // real values, bf16-representable
  std::vector<uint8_t> bytes;
  std::vector<int> y;
  std::vector<float> targets;  // regression
};

Batch gather(const DataSet& d, const std::vector<size_t>& idx) {
  Batch b;
  const uint64_t n = d.sample_elements;
  for (size_t i : idx) {
    for (uint64_t e = 0; e < n; ++e) b.x.push_back(round_to_bf16(d.x[i * n + e]));
    if (d.target_elements == 0) b.y.push_back(d.y[i]);
    const uint64_t t = d.target_elements;
    b.targets.insert(b.targets.end(), d.targets.begin() + ptrdiff_t(i * t),
                     d.targets.begin() + ptrdiff_t((i + 1) * t));
  }
  b.bytes.resize(b.x.size() * 2);
  for (size_t i = 0; i < b.x.size(); ++i) {
    const uint16_t v = float_to_bf16_bits(b.x[i]);
    b.bytes[2 * i] = uint8_t(v & 0xFF);
    b.bytes[2 * i + 1] = uint8_t(v >> 8);
  }
  return b;
}

struct Simulated {
  nlohmann::json stats;
  std::map<std::string, Tensor> outputs;
  std::vector<std::vector<uint8_t>> raw;  // every output's stored bytes
  std::string mismatch;
  uint64_t dram_bytes = 0;  // the program's off-chip address space
};

// --values off: the labels of a timing-only step (sample i has class i mod classes; no value
// depends on them; regression: zero targets of target_elements each) and no samples.
Batch timing_batch(int batch, int classes, uint64_t target_elements) {
  Batch b;
  for (int i = 0; i < batch; ++i) b.y.push_back(i % classes);
  b.targets.assign(uint64_t(batch) * target_elements, 0.0f);  // regression: zero targets
  return b;
}

// The graph compiled once for bf16 values (or for timing only, o.values false: the weights stay
// undrawn); `b` stands for the run-time batch. `parallel`: overrides --parallel ("" keeps it).
Compiled compile_for_training(const HwConfig& hw, Graph g, const Batch& b, const TrainOptions& o,
                              const std::string& parallel = "") {
  Target t = o;
  t.dtype = "bf16";
  t.batch.reset();
  if (!parallel.empty()) t.parallel = parallel;
  return compile_graph(hw, std::move(g), b.bytes, b.x, t, o.values);
}

// `decoded`: the outputs decoded into `outputs` (the first ones; the optimizer's regions after
// them stay bytes).
Simulated run_program(const Compiled& c, const Batch& b, const TrainOptions& o,
                      systolic::Fidelity fidelity, size_t decoded = SIZE_MAX,
                      timeline::Timeline* timeline = nullptr) {
  const std::string& name = c.graph.name;
  RunDescription run{c.hw.name, name, o.fidelity, o.seed, o.values};
  // Timing only: the input's bytes are not read.
  const std::vector<uint8_t> none(o.values ? 0 : c.program.input.bytes(), 0);
  Recording recording;
  recording.timeline = timeline;
  SimulationResult r = simulate(c.hw, c.program, c.graph, o.values ? b.bytes : none, fidelity, run,
                                false, recording);
  Simulated s;
  s.stats = std::move(r.stats);
  s.dram_bytes = c.program.dram_bytes;
  if (!o.values) return s;
  s.raw = std::move(r.outputs);
  r.outputs.assign(s.raw.begin(), s.raw.begin() + ptrdiff_t(std::min(decoded, s.raw.size())));
  s.outputs = program_outputs(c.graph, c.program, r);
  s.mismatch = functional_mismatch(r, name);
  return s;
}

// Weights and biases of the dense and convolution layers of `g`, and the layer norms' gamma and
// beta (as initial_parameters draws).
uint64_t count_parameters(const Graph& g) {
  uint64_t n = 0;
  for (const Layer& l : g.layers) {
    if (l.has_weights()) n += l.reduction() * uint64_t(l.filters) + (l.use_bias ? l.filters : 0);
    if (l.kind == OpKind::kLayerNorm) n += 2 * uint64_t(l.out_shape.last());
  }
  return n;
}

// Mean softmax cross-entropy of logits [batch, classes] against the labels, in double.
double cross_entropy(const std::vector<float>& logits, const std::vector<int>& y, int classes) {
  double sum = 0.0;
  for (size_t i = 0; i < y.size(); ++i) {
    const float* z = logits.data() + i * size_t(classes);
    double m = -std::numeric_limits<double>::infinity();
    for (int c = 0; c < classes; ++c) m = std::max(m, double(z[c]));
    double e = 0.0;
    for (int c = 0; c < classes; ++c) e += std::exp(double(z[c]) - m);
    sum += m + std::log(e) - double(z[y[i]]);
  }
  return sum / double(y.size());
}

// Mean squared error of the predictions against the targets, over every element, in double.
double mean_squared_error(const std::vector<float>& y, const std::vector<float>& targets) {
  NPUSIM_CHECK(y.size() == targets.size() && !y.empty(), "training: {} outputs for {} targets",
               y.size(), targets.size());
  double sum = 0.0;
  for (size_t i = 0; i < y.size(); ++i) {
    const double d = double(y[i]) - double(targets[i]);
    sum += d * d;
  }
  return sum / double(y.size());
}

// A step's phases from its layers (stats.json "layers"): the forward layers end at forward_end,
// the rest of the step's own layers (loss gradient, backward) at backward_end, the all-reduce's
// ("allreduce <gradient>") at communication_end (backward_end without them, `total` without the
// optimizer's), then the optimizer's ("optimizer <parameter>") to the end. energy_j: the layers'
// energy by phase (forward, backward, communication, optimizer).
struct StepPhases {
  double forward_end = 0, backward_end = 0, communication_end = 0;
  double energy_j[4] = {0, 0, 0, 0};
};
StepPhases step_phases(const nlohmann::json& stats, const std::set<std::string>& forward,
                       double total) {
  StepPhases p;
  bool optimizer = false;
  double before_optimizer = 0;
  for (const auto& l : stats.at("layers")) {
    const std::string name = l.at("name").get<std::string>();
    const double end = l.at("end_cycle").get<double>();
    const double energy = l.contains("energy_j") ? l.at("energy_j").get<double>() : 0.0;
    const bool reduce = name.rfind("allreduce ", 0) == 0;
    const bool update = name.rfind("optimizer ", 0) == 0;
    optimizer = optimizer || update;
    if (!update) before_optimizer = std::max(before_optimizer, end);
    if (forward.count(name)) p.forward_end = std::max(p.forward_end, end);
    if (!reduce && !update) p.backward_end = std::max(p.backward_end, end);
    p.energy_j[forward.count(name) ? 0 : reduce ? 2 : update ? 3 : 1] += energy;
  }
  p.communication_end = optimizer ? before_optimizer : total;
  return p;
}

double stat_or_zero(const nlohmann::json& j, const char* a, const char* b = nullptr) {
  if (!j.contains(a)) return 0.0;
  const nlohmann::json& x = j.at(a);
  if (b == nullptr) return x.is_number() ? x.get<double>() : 0.0;
  return x.contains(b) && x.at(b).is_number() ? x.at(b).get<double>() : 0.0;
}

systolic::Fidelity checked_fidelity(const std::string& text) {
  if (text == "fast") return systolic::Fidelity::kFast;
  if (text == "pe") return systolic::Fidelity::kPe;
  throw UserError(fmt::format("--fidelity '{}': expected fast or pe", text));
}

void check_options(const TrainOptions& o) {
  if (o.dtype == "int8") {
    throw UserError(
        "--dtype int8: training runs bf16 matrix inputs with fp32 accumulation and fp32 master "
        "weights (docs/training.md); int8 training is not supported");
  }
  if (!o.dtype.empty() && o.dtype != "bf16") {
    throw UserError(fmt::format("--dtype '{}': training takes bf16", o.dtype));
  }
  if (!o.values) {
    // Timing only: no sample is read, no weight drawn, nothing updated.
    for (const auto& [set, flag] :
         {std::pair{!o.data.empty(), "--data"},
          std::pair{!o.save_weights.empty(), "--save-weights"},
          std::pair{o.eval_every > 0, "--eval-every"}, std::pair{o.shuffle, "--shuffle"}}) {
      if (set) {
        throw UserError(fmt::format(
            "{} needs the values: --values off times the step only (no data, weights or loss)",
            flag));
      }
    }
  }
  if (o.steps < 1 || o.steps > 1000000) {
    throw UserError(fmt::format("--steps {}: expected 1 to 1000000", o.steps));
  }
  if (o.optimizer != "sgd" && o.optimizer != "momentum" && o.optimizer != "adam") {
    throw UserError(fmt::format("--optimizer '{}': expected sgd, momentum or adam", o.optimizer));
  }
  if (!(o.lr > 0.0) || !std::isfinite(o.lr)) {
    throw UserError(fmt::format("--lr {}: expected a positive learning rate", o.lr));
  }
  if (o.optimizer_on != "chip" && o.optimizer_on != "host") {
    throw UserError(fmt::format("--optimizer-on '{}': expected chip or host", o.optimizer_on));
  }
  if (o.eval_every < 0)
    throw UserError(fmt::format("--eval-every {}: expected >= 0", o.eval_every));
  if (o.batch && (*o.batch < 1 || *o.batch > 65536)) {
    throw UserError(fmt::format("--batch {}: expected 1 to 65536", *o.batch));
  }
}

// Held-out accuracy: the forward graph on the whole held-out set, compiled at the first
// evaluation, simulated with the current weights.
class HeldOut {
 public:
  HeldOut(const HwConfig& hw, const Graph& fwd, const DataSet& held)
      : hw_(hw), fwd_(fwd), held_(held) {}

  double accuracy(const Parameters& p, const TrainOptions& o, systolic::Fidelity fidelity,
                  std::string& mismatch) {
    if (!program_) {
      std::vector<size_t> all(held_.size());
      for (size_t i = 0; i < all.size(); ++i) all[i] = i;
      batch_ = gather(held_, all);
      Graph g = fwd_;
      set_layer_weights(g, p);
      g.batch = int(held_.size());
      std::vector<WeightUse> uses;
      for (const Layer& l : fwd_.layers) {
        if (l.has_weights() || l.kind == OpKind::kLayerNorm) {
          uses.push_back({l.name, l.name, false});
        }
      }
      program_.emplace(compile_for_training(hw_, std::move(g), batch_, o), std::move(uses), p);
    }
    program_->write_parameters(p);
    Simulated s = run_program(program_->compiled(), batch_, o, fidelity);
    if (mismatch.empty()) mismatch = s.mismatch;
    const Tensor& probs = s.outputs.at(fwd_.outputs[0]);
    const size_t classes = probs.values.size() / held_.size();
    size_t right = 0;
    for (size_t i = 0; i < held_.size(); ++i) {
      const float* v = probs.values.data() + i * classes;
      right += size_t(std::max_element(v, v + classes) - v) == size_t(held_.y[i]) ? 1 : 0;
    }
    return double(right) / double(held_.size());
  }

 private:
  const HwConfig& hw_;
  const Graph& fwd_;
  const DataSet& held_;
  Batch batch_;
  std::optional<TrainingProgram> program_;
};

}  // namespace

TrainResult train(const TrainOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  check_options(o);
  const systolic::Fidelity fidelity = checked_fidelity(o.fidelity);
  const HwConfig hw = target_hardware(o);
  const std::string origin = fmt::format("--workload '{}'", o.workload);
  Graph fwd = load_workload(o.workload, std::nullopt);
  split_fused_activations(fwd);
  const TrainingLoss loss_kind = training_loss(fwd, o.loss, origin);
  const bool mse = loss_kind == TrainingLoss::kMeanSquaredError;
  check_trainable(fwd, origin, loss_kind);
  const int batch = o.batch.value_or(32);
  const TrainingParallelism parallel = plan_training_parallelism(hw, o.parallel, batch);
  const int cores = parallel.cores;
  const int classes = fwd.layers.back().out_shape.last();
  const uint64_t sample = fwd.input_shape.elements();
  const uint64_t outputs = fwd.layers.back().out_shape.elements();

  DataSet data, held;
  const uint64_t random_samples = uint64_t(std::max(batch, 256));
  if (!o.values) {
  } else if (o.data.empty()) {
    data = mse ? random_regression_set(random_samples, sample, outputs, o.seed)
               : random_data_set(random_samples, sample, classes, o.seed);
  } else if (mse) {
    data = read_regression_set("--data", o.data, sample, outputs);
  } else {
    data = read_data_set("--data", o.data, sample, classes);
    if (std::filesystem::is_directory(o.data + "/heldout")) {
      held = read_data_set("--data", o.data + "/heldout", sample, classes);
    }
  }

  Parameters params;
  if (o.values) params = initial_parameters(fwd, o.seed);
  if (!o.save_weights.empty())
    save_parameters("--save-weights", o.save_weights + "/initial", params);
  Optimizer opt(o.optimizer, float(o.lr));
  BatchOrder order(data.size(), o.shuffle, o.seed);

  TrainResult result;
  nlohmann::json steps = nlohmann::json::array(), heldout = nlohmann::json::array();
  const bool chip_optimizer = o.optimizer_on == "chip";
  double cycles_sum = 0, fwd_sum = 0, bwd_sum = 0, comm_sum = 0, opt_sum = 0, energy_sum = 0;
  double phase_energy_sum[4] = {0, 0, 0, 0};  // forward, backward, communication, optimizer
  OptimizerPlan optimizer_plan;
  AllReduceSummary allreduce;
  uint64_t peak_program_dram = 0;
  double clock_mhz = 0;
  // The step compiled once, on the first batch; each step writes its weights and labels.
  std::optional<TrainingProgram> program;
  std::optional<Compiled> timing;  // --values off: the step without parameter segments to write
  TrainingStep ts;
  // The labels layer's constants (training_step.hpp): -onehot(labels) or -targets.
  auto loss_constants = [&](const Batch& b) {
    return mse ? minus_targets(b.targets) : minus_onehot(b.y, classes);
  };
  HeldOut evaluation(hw, fwd, held);
  for (int step = 1; step <= o.steps; ++step) {
    const Batch b = o.values ? gather(data, order.next(batch))
                             : timing_batch(batch, classes, mse ? outputs : 0);
    if (!program && !timing) {
      Graph g = fwd;
      if (o.values) set_layer_weights(g, params);
      // Each core's step: its share of the batch, the loss a mean over the whole batch.
      const int share = batch / cores;
      try {
        ts = mse ? build_regression_step(
                       g, share,
                       std::vector<float>(b.targets.begin(),
                                          b.targets.begin() + ptrdiff_t(uint64_t(share) * outputs)),
                       batch)
                 : build_training_step(g, share, std::vector<int>(b.y.begin(), b.y.begin() + share),
                                       batch);
      } catch (const UserError& e) {
        throw UserError(fmt::format("{}: {}", origin, e.what()));
      }
      Graph step_graph = std::move(ts.graph);
      ts.graph = {};
      if (cores > 1) {
        spread_step_over_cores(step_graph, ts, cores, loss_constants(b));
        Compiled c = compile_for_training(hw, std::move(step_graph), b, o, "data");
        NPUSIM_CHECK(c.program.cores == cores, "training: the step compiled for {} cores of {}",
                     c.program.cores, cores);
        allreduce = add_gradient_allreduce(c, ts);
        if (o.values) {
          program.emplace(std::move(c), ts.weight_uses, params, ts.labels_layer);
        } else {
          timing.emplace(std::move(c));
        }
      } else if (o.values) {
        program.emplace(compile_for_training(hw, std::move(step_graph), b, o), ts.weight_uses,
                        params, ts.labels_layer);
      } else {
        timing.emplace(compile_for_training(hw, std::move(step_graph), b, o));
      }
      // The optimizer's update after the backward pass (and the all-reduce), reading the reduced
      // gradients on several cores.
      const std::string suffix = cores > 1 ? ".allreduced" : "";
      if (chip_optimizer && program) {
        program->add_chip_optimizer(hw, ts.parameters, suffix, fwd, opt.constants(), params);
        optimizer_plan = program->optimizer_plan();
      } else if (chip_optimizer) {
        optimizer_plan = append_optimizer_update(
            timing->program, hw,
            optimizer_parameters(*timing, ts.weight_uses, ts.parameters, suffix, fwd),
            opt.constants(), false);
      }
    }
    if (o.values) {
      program->write_parameters(params);
      program->write_constants(loss_constants(b));
      if (chip_optimizer && opt.state_per_parameter() == 2) {
        const auto [c1, c2] = Optimizer::bias_corrections(step);
        program->write_optimizer_scalars(c1, c2);
      }
    }
    const Compiled& compiled = o.values ? program->compiled() : *timing;
    const size_t decoded = chip_optimizer && o.values
                               ? compiled.program.outputs.size() - optimizer_plan.written.size()
                               : SIZE_MAX;
    // --trace-json: the first step's timeline.
    std::unique_ptr<timeline::Timeline> trace;
    if (o.record_trace && step == 1) trace = make_timeline(o.trace_filter, hw, compiled.program);
    Simulated s = run_program(compiled, b, o, fidelity, decoded, trace.get());
    std::optional<double> loss;
    if (o.values) {
      if (result.mismatch.empty()) result.mismatch = s.mismatch;
      if (cores > 1 && result.mismatch.empty()) {
        result.mismatch = check_gradient_allreduce(s.outputs, ts, cores, allreduce_piece_bytes(hw));
      }
      const std::vector<float>& predicted = s.outputs.at(ts.logits).values;
      loss =
          mse ? mean_squared_error(predicted, b.targets) : cross_entropy(predicted, b.y, classes);
      Parameters grads;
      for (const ParameterGradient& pg : ts.parameters) {
        const std::string& tensor = cores > 1 ? pg.tensor + ".allreduced" : pg.tensor;
        grads[pg.layer] = split_gradient(pg, s.outputs.at(tensor).values, params.at(pg.layer));
      }
      // The host's fp32 update: the optimizer itself (--optimizer-on host), or the reference the
      // chip's update must equal bit for bit.
      opt.step(params, grads);
      if (chip_optimizer) {
        const std::string m = program->finish_chip_step(s.raw, params);
        if (result.mismatch.empty()) result.mismatch = m;
      }
    }

    const double total = stat_or_zero(s.stats, "total_cycles");
    // Phases: the forward layers, then the loss gradient and backward rules, then the
    // all-reduce's layers (which start when every core's backward has ended), then the
    // optimizer's (which start when the all-reduce has ended).
    const StepPhases ph = step_phases(s.stats, ts.forward_layers, total);
    const double forward_end = ph.forward_end, backward_end = ph.backward_end;
    const double communication = ph.communication_end - backward_end;
    const double optimizer = total - ph.communication_end;
    for (int i = 0; i < 4; ++i) phase_energy_sum[i] += ph.energy_j[i];
    if (trace) {
      traces::RunInfo info = trace_run_info(hw, compiled.program, s.stats);
      const auto at = [](double c) { return uint64_t(std::llround(c)); };
      const std::pair<const char*, double> spans[] = {{"forward", forward_end},
                                                      {"backward", backward_end},
                                                      {"all-reduce", ph.communication_end},
                                                      {"optimizer", total}};
      double from = 0;
      for (const auto& [name, end] : spans) {
        if (end > from) info.phases.push_back({name, at(from), at(end)});
        from = std::max(from, end);
      }
      result.trace_json = traces::chrome_trace_json(*trace, compiled.program, info);
    }
    const double energy = stat_or_zero(s.stats.at("energy"), "total_j");
    clock_mhz = stat_or_zero(s.stats, "clock_mhz");
    cycles_sum += total;
    fwd_sum += forward_end;
    bwd_sum += backward_end - forward_end;
    comm_sum += communication;
    opt_sum += optimizer;
    energy_sum += energy;
    peak_program_dram = std::max(peak_program_dram, s.dram_bytes);
    nlohmann::json record = {{"step", step},
                             {"cycles", total},
                             {"forward_cycles", forward_end},
                             {"backward_cycles", backward_end - forward_end},
                             {"communication_cycles", communication},
                             {"optimizer_cycles", optimizer},
                             {"energy_j", energy}};
    if (loss) {
      result.loss.push_back(*loss);
      record["loss"] = *loss;
    }
    steps.push_back(std::move(record));
    if (step == 1) result.stats["first_step"] = std::move(s.stats);
    if (held.size() > 0 && ((o.eval_every > 0 && step % o.eval_every == 0) || step == o.steps)) {
      const double acc = evaluation.accuracy(params, o, fidelity, result.mismatch);
      heldout.push_back({{"step", step}, {"accuracy", acc}});
    }
  }
  if (!o.save_weights.empty()) save_parameters("--save-weights", o.save_weights + "/final", params);

  uint64_t parameter_count = count_parameters(fwd);
  if (o.values) {
    uint64_t drawn = 0;
    for (const auto& [name, lp] : params) drawn += lp.weight.size() + lp.bias.size();
    NPUSIM_CHECK(drawn == parameter_count, "training: {} parameters drawn, the graph has {}", drawn,
                 parameter_count);
  }
  const double n = double(o.steps);
  const double step_cycles = cycles_sum / n;
  const double step_s = clock_mhz > 0 ? step_cycles / (clock_mhz * 1e6) : 0.0;
  nlohmann::json& t = result.stats["training"];
  t["workload"] = fwd.name;
  t["hardware"] = hw.name;
  t["dtype"] = "bf16";
  t["loss_function"] = to_string(loss_kind);
  t["batch"] = batch;
  t["parallel"] = parallel.mode;
  t["cores"] = cores;
  t["samples_per_core"] = batch / cores;
  t["parallel_summary"] = parallel.summary;
  if (cores > 1) {
    t["allreduce"] = {{"gradient_bytes", allreduce.tensor_bytes},
                      {"link_bytes", allreduce.link_bytes},
                      {"max_core_link_bytes", allreduce.max_core_link_bytes},
                      {"dram_read_bytes", allreduce.dram_read_bytes},
                      {"dram_write_bytes", allreduce.dram_write_bytes},
                      {"piece_bytes", allreduce_piece_bytes(hw)}};
  }
  t["steps"] = o.steps;
  t["optimizer"] = o.optimizer;
  t["lr"] = o.lr;
  t["values"] = o.values ? "on" : "off";
  t["data"] = !o.values ? "none (timing only)" : o.data.empty() ? "random" : o.data;
  t["shuffle"] = o.shuffle;
  if (o.values) {  // timing only: no loss, no held-out accuracy (the keys are absent)
    t["loss"] = result.loss;
    t["heldout"] = heldout;
  }
  t["step_cycles"] = step_cycles;
  t["forward_cycles"] = fwd_sum / n;
  t["backward_cycles"] = bwd_sum / n;
  t["communication_cycles"] = comm_sum / n;
  t["optimizer_cycles"] = opt_sum / n;
  t["optimizer_on"] = o.optimizer_on;
  t["phase_energy_j"] = {{"forward", phase_energy_sum[0] / n},
                         {"backward", phase_energy_sum[1] / n},
                         {"communication", phase_energy_sum[2] / n},
                         {"optimizer", phase_energy_sum[3] / n}};
  if (chip_optimizer) {
    t["optimizer_update"] = {{"dram_read_bytes", optimizer_plan.dram_read_bytes},
                             {"dram_write_bytes", optimizer_plan.dram_write_bytes},
                             {"master_bytes", optimizer_plan.master_bytes},
                             {"state_bytes", optimizer_plan.state_bytes}};
  }
  t["step_s"] = step_s;
  t["samples_per_s"] = step_s > 0 ? double(batch) / step_s : 0.0;
  t["energy_per_step_j"] = energy_sum / n;
  t["energy_per_sample_j"] = energy_sum / n / double(batch);
  t["parameters"] = parameter_count;
  const uint64_t state = 4 * parameter_count * uint64_t(opt.state_per_parameter());
  // The masters and state the chip's update keeps in the program's memory are counted above.
  const uint64_t program_bytes =
      chip_optimizer ? optimizer_plan.program_dram_bytes : peak_program_dram;
  t["offchip"] = {{"master_weight_bytes", 4 * parameter_count},
                  {"optimizer_state_bytes", state},
                  {"step_program_bytes", program_bytes},
                  {"peak_bytes", 4 * parameter_count + state + program_bytes}};
  result.stats["steps"] = std::move(steps);
  result.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

std::string TrainResult::report() const {
  const nlohmann::json& t = stats.at("training");
  std::string r = fmt::format(
      "npusim train: {} on {}, batch {}, {} steps of {} (lr {:g}), bf16 with fp32 master "
      "weights\n",
      t.at("workload").get<std::string>(), t.at("hardware").get<std::string>(),
      t.at("batch").get<int>(), t.at("steps").get<int>(), t.at("optimizer").get<std::string>(),
      t.at("lr").get<double>());
  if (t.value("values", "on") == "off") {
    r += "  values off: timing only (no loss, no weights updated, nothing checked)\n";
  } else if (t.value("loss_function", "xent") == "mse") {
    const auto& losses = t.at("loss");
    r += fmt::format("  loss (mean squared error): first step {:.6g}, last step {:.6g}\n",
                     losses.front().get<double>(), losses.back().get<double>());
  } else {
    const auto& losses = t.at("loss");
    r += fmt::format("  loss: first step {:.4f}, last step {:.4f}\n", losses.front().get<double>(),
                     losses.back().get<double>());
  }
  for (const auto& h : t.value("heldout", nlohmann::json::array())) {
    r += fmt::format("  held-out accuracy after step {}: {:.1f} %\n", h.at("step").get<int>(),
                     100.0 * h.at("accuracy").get<double>());
  }
  const bool several = t.value("cores", 1) > 1;
  if (several) r += fmt::format("  parallel: {}\n", t.at("parallel_summary").get<std::string>());
  const std::string communication =
      several ? fmt::format(", all-reduce {:.0f}", t.at("communication_cycles").get<double>()) : "";
  const std::string optimizer =
      t.value("optimizer_on", "host") == "chip"
          ? fmt::format("optimizer {:.0f}", t.at("optimizer_cycles").get<double>())
          : std::string("optimizer on the host");
  r += fmt::format(
      "  step: {:.0f} cycles (forward {:.0f}, backward {:.0f}{}; {}), {:.0f} samples/s\n",
      t.at("step_cycles").get<double>(), t.at("forward_cycles").get<double>(),
      t.at("backward_cycles").get<double>(), communication, optimizer,
      t.at("samples_per_s").get<double>());
  r += fmt::format("  energy: {:.3g} J per step, {:.3g} J per sample\n",
                   t.at("energy_per_step_j").get<double>(),
                   t.at("energy_per_sample_j").get<double>());
  r += fmt::format("  off-chip memory: {} bytes at peak ({} parameters)\n",
                   t.at("offchip").at("peak_bytes").get<uint64_t>(),
                   t.at("parameters").get<uint64_t>());
  return r;
}

}  // namespace npusim
