#include "sim/cli.hpp"

#include <fmt/format.h>

#include <boost/program_options.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "arch/hw_config.hpp"
#include "compiler/frontend/workload.hpp"
#include "compiler/ir/graph.hpp"
#include "compiler/lowering/data_parallel.hpp"
#include "compiler/lowering/lowering.hpp"
#include "compiler/passes/fusion.hpp"
#include "compiler/passes/parameters.hpp"
#include "compiler/passes/quantize.hpp"
#include "compiler/reference/reference_bf16.hpp"
#include "models/soc.hpp"
#include "sim/calibration.hpp"
#include "sim/command_line.hpp"
#include "sim/host_ops.hpp"
#include "sim/membench_command.hpp"
#include "sim/output_attempts.hpp"
#include "sim/power_stats.hpp"
#include "sim/preset_listing.hpp"
#include "sim/simulate.hpp"
#include "sim/tensor_io.hpp"
#include "sim/token_ids.hpp"
#include "sim/trace_outputs.hpp"
#include "support/embedded_files.hpp"
#include "support/error.hpp"
#include "support/json_reader.hpp"
#include "support/presets.hpp"
#include "support/text_escape.hpp"

#ifdef NPUSIM_HAVE_SCALESIM
#include "compat/scalesim/scalesim_cli.hpp"
#endif

namespace po = boost::program_options;

