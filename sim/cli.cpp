#include "sim/cli.hpp"

#include <fmt/format.h>

#include <boost/program_options.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>

#include "npusim/npusim.hpp"
#include "sim/command_line.hpp"
#include "sim/generate_command.hpp"
#include "sim/membench_command.hpp"
#include "sim/output_attempts.hpp"
#include "sim/serve_command.hpp"
#include "sim/trace_flags.hpp"
#include "sim/train_command.hpp"
#include "support/error.hpp"
#include "support/npy.hpp"
#include "support/stats.hpp"
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
  generate   generate tokens with a decoder-only LLM: prefill, then decode steps (docs/llm.md)
  train      training steps of a classifier: forward, backward, optimizer (docs/training.md)
  serve      replay a trace of LLM requests: continuous batching, paged KV cache (docs/serving.md)
  scalesim   run a SCALE-Sim v2 config and topology, writing SCALE-Sim's reports
  membench   drive the off-chip memory model alone with a traffic pattern

exit codes: 0 success, 2 bad input or usage, 1 internal error
)";

// The options every command that compiles shares, as the library's Target.
Target target_from(const po::variables_map& vm) {
  Target t;
  t.hw = vm["hw"].as<std::string>();
  t.workload = vm["workload"].as<std::string>();
  if (vm.count("batch")) t.batch = vm["batch"].as<int>();
  t.seed = vm["seed"].as<uint64_t>();
  if (vm.count("dtype")) t.dtype = vm["dtype"].as<std::string>();
  if (vm.count("input")) t.input_npy = vm["input"].as<std::string>();
  t.parallel = vm["parallel"].as<std::string>();
  if (vm.count("micro-batch")) t.micro_batch = vm["micro-batch"].as<int>();
  if (vm.count("host-ops")) t.host_ops = vm["host-ops"].as<std::string>();
  if (vm.count("calibration")) t.calibration_file = vm["calibration"].as<std::string>();
  t.calibration_method = vm["calibration-method"].as<std::string>();
  if (vm.count("calibration-percentile")) {
    t.calibration_percentile = vm["calibration-percentile"].as<double>();
  }
  if (vm.count("prune")) t.prune = vm["prune"].as<std::string>();
  if (vm.count("weight-dtype")) t.weight_dtype = vm["weight-dtype"].as<std::string>();
  if (vm.count("compress-weights")) t.compress_weights = vm["compress-weights"].as<std::string>();
  if (vm.count("weight-group")) t.weight_group = vm["weight-group"].as<int>();
  return t;
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
      "data type the network runs in: int8 (calibrated per-channel quantization), bf16 "
      "(fp32 accumulation), or fp8-e4m3 / fp8-e5m2 (bf16 with convolutions and dense layers "
      "multiplying fp8, per-tensor scales, on a matrix unit whose data_types.fp8 lists it; "
      "docs/quantization.md); default: the hardware's data_types.activation")(
      "input", po::value<std::string>(),
      "input batch as .npy: [batch, ...] in the graph's layout (NCHW for ONNX models; an ONNX "
      "model run as one whole tensor takes exactly its input's shape, with the batch it declares "
      "in axis 0, a symbolic one taken from this file); int8 on the graph's "
      "input scale, or float (quantized with a scale calibrated on it, or with --calibration on "
      "that file); token ids (int32 / int64) for a model whose input feeds embedding lookups "
      "(docs/onnx.md)")(
      "parallel", po::value<std::string>()->default_value("auto"),
      "how a chip of several cores (hardware `cores`) shares the work: data (the batch split over "
      "the cores; refused for an ONNX model run as one whole tensor with a batch), tensor (each "
      "matrix layer's output channels split over the cores), pipeline "
      "(consecutive layers on the cores as stages, micro-batches streamed through them, stage "
      "outputs sent core to core) or auto (data when the batch has an image per core, else per "
      "matrix layer tensor or core 0 by estimated cycles); docs/multicore.md")(
      "micro-batch", po::value<int>(),
      "images per micro-batch of --parallel pipeline (default 1; the last may be smaller)")(
      "host-ops", po::value<std::string>(),
      "NAME,...: layers to run on the host CPU (hardware `host` section), each a layer name or "
      "an operator type as `npusim compile` names it (softmax, maxpool, conv2d, relu...); layers "
      "the accelerator cannot run fall back to the host anyway; docs/heterogeneous.md")(
      "calibration", po::value<std::string>(),
      "int8: calibrate activation scales on this batch (.npy, [samples, ...] like "
      "--input, any number of samples) instead of the run's own input; a float file "
      "also sets the input scale")(
      "calibration-method", po::value<std::string>()->default_value("max"),
      "how an activation scale is chosen from the calibration values: max (the largest "
      "magnitude maps to 127) or percentile (the --calibration-percentile-th percentile of the "
      "magnitudes does; larger values saturate)")(
      "calibration-percentile", po::value<double>(),
      "with --calibration-method percentile: the percentile, in [50, 100] (default 99.99)")(
      "prune", po::value<std::string>(),
      "set weights of convolutions and dense layers to zero before quantization: magnitude:F "
      "(the fraction F of each layer's weights, smallest magnitudes first), global:F (of all "
      "weights, one threshold) or N:M (at most N non-zeros in every M consecutive weights along "
      "the reduction axis, e.g. 2:4); docs/compression.md")(
      "weight-dtype", po::value<std::string>(),
      "weights of convolutions and dense layers: int4 (weight-only int4, two weights to a byte "
      "off chip, one scale per output channel: with --dtype int8 (W4A8) a real scale folded "
      "into the output's, with --dtype bf16 (W4A16) a bf16 scale stored beside them, the DMA "
      "writing z x scale rounded to bf16) or the run's --dtype; docs/compression.md")(
      "weight-group", po::value<int>(),
      "with --weight-dtype int4: a scale per group of this many consecutive weights along the "
      "reduction axis (e.g. 128), stored off chip beside them (int8 runs: an integer scale "
      "under the channel's; bf16 runs: a bf16 scale, as GPTQ/AWQ); default: one scale per "
      "output channel (docs/compression.md)")(
      "compress-weights", po::value<std::string>(),
      "off (default), auto or huffman: store the weights of each convolution and dense layer "
      "compressed off chip (auto: a bitmap or CSR-like format, whichever is smaller; huffman: "
      "those or, for int8 weights, the bitmap with Huffman-coded values) when that takes fewer "
      "bytes; the DMA decompresses them on the way in (docs/compression.md)");
}

