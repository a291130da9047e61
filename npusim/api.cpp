// The library API (npusim/npusim.hpp): run, compile, validate, presets, zoo.
#include <fmt/format.h>

#include <memory>

#include "compiler/frontend/workload.hpp"
#include "compiler/reference/reference_bf16.hpp"
#include "npusim/compile_target.hpp"
#include "npusim/npusim.hpp"
#include "npusim/power_stats.hpp"
#include "npusim/preset_listing.hpp"
#include "npusim/run_traces.hpp"
#include "npusim/simulate.hpp"
#include "npusim/tensor_io.hpp"
#include "support/embedded_files.hpp"
#include "support/error.hpp"
#include "support/presets.hpp"
#include "support/text_escape.hpp"

namespace npusim {

namespace {

systolic::Fidelity checked_fidelity(const std::string& text) {
  if (text == "fast") return systolic::Fidelity::kFast;
  if (text == "pe") return systolic::Fidelity::kPe;
  throw UserError(fmt::format("--fidelity '{}': expected fast or pe", text));
}

// The float32 reference's outputs (run_reference_f32).
std::vector<Tensor> float_outputs(const Compiled& c) {
  std::map<std::string, std::vector<float>> t = run_reference_f32(c.graph, c.input_real);
  std::vector<Tensor> out;
  for (const std::string& name : c.graph.outputs) {
    out.push_back(real_tensor(c.graph, name, c.graph.shape_of(name).dims, c.graph.batch,
                              std::move(t.at(name))));
  }
  return out;
}

}  // namespace

RunResult run(const RunOptions& o) {
  const systolic::Fidelity fidelity = checked_fidelity(o.fidelity);
  if (!o.values && o.intermediates) {
    throw UserError("npusim run: --save-intermediates needs the values: drop --values off");
  }
  Compiled c = load_and_compile(o, o.float_outputs, o.values);
  RunDescription run{c.hw.name, c.graph.name, o.fidelity, o.seed, o.values};
  run.calibration = c.calibration;
  run.calibration_samples = c.calibration_samples;
  run.prune = c.prune;
  run.weight_dtype = c.weight_dtype;
  run.weight_sparsity = c.weight_sparsity;
  if (c.graph.dtype == DataType::kInt8) {
    run.calibration_method = to_string(c.calibration_options.method);
    if (c.calibration_options.method == CalibrationMethod::kPercentile) {
      run.calibration_percentile = c.calibration_options.percentile;
    }
  }
  std::unique_ptr<timeline::Timeline> timeline;
  if (o.record_trace) timeline = make_timeline(o.trace_filter, c.hw, c.program);
  SimulationResult r =
      simulate(c.hw, c.program, c.graph, c.input, fidelity, run, o.intermediates,
               {timeline.get(), o.vcd_path}, c.reference.empty() ? nullptr : &c.reference);
  RunResult result;
  result.stats = std::move(r.stats);
  result.hardware = to_json(c.hw);
  result.wall_seconds = r.wall_seconds;
  for (const auto& d : r.descriptors) result.descriptors.push_back({d.path, d.unit, d.description});
  if (o.values) {
    for (size_t i = 0; i < c.program.outputs.size(); ++i) {
      const auto& out = c.program.outputs[i];
      result.outputs.push_back(stored_tensor(c.graph, out.name, out.dims, out.batch, out.scale,
                                             out.element_bytes, r.outputs[i]));
    }
  }
  for (size_t i = 0; i < r.tensors.size(); ++i) {
    const auto& t = c.program.tensors[i];
    result.intermediates.push_back(
        stored_tensor(c.graph, t.name, t.dims, t.batch, t.scale, t.element_bytes, r.tensors[i]));
  }
  std::vector<Tensor*> saved;  // --save-outputs: the outputs and intermediates share a directory
  for (Tensor& t : result.outputs) saved.push_back(&t);
  for (Tensor& t : result.intermediates) saved.push_back(&t);
  result.renamed_files = assign_file_names(saved);
  if (o.float_outputs) {
    result.float_outputs = float_outputs(c);
    std::vector<Tensor*> floats;
    for (Tensor& t : result.float_outputs) floats.push_back(&t);
    result.renamed_float_files = assign_file_names(floats);
  }
  result.vcd_error = r.vcd_error;
  if (r.check.checked && !r.check.within_tolerance) {
    result.mismatch = fmt::format(
        "FUNCTIONAL MISMATCH from layer {} on: {} of {} values of {} tensors are outside their "
        "layer's bound (max abs error against the whole-graph reference {:g}, relative {:.3g}). "
        "This is a bug in npusim.",
        printable_text(r.check.first_mismatch), r.check.bound_exceeded, r.check.compared,
        r.check.tensors, r.check.max_abs_error, r.check.max_relative_error);
  }
  if (timeline) {
    auto recording = std::make_shared<RunRecording>();
    recording->hw = std::move(c.hw);
    recording->program = std::move(c.program);
    recording->timeline = std::move(timeline);
    result.recording = std::move(recording);
  }
  return result;
}

std::string RunResult::report(bool per_layer) const { return text_report(stats, per_layer); }

std::string RunResult::layers_csv() const { return npusim::layers_csv(stats); }

void RunResult::write_trace_json(const std::string& path) const {
  if (!recording) throw UserError(fmt::format("trace '{}': the run recorded no trace", path));
  write_atomically("--trace", path, trace_json_text(*recording, stats));
}

void RunResult::write_html(const std::string& path) const {
  if (!recording) throw UserError(fmt::format("html '{}': the run recorded no trace", path));
  write_atomically("--html", path, html_report_text(*recording, stats));
}

std::string compile(const Target& target) { return to_assembly(load_and_compile(target).program); }

Validation validate(const Target& target) {
  Validation v;
  v.hw_name = target_hardware(target).name;
  if (target.workload.empty()) return v;
  // What a run with the default seed and a generated input would compile.
  Target t;
  t.hw = target.hw;
  t.hw_description = target.hw_description;
  t.workload = target.workload;
  t.batch = target.batch;
  const Compiled c = load_and_compile(t);
  v.has_workload = true;
  v.network = c.graph.name;
  v.layers = c.graph.layers.size();
  v.macs = c.graph.total_macs();
  v.batch = c.graph.batch;
  v.instructions = c.program.instructions.size();
  return v;
}

std::vector<PresetInfo> presets() {
  std::vector<PresetInfo> out;
  for (const auto& name : preset_names("hw")) {
    const HwConfig hw = load_hw_config(name);
    PresetInfo p;
    p.name = name;
    p.headline = preset_headline(hw);
    p.description = hw.description;
    for (const PresetFact& f : preset_facts(hw)) p.facts.emplace_back(f.label, f.value);
    p.listing = format_preset_entry(name, hw);
    out.push_back(std::move(p));
  }
  return out;
}

nlohmann::json resolved_hardware(const std::string& hw) { return to_json(load_hw_config(hw)); }

std::vector<ZooEntry> zoo() {
  std::vector<ZooEntry> out;
  for (const auto& name : embedded_file_names("zoo")) {
    const Graph g = load_workload(name, std::nullopt);
    out.push_back({name, g.description, g.batch, g.layers.size(), g.total_macs()});
  }
  return out;
}

}  // namespace npusim