namespace npusim {

namespace {

constexpr const char* kUsage = R"(npusim - a cycle-accurate TPU/NPU simulator

usage: npusim <command> [options]      (npusim <command> --help for its options)

commands:
  run        compile a network for a hardware description and simulate it
  compile    print the instruction stream as readable assembly
  validate   check a hardware description (and a workload) without simulating
  presets    list the built-in hardware presets (--show NAME prints one as JSON)
  zoo        list the built-in networks
  scalesim   run a SCALE-Sim v2 config and topology, writing SCALE-Sim's reports
  membench   drive the off-chip memory model alone with a traffic pattern

exit codes: 0 success, 2 bad input or usage, 1 internal error
)";

systolic::Fidelity parse_fidelity(const std::string& text) {
  if (text == "fast") return systolic::Fidelity::kFast;
  if (text == "pe") return systolic::Fidelity::kPe;
  throw UsageError(fmt::format("--fidelity '{}': expected fast or pe", text));
}

std::optional<int> batch_option(const po::variables_map& vm) {
  if (!vm.count("batch")) return std::nullopt;
  int b = vm["batch"].as<int>();
  if (b < 1 || b > 65536) throw UsageError(fmt::format("--batch {}: expected 1 to 65536", b));
  return b;
}

// Loads, checks, quantizes (calibrating on the run's input or on a --calibration batch) and
// compiles; a network that does not fit is a user-facing error.
struct Compiled {
  HwConfig hw;
  Graph graph;
  Program program;
  std::vector<uint8_t> input;        // stored bytes of the input batch (int8 or bf16)
  std::vector<float> input_real;     // its real values, channels last (the float32 reference's)
  std::string calibration = "none";  // what int8 scales were calibrated on (stats.json)
  int calibration_samples = 0;
  CalibrationOptions calibration_options;
  // int8 calibrated on the run's own input: every tensor of the reference on `input`, from the
  // calibration, so the check need not run the reference again.
  std::map<std::string, Tensor8> reference;
};

// `keep_real_weights`: keep the float weights of an int8 graph for the float32 reference.
// `values` false: a timing-only run's compilation (quantize_graph_for_timing, no reference).
Compiled load_and_compile(const std::string& hw_spec, const std::string& workload_spec,
                          std::optional<int> batch, uint64_t seed, const std::string& input_npy,
                          std::optional<DataType> dtype, const CalibrationRequest& calibration = {},
                          bool keep_real_weights = false, bool values = true,
                          Parallelism parallel = Parallelism::kAuto,
                          const std::string& host_ops = "", int micro_batch = 1) {
  Compiled c;
  c.hw = load_hw_config(hw_spec);
  c.graph = load_workload(workload_spec, batch);
  c.graph.dtype = dtype.value_or(c.hw.data_types.activation);
  const bool int8 = c.graph.dtype == DataType::kInt8;
  if (!calibration.file.empty() && !int8) {
    throw UsageError(
        fmt::format("--calibration {}: only int8 runs calibrate scales, this one runs in bf16",
                    calibration.file));
  }
  // Before any file may set the input scale: generated weights depend on the seed and the graph
  // only, so runs that calibrate differently run the same network. They are drawn when quantized,
  // never all at once (VGG-16's are 553 MB), unless the float32 reference needs them.
  materialize_parameters(c.graph, seed,
                         keep_real_weights ? WeightStorage::kStored : WeightStorage::kOnDemand);
  std::optional<CalibrationBatch> separate;
  if (!calibration.file.empty()) separate = read_calibration_npy(calibration, c.graph);
  if (c.graph.input_ids && separate) {
    throw UsageError(
        fmt::format("--calibration {}: the model's input '{}' holds token ids: its "
                    "scales come from the embedding table, not a calibration batch",
                    calibration.file, c.graph.input_name));
  }
  InputBatch in =
      c.graph.input_ids ? (input_npy.empty() ? random_ids(c.graph, seed)
                                             : read_ids_npy(input_npy, c.graph, batch.has_value()))
      : input_npy.empty()
          ? random_input(c.graph, seed)
          : read_input_npy(input_npy, c.graph, batch.has_value(),
                           separate ? std::nullopt : std::optional(calibration.options));
  c.input = std::move(in.bytes);
  c.input_real = std::move(in.real);
  optimize_graph(c.graph);
  pin_host_ops(c.graph, c.hw, host_ops, hw_spec);
  if (!int8) {
    prepare_bf16(c.graph);
  } else if (values) {
    if (separate) {
      quantize_graph(c.graph, separate->codes, separate->samples, calibration.options);
    } else {
      quantize_graph(c.graph, std::vector<int8_t>(c.input.begin(), c.input.end()), c.graph.batch,
                     calibration.options, &c.reference);
    }
    c.calibration = calibration_source(calibration);
    c.calibration_samples = separate ? separate->samples : c.graph.batch;
    c.calibration_options = calibration.options;
  } else {
    quantize_graph_for_timing(c.graph);  // calibrates nothing: quantization.calibration "none"
  }
  // From here on the int8 or bf16 weights stand for the given float ones.
  if (!keep_real_weights) {
    for (Layer& l : c.graph.layers) std::vector<float>().swap(l.weights);
  }
  const int element_bytes = c.graph.dtype == DataType::kBf16 ? 2 : 1;
  fuse_epilogues(c.graph, [&](const Layer& l) {
    // A layer pinned to the host stays a layer of its own, and nothing joins a host layer.
    if (l.on_host || (!l.epilogue.empty() && l.epilogue.back().on_host)) return false;
    return matrix_layer_fits(c.hw, l, c.graph.batch, element_bytes);
  });
  CompileResult result = compile_parallel(c.graph, c.hw, parallel, micro_batch);
  if (!result.ok)
    throw UserError(fmt::format("{} on {}: {}", workload_spec, hw_spec, result.reason));
  c.program = std::move(result.program);
  // The program holds the int8 weights now; only the reference reads the graph's copy, and it
  // has run already (the calibration's tensors) or will not run (timing only).
  // A host layer's weights stay: the host computes it with the reference (sim/host_run.hpp).
  if (int8 && (!values || !c.reference.empty())) {
    for (size_t i = 0; i < c.graph.layers.size(); ++i) {
      if (!c.program.layers[i].on_host) std::vector<int8_t>().swap(c.graph.layers[i].qweights);
    }
  }
  return c;
}

std::optional<DataType> dtype_option(const po::variables_map& vm) {
  if (!vm.count("dtype")) return std::nullopt;
  const std::string text = vm["dtype"].as<std::string>();
  if (text != "int8" && text != "bf16") {
    throw UsageError(fmt::format("--dtype '{}': expected int8 or bf16", text));
  }
  return parse_data_type(text);
}

Parallelism parallel_option(const po::variables_map& vm) {
  const std::string text = vm["parallel"].as<std::string>();
  const std::optional<Parallelism> p = parse_parallelism(text);
  if (!p) {
    throw UsageError(fmt::format("--parallel '{}': expected data, tensor, pipeline or auto", text));
  }
  return *p;
}

// Images per micro-batch of a pipeline: only with --parallel pipeline, at least 1.
int micro_batch_option(const po::variables_map& vm, Parallelism parallel) {
  if (!vm.count("micro-batch")) return 1;
  const int n = vm["micro-batch"].as<int>();
  if (parallel != Parallelism::kPipeline) {
    throw UsageError(fmt::format("--micro-batch {}: micro-batches are for --parallel pipeline", n));
  }
  if (n < 1) throw UsageError(fmt::format("--micro-batch {}: expected at least 1 image", n));
  return n;
}

Compiled load_and_compile(const po::variables_map& vm) {
  return load_and_compile(
      vm["hw"].as<std::string>(), vm["workload"].as<std::string>(), batch_option(vm),
      vm["seed"].as<uint64_t>(), vm.count("input") ? vm["input"].as<std::string>() : "",
      dtype_option(vm), calibration_request(vm), vm.count("save-float-outputs") > 0,
      !vm.count("values") || vm["values"].as<std::string>() == "on", parallel_option(vm),
      vm.count("host-ops") ? vm["host-ops"].as<std::string>() : "",
      micro_batch_option(vm, parallel_option(vm)));
}

void add_target_options(po::options_description& o) {
  o.add_options()("hw", po::value<std::string>()->required(),
                  "hardware: a preset name (npusim presets) or a JSON file")(
      "workload", po::value<std::string>()->required(),
      "network: a zoo name (npusim zoo), a JSON graph file or an .onnx model")(
      "batch", po::value<int>(), "batch size (overrides the workload's)")(
      "seed", po::value<uint64_t>()->default_value(1),
      "seed of the pseudo-random weights (and input, without --input)")(
      "dtype", po::value<std::string>(),
      "data type the network runs in: int8 (calibrated per-channel quantization) or bf16 "
      "(fp32 accumulation); default: the hardware's data_types.activation")(
      "input", po::value<std::string>(),
      "input batch as .npy: [batch, ...] in the graph's layout (NCHW for ONNX models; an ONNX "
      "model run as one whole tensor takes exactly its input's shape); int8 on the graph's "
      "input scale, or float (quantized with a scale calibrated on it, or with --calibration on "
      "that file); token ids (int32 / int64) for a model whose input feeds embedding lookups "
      "(docs/onnx.md)")(
      "parallel", po::value<std::string>()->default_value("auto"),
      "how a chip of several cores (hardware `cores`) shares the work: data (the batch split over "
      "the cores), tensor (each matrix layer's output channels split over the cores), pipeline "
      "(consecutive layers on the cores as stages, micro-batches streamed through them, stage "
      "outputs sent core to core) or auto (data when the batch has an image per core, else per "
      "matrix layer tensor or core 0 by estimated cycles); docs/multicore.md")(
      "micro-batch", po::value<int>(),
      "images per micro-batch of --parallel pipeline (default 1; the last may be smaller)")(
      "host-ops", po::value<std::string>(),
      "NAME,...: layers to run on the host CPU (hardware `host` section), each a layer name or "
      "an operator type as `npusim compile` names it (softmax, maxpool, conv2d, relu...); layers "
      "the accelerator cannot run fall back to the host anyway; docs/heterogeneous.md");
  add_calibration_options(o);
}

// Writes `text` to `path` atomically: readers never see a half-written file.
void write_file(const std::filesystem::path& path, const std::string& text) {
  auto tmp = path;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    out << text;
    if (!out) throw UserError(fmt::format("{}: cannot write", tmp.string()));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw UserError(fmt::format("{}: cannot write: {}", path.string(), ec.message()));
}

// Creates the directory a --save-... flag names, or fails naming the flag.
void create_output_directory(const std::string& flag, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) {
    throw UserError(fmt::format("{} '{}': cannot create directory", flag, dir));
  }
}

