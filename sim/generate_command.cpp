#include "sim/generate_command.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>

#include "npusim/npusim.hpp"
#include "sim/command_line.hpp"
#include "sim/output_attempts.hpp"
#include "sim/trace_flags.hpp"
#include "support/error.hpp"
#include "support/npy.hpp"
#include "support/text_escape.hpp"

namespace po = boost::program_options;

namespace npusim {

int command_generate(const std::vector<std::string>& args) {
  po::options_description o("generate options");
  o.add_options()("hw", po::value<std::string>()->required(),
                  "hardware: a preset name (npusim presets) or a JSON file")(
      "workload", po::value<std::string>()->required(),
      "decoder: a built-in one (gpt2-small, gpt2-medium, llama-1b-like, llama-7b-like; npusim "
      "generate --list) or a decoder JSON file (docs/llm.md)")(
      "prompt-tokens", po::value<int>(),
      "prompt length per sequence (default 16, or the --input file's)")(
      "new-tokens", po::value<int>()->default_value(8),
      "tokens to generate per sequence: the prefill samples the first, each decode step one "
      "more")("batch", po::value<int>(),
              "sequences generated together (default 1, or the --input file's)")(
      "input", po::value<std::string>(),
      "prompt ids as .npy, int32 or int64 [batch, tokens] (default: drawn from the seed)")(
      "weights", po::value<std::string>(),
      "a .safetensors file with Hugging Face's GPT-2 or Llama tensor names (F32, F16, BF16); "
      "default: weights drawn from the seed")(
      "seed", po::value<uint64_t>()->default_value(1),
      "seed of the pseudo-random weights (and prompt, without --input)")(
      "dtype", po::value<std::string>(),
      "int8, bf16, fp8-e4m3 or fp8-e5m2 (as for npusim run); default: the hardware's "
      "data_types.activation")(
      "weight-dtype", po::value<std::string>(),
      "int4: weight-only int4 (with --dtype int8: W4A8; with bf16: W4A16, bf16 scales; "
      "docs/compression.md); default: the --dtype")(
      "weight-group", po::value<int>(),
      "with --weight-dtype int4: a scale per group of this many weights, as for npusim run")(
      "prune", po::value<std::string>(),
      "prune the weights before quantization, as for npusim run (docs/compression.md)")(
      "compress-weights", po::value<std::string>(),
      "off (default), auto or huffman: weights stored compressed off chip, as for npusim run "
      "(docs/compression.md)")(
      "parallel", po::value<std::string>()->default_value("auto"),
      "how several cores share each program: on a chip of several cores, tensor or auto "
      "(default) split the prefill and each decode step Megatron-style (attention by heads, the "
      "FFN by columns then rows, all-reduces over the interconnect; docs/llm.md); data and "
      "pipeline as for npusim run (docs/multicore.md)")(
      "fidelity", po::value<std::string>()->default_value("fast"),
      "matrix-unit model: fast (default) or pe")(
      "values", po::value<std::string>()->default_value("on"),
      "on (default): every program's values computed and checked against the reference, ids "
      "sampled from the simulated logits and compared with the reference's; off: timing only "
      "(the same cycles; tokens.npy is not written)")(
      "out", po::value<std::string>(),
      "directory for stats.json, report.txt, tokens.npy (the generated ids, int32 [batch, new "
      "tokens]) and logits.npy (float32 [new tokens, batch, vocab], the logits each id was "
      "sampled from)")("list", "list the built-in decoders and exit");
  add_memory_fidelity_option(o);
  TraceOutputs::add_generate_options(o);
  po::variables_map vm;
  if (std::find(args.begin(), args.end(), "--list") != args.end()) {
    for (const DecoderEntry& e : decoders()) {
      std::cout << fmt::format(
          "{:<14} {:>3} layers, hidden {:>5}, heads {:>3}/{:<3} KV, ffn {:>6}, vocab {:>6}, "
          "context {:>5}, {:.3g} G parameters\n",
          e.name, e.layers, e.hidden, e.heads, e.kv_heads, e.ffn, e.vocab, e.max_context,
          double(e.parameters) / 1e9);
    }
    return 0;
  }
  if (!parse_command_line("generate",
                          "--hw HW --workload DECODER [--prompt-tokens P] [--new-tokens N] "
                          "[--batch B] [--input ids.npy] [--weights f.safetensors] --out DIR",
                          o, args, vm)) {
    return 0;
  }
  const TraceOutputs traces(vm);
  GenerateOptions g;
  g.hw = vm["hw"].as<std::string>();
  g.workload = vm["workload"].as<std::string>();
  if (vm.count("prompt-tokens")) {
    g.prompt_tokens = vm["prompt-tokens"].as<int>();
    if (g.prompt_tokens < 1) {
      throw UsageError(fmt::format("--prompt-tokens {}: expected at least 1", g.prompt_tokens));
    }
  } else {
    g.prompt_tokens = 0;
  }
  g.new_tokens = vm["new-tokens"].as<int>();
  if (vm.count("batch")) g.batch = vm["batch"].as<int>();
  if (vm.count("input")) g.input_npy = vm["input"].as<std::string>();
  if (vm.count("weights")) g.weights = vm["weights"].as<std::string>();
  g.seed = vm["seed"].as<uint64_t>();
  if (vm.count("dtype")) g.dtype = vm["dtype"].as<std::string>();
  if (vm.count("weight-dtype")) g.weight_dtype = vm["weight-dtype"].as<std::string>();
  if (vm.count("prune")) g.prune = vm["prune"].as<std::string>();
  if (vm.count("compress-weights")) g.compress_weights = vm["compress-weights"].as<std::string>();
  if (vm.count("weight-group")) g.weight_group = vm["weight-group"].as<int>();
  g.parallel = vm["parallel"].as<std::string>();
  g.fidelity = vm["fidelity"].as<std::string>();
  g.memory_fidelity = memory_fidelity_from(vm);
  const std::string values = vm["values"].as<std::string>();
  if (values != "on" && values != "off") {
    throw UsageError(fmt::format("--values '{}': expected on or off", values));
  }
  g.values = values == "on";
  std::filesystem::path out_dir;
  if (vm.count("out")) {
    out_dir = vm["out"].as<std::string>();
    create_output_directory("--out", out_dir, {"stats.json", "tokens.npy", "logits.npy"});
  }
  traces.request(g);
  const GenerateResult r = generate(g);
  // From here on the run has its results: each output is written on its own, and one that fails
  // is named at the end without costing the others (sim/output_attempts.hpp).
  OutputAttempts attempts;
  if (!out_dir.empty()) {
    const auto write = [&](const char* file, const std::function<void(const std::string&)>& f) {
      const std::string path = (out_dir / file).string();
      attempts.attempt(path, [&] { f(path); });
    };
    write("stats.json", [&](const std::string& p) { write_file(p, dump_json(r.stats, 2) + "\n"); });
    write("report.txt", [&](const std::string& p) { write_file(p, r.report()); });
    if (g.values) {
      write("tokens.npy", [&](const std::string& p) {
        write_npy_int32(p, {r.batch, r.new_tokens}, r.tokens);
      });
      write("logits.npy", [&](const std::string& p) {
        write_npy_float32(p, {r.new_tokens, r.batch, r.vocab}, r.logits);
      });
    }
  }
  traces.write(r, attempts);
  attempts.attempt("stdout", [&] {
    std::cout << r.report();
    std::cout << fmt::format("  simulated in {:.3f} s wall\n", r.wall_seconds);
  });
  std::cerr << attempts.report();
  if (!r.mismatch.empty()) {
    std::cerr << "npusim: " << r.mismatch << "\n";
    return 1;
  }
  return attempts.exit_code();
}

}  // namespace npusim