// Writes each tensor as DIR/<file name>.npy (float32), each its own attempt; `renamed` (the files
// that got a ~k suffix) goes to stderr.
void save_tensors(const std::string& flag, const std::string& dir,
                  const std::vector<Tensor>& tensors, const std::vector<std::string>& renamed,
                  OutputAttempts& attempts) {
  for (const Tensor& t : tensors) {
    attempts.attempt(fmt::format("{} {}", flag, printable_text(t.name)), [&] {
      write_npy_float32((std::filesystem::path(dir) / (t.file_name + ".npy")).string(), t.shape,
                        t.values);
    });
  }
  for (const std::string& line : renamed) std::cerr << fmt::format("npusim: {}: {}\n", flag, line);
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
      "bytes of a name other than letters, digits, '.', '-', '_' become '_', and names that would "
      "share a file get NAME~2.npy, NAME~3.npy..., each printed on stderr)")(
      "save-intermediates",
      "with --save-outputs: also write every layer's output (a tensor fused into a conv's "
      "epilogue, such as a pooled conv's output, is never stored: the fused layer's is)")(
      "save-float-outputs", po::value<std::string>(),
      "write every graph output of the float32 reference (the network's real-valued "
      "parameters, no quantization, the real input) as DIR/<name>.npy (file names as for "
      "--save-outputs), to measure int8 or bf16 "
      "accuracy against (scripts/quant_accuracy.py)");
  add_memory_fidelity_option(o);
  TraceOutputs::add_options(o);
  po::variables_map vm;
  if (!parse_command_line("run", "--hw HW --workload NET [options]", o, args, vm)) return 0;
  const TraceOutputs traces(vm);
  const std::string format = vm["format"].as<std::string>();
  if (format != "text" && format != "csv") {
    throw UsageError(fmt::format("--format '{}': expected text or csv", format));
  }
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
    create_output_directory("--out", out_dir, {"stats.json"});
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
  RunOptions options;
  static_cast<Target&>(options) = target_from(vm);
  options.fidelity = vm["fidelity"].as<std::string>();
  options.memory_fidelity = memory_fidelity_from(vm);
  options.values = values == "on";
  options.intermediates = vm.count("save-intermediates") > 0;
  options.float_outputs = vm.count("save-float-outputs") > 0;
  traces.request(options);
  const RunResult r = run(options);
  // From here on the run has its results: each output is written on its own, and one that fails
  // is named at the end without costing the others (sim/output_attempts.hpp).
  OutputAttempts attempts;
  if (!out_dir.empty()) {
    const auto write = [&](const char* file, const std::function<std::string()>& text) {
      attempts.attempt((out_dir / file).string(), [&] { write_file(out_dir / file, text()); });
    };
    write("stats.json", [&] { return dump_json(r.stats, 2) + "\n"; });
    write("config.resolved.json", [&] { return dump_json(r.hardware, 2) + "\n"; });
    write("report.txt", [&] { return r.report(true); });
    if (format == "csv") write("layers.csv", [&] { return r.layers_csv(); });
  }
  if (!r.vcd_error.empty()) attempts.fail(traces.vcd_path(), r.vcd_error, false);
  traces.write(r, attempts);
  if (!save_dir.empty()) {
    save_tensors("--save-outputs", save_dir, r.outputs, r.renamed_files, attempts);
    save_tensors("--save-outputs", save_dir, r.intermediates, {}, attempts);
  }
  if (vm.count("save-float-outputs")) {
    save_tensors("--save-float-outputs", vm["save-float-outputs"].as<std::string>(),
                 r.float_outputs, r.renamed_float_files, attempts);
  }
  attempts.attempt("stdout", [&] {
    if (vm.count("list-stats")) {
      // What this run's stats.json holds, figure by figure (the table of docs/stats.md).
      stats::Registry listing;
      for (const auto& d : r.descriptors) listing.value(d.path, d.unit, d.description, nullptr);
      std::cout << listing.markdown();
    } else if (format == "csv") {
      std::cout << r.layers_csv();
    } else {
      std::cout << r.report(vm.count("layers") > 0);
      // The host's time goes to the terminal only: report.txt holds the same bytes every run.
      std::cout << fmt::format("  simulated in {:.3f} s wall\n", r.wall_seconds);
    }
  });
  std::cerr << attempts.report();
  if (!r.mismatch.empty()) {
    std::cerr << "npusim: " << r.mismatch << "\n";
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
  const std::string text = compile(target_from(vm));
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
  Target t;
  t.hw = vm["hw"].as<std::string>();
  std::cout << fmt::format("{}: valid hardware description '{}'\n", t.hw, validate(t).hw_name);
  if (vm.count("workload")) {
    t.workload = vm["workload"].as<std::string>();
    if (vm.count("batch")) t.batch = vm["batch"].as<int>();
    const Validation v = validate(t);
    std::cout << fmt::format(
        "{}: valid network '{}' ({} layers after fusion, {} MACs at batch {}); "
        "it fits, {} instructions\n",
        t.workload, v.network, v.layers, v.macs, v.batch, v.instructions);
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
    nlohmann::json hw;
    try {
      hw = resolved_hardware(spec);
    } catch (const UserError& e) {
      // The loader names the option it serves, --hw; here the name came from --show.
      std::string what = e.what();
      if (what.rfind("--hw ", 0) == 0) what = "--show " + what.substr(5);
      throw UserError(what);
    }
    std::cout << dump_json(hw, 2) << "\n";
    return 0;
  }
  for (const PresetInfo& p : presets()) std::cout << p.listing;
  return 0;
}

int command_zoo(const std::vector<std::string>& args) {
  po::options_description o("zoo options");
  po::variables_map vm;
  if (!parse_command_line("zoo", "", o, args, vm)) return 0;
  for (const ZooEntry& z : zoo()) {
    std::cout << fmt::format("{:<12} batch {:<4} {:>3} layers {:>14} MACs  {}\n", z.name, z.batch,
                             z.layers, z.macs, z.description);
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
    if (command == "generate") return command_generate(rest);
    if (command == "serve") return command_serve(rest);
    if (command == "train") return command_train(rest);
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