// The float32 reference's outputs (run_reference_f32) as DIR/<name>.npy, each its own attempt.
void save_float_outputs(const Compiled& c, const std::string& dir, OutputAttempts& attempts) {
  std::map<std::string, std::vector<float>> t;
  attempts.attempt("--save-float-outputs", [&] { t = run_reference_f32(c.graph, c.input_real); });
  const NpyDirectory files(dir, c.graph.outputs);
  for (const std::string& name : c.graph.outputs) {
    if (!t.count(name)) continue;
    attempts.attempt(fmt::format("--save-float-outputs {}", name), [&] {
      write_values_npy(files, c.graph, name, c.graph.shape_of(name).dims, c.graph.batch,
                       std::move(t.at(name)));
    });
  }
  for (const std::string& line : files.renamed()) {
    std::cerr << fmt::format("npusim: --save-float-outputs: {}\n", line);
  }
}

// --save-outputs: the graph's outputs (and with --save-intermediates every stored layer output)
// as DIR/<name>.npy, each its own attempt.
void save_outputs(const Compiled& c, const SimulationResult& r, const std::string& dir,
                  OutputAttempts& attempts) {
  std::vector<std::string> names;
  for (const auto& t : c.program.outputs) names.push_back(t.name);
  for (size_t i = 0; i < r.tensors.size(); ++i) names.push_back(c.program.tensors[i].name);
  const NpyDirectory files(dir, names);
  const auto save = [&](const auto& t, const std::vector<uint8_t>& bytes) {
    attempts.attempt(fmt::format("--save-outputs {}", t.name), [&] {
      write_tensor_npy(files, c.graph, t.name, t.dims, t.batch, t.scale, t.element_bytes, bytes);
    });
  };
  for (size_t i = 0; i < c.program.outputs.size(); ++i) save(c.program.outputs[i], r.outputs[i]);
  for (size_t i = 0; i < r.tensors.size(); ++i) save(c.program.tensors[i], r.tensors[i]);
  for (const std::string& line : files.renamed()) {
    std::cerr << fmt::format("npusim: --save-outputs: {}\n", line);
  }
}

int command_run(const std::vector<std::string>& args) {
  po::options_description o("run options");
  add_target_options(o);
  o.add_options()("out", po::value<std::string>(),
                  "directory for stats.json, report.txt and config.resolved.json")(
      "fidelity", po::value<std::string>()->default_value("fast"),
      "matrix-unit model: fast (closed form, default) or pe (every PE or cube pipeline "
      "register, every cycle)")(
      "values", po::value<std::string>()->default_value("on"),
      "on (default): the units compute every value and every layer's output is checked against "
      "the reference; off: timing only, the same program and the same cycles and figures (timing "
      "never depends on data in these models: docs/performance.md) without values or check")(
      "layers", "print the per-layer tables")(
      "format", po::value<std::string>()->default_value("text"),
      "what stdout shows: text (the report) or csv (one header line, then one row per layer with "
      "every per-layer figure of stats.json; with --out, DIR/layers.csv gets the same)")(
      "list-stats", "print every figure of stats.json with its unit and meaning, not the report")(
      "save-outputs", po::value<std::string>(),
      "write every graph output as DIR/<name>.npy (float32 real values, the graph's layout; "
      "bytes of the name other than letters, digits, '.', '-', '_' as '_', and a name that "
      "would share another's file as <name>~2.npy)")(
      "save-intermediates",
      "with --save-outputs: also write every layer's output (a tensor fused into a conv's "
      "epilogue, such as a pooled conv's output, is never stored: the fused layer's is)")(
      "save-float-outputs", po::value<std::string>(),
      "write every graph output of the float32 reference (the network's real-valued "
      "parameters, no quantization, the real input) as DIR/<name>.npy, to measure int8 or bf16 "
      "accuracy against (scripts/quant_accuracy.py)");
  TraceOutputs::add_options(o);
  po::variables_map vm;
  if (!parse_command_line("run", "--hw HW --workload NET [options]", o, args, vm)) return 0;
  const TraceOutputs traces(vm);
  const std::string format = vm["format"].as<std::string>();
  if (format != "text" && format != "csv") {
    throw UsageError(fmt::format("--format '{}': expected text or csv", format));
  }
  const auto fidelity = parse_fidelity(vm["fidelity"].as<std::string>());
  const std::string values = vm["values"].as<std::string>();
  if (values != "on" && values != "off") {
    throw UsageError(fmt::format("--values '{}': expected on or off", values));
  }
  if (values == "off" && vm.count("save-outputs")) {
    throw UsageError("npusim run: --save-outputs needs the values: drop --values off");
  }
  std::filesystem::path out_dir;
  if (vm.count("out")) {
    out_dir = vm["out"].as<std::string>();
    std::error_code ec;
    std::filesystem::create_directories(out_dir, ec);
    if (ec || !std::filesystem::is_directory(out_dir)) {
      throw UserError(fmt::format("--out '{}': cannot create directory", out_dir.string()));
    }
    // A previous result here would look like this run's if we failed: remove it first.
    std::filesystem::remove(out_dir / "stats.json", ec);
  }
  std::string save_dir;
  if (vm.count("save-outputs")) {
    save_dir = vm["save-outputs"].as<std::string>();
    create_output_directory("--save-outputs", save_dir);
  } else if (vm.count("save-intermediates")) {
    throw UsageError("npusim run: --save-intermediates needs --save-outputs DIR");
  }
  if (vm.count("save-float-outputs")) {
    create_output_directory("--save-float-outputs", vm["save-float-outputs"].as<std::string>());
  }
  Compiled c = load_and_compile(vm);
  const uint64_t seed = vm["seed"].as<uint64_t>();
  const bool intermediates = vm.count("save-intermediates") > 0;
  RunDescription run{c.hw.name, c.graph.name, vm["fidelity"].as<std::string>(), seed,
                     values == "on"};
  run.calibration = c.calibration;
  run.calibration_samples = c.calibration_samples;
  if (c.graph.dtype == DataType::kInt8) {
    run.calibration_method = to_string(c.calibration_options.method);
    if (c.calibration_options.method == CalibrationMethod::kPercentile) {
      run.calibration_percentile = c.calibration_options.percentile;
    }
  }
  const std::unique_ptr<timeline::Timeline> timeline = traces.make_timeline(c.hw, c.program);
  SimulationResult r =
      simulate(c.hw, c.program, c.graph, c.input, fidelity, run, intermediates,
               {timeline.get(), traces.vcd_path()}, c.reference.empty() ? nullptr : &c.reference);
  // From here on the run has its results: each output is written on its own, and one that fails
  // is named at the end without costing the others (sim/output_attempts.hpp).
  OutputAttempts attempts;
  if (!out_dir.empty()) {
    attempts.attempt((out_dir / "stats.json").string(),
                     [&] { write_file(out_dir / "stats.json", dump_json(r.stats, 2) + "\n"); });
    attempts.attempt((out_dir / "config.resolved.json").string(), [&] {
      write_file(out_dir / "config.resolved.json", dump_json(to_json(c.hw), 2) + "\n");
    });
    attempts.attempt((out_dir / "report.txt").string(),
                     [&] { write_file(out_dir / "report.txt", text_report(r.stats, true)); });
    if (format == "csv") {
      attempts.attempt((out_dir / "layers.csv").string(),
                       [&] { write_file(out_dir / "layers.csv", layers_csv(r.stats)); });
    }
  }
  if (!r.vcd_error.empty()) attempts.fail(traces.vcd_path(), r.vcd_error, false);
  if (timeline) traces.write(*timeline, c.hw, c.program, r.stats, attempts);
  if (!save_dir.empty()) save_outputs(c, r, save_dir, attempts);
  if (vm.count("save-float-outputs")) {
    save_float_outputs(c, vm["save-float-outputs"].as<std::string>(), attempts);
  }
  attempts.attempt("stdout", [&] {
    if (vm.count("list-stats")) {
      // What this run's stats.json holds, figure by figure (the table of docs/stats.md).
      stats::Registry listing;
      for (const auto& d : r.descriptors) listing.value(d.path, d.unit, d.description, nullptr);
      std::cout << listing.markdown();
    } else if (format == "csv") {
      std::cout << layers_csv(r.stats);
    } else {
      std::cout << text_report(r.stats, vm.count("layers") > 0);
      // The host's time goes to the terminal only: report.txt holds the same bytes every run.
      std::cout << fmt::format("  simulated in {:.3f} s wall\n", r.wall_seconds);
    }
  });
  std::cerr << attempts.report();
  if (r.check.checked && !r.check.within_tolerance) {
    std::cerr << fmt::format(
        "npusim: FUNCTIONAL MISMATCH from layer {} on: {} of {} values of {} tensors are outside "
        "their layer's bound (max abs error against the whole-graph reference {:g}, relative "
        "{:.3g}). This is a bug in npusim.\n",
        printable_text(r.check.first_mismatch), r.check.bound_exceeded, r.check.compared,
        r.check.tensors, r.check.max_abs_error, r.check.max_relative_error);
    return 1;
  }
  return attempts.exit_code();
}

int command_compile(const std::vector<std::string>& args) {
  po::options_description o("compile options");
  add_target_options(o);
  o.add_options()("output,o", po::value<std::string>(), "write the assembly here (default stdout)");
  po::variables_map vm;
  if (!parse_command_line("compile", "--hw HW --workload NET [-o prog.asm]", o, args, vm)) return 0;
  Compiled c = load_and_compile(vm);
  std::string text = to_assembly(c.program);
  if (vm.count("output")) {
    write_file(vm["output"].as<std::string>(), text);
  } else {
    std::cout << text;
  }
  return 0;
}

int command_validate(const std::vector<std::string>& args) {
  po::options_description o("validate options");
  o.add_options()("hw", po::value<std::string>()->required(), "hardware preset or JSON file")(
      "workload", po::value<std::string>(), "network: zoo name, JSON graph file or .onnx model")(
      "batch", po::value<int>(), "batch size (overrides the workload's)");
  po::variables_map vm;
  if (!parse_command_line("validate", "--hw HW [--workload NET]", o, args, vm)) return 0;
  HwConfig hw = load_hw_config(vm["hw"].as<std::string>());
  std::cout << fmt::format("{}: valid hardware description '{}'\n", vm["hw"].as<std::string>(),
                           hw.name);
  if (vm.count("workload")) {
    const std::string workload = vm["workload"].as<std::string>();
    Compiled c = load_and_compile(vm["hw"].as<std::string>(), workload, batch_option(vm), 1, "",
                                  std::nullopt);
    std::cout << fmt::format(
        "{}: valid network '{}' ({} layers after fusion, {} MACs at batch {}); "
        "it fits, {} instructions\n",
        workload, c.graph.name, c.graph.layers.size(), c.graph.total_macs(), c.graph.batch,
        c.program.instructions.size());
  }
  return 0;
}

int command_presets(const std::vector<std::string>& args) {
  po::options_description o("presets options");
  o.add_options()("show", po::value<std::string>(),
                  "print this preset (or hardware JSON file) as JSON with every default filled "
                  "in, as run --out writes config.resolved.json");
  po::variables_map vm;
  if (!parse_command_line("presets", "[--show HW]", o, args, vm)) return 0;
  if (vm.count("show")) {
    const std::string spec = vm["show"].as<std::string>();
    HwConfig hw;
    try {
      hw = load_hw_config(spec);
    } catch (const UserError& e) {
      // The loader names the option it serves, --hw; here the name came from --show.
      std::string what = e.what();
      if (what.rfind("--hw ", 0) == 0) what = "--show " + what.substr(5);
      throw UserError(what);
    }
    std::cout << dump_json(to_json(hw), 2) << "\n";
    return 0;
  }
  for (const auto& name : preset_names("hw")) {
    std::cout << format_preset_entry(name, load_hw_config(name));
  }
  return 0;
}

int command_zoo(const std::vector<std::string>& args) {
  po::options_description o("zoo options");
  po::variables_map vm;
  if (!parse_command_line("zoo", "", o, args, vm)) return 0;
  for (const auto& name : embedded_file_names("zoo")) {
    Graph g = load_workload(name, std::nullopt);
    std::cout << fmt::format("{:<12} batch {:<4} {:>3} layers {:>14} MACs  {}\n", name, g.batch,
                             g.layers.size(), g.total_macs(), g.description);
  }
  return 0;
}

}  // namespace

int cli_main(const std::vector<std::string>& args) {
  try {
    if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
      std::cout << kUsage;
      return args.empty() ? 2 : 0;
    }
    if (args[0] == "--version") {
      std::cout << "npusim 0.1.0\n";
      return 0;
    }
    const std::string& command = args[0];
    const std::vector<std::string> rest(args.begin() + 1, args.end());
    if (command == "run") return command_run(rest);
    if (command == "compile") return command_compile(rest);
    if (command == "validate") return command_validate(rest);
    if (command == "presets") return command_presets(rest);
    if (command == "zoo") return command_zoo(rest);
#ifdef NPUSIM_HAVE_SCALESIM
    if (command == "scalesim") return scalesim::run_cli(rest);
#endif
    if (command == "membench") return command_membench(rest);
    std::cerr << fmt::format("npusim: unknown command '{}'\n\n{}", command, kUsage);
    return 2;
  } catch (const UserError& e) {
    std::cerr << "npusim: error: " << e.what() << "\n";
    return 2;
  } catch (const InternalError& e) {
    std::cerr << "npusim: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "npusim: internal error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace npusim
