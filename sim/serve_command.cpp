#include "sim/serve_command.hpp"

#include <fmt/format.h>

#include <boost/program_options.hpp>
#include <filesystem>
#include <iostream>

#include "npusim/npusim.hpp"
#include "sim/command_line.hpp"
#include "support/error.hpp"
#include "support/text_escape.hpp"

namespace po = boost::program_options;

namespace npusim {

int command_serve(const std::vector<std::string>& args) {
  po::options_description o("serve options");
  o.add_options()("hw", po::value<std::string>()->required(),
                  "hardware: a preset name (npusim presets) or a JSON file")(
      "workload", po::value<std::string>()->required(),
      "decoder: a built-in one (npusim generate --list) or a decoder JSON file (docs/llm.md)")(
      "trace", po::value<std::string>()->required(),
      "requests as CSV with the columns id,arrival_s,prompt_tokens,output_tokens "
      "(scripts/make_request_trace.py writes synthetic ones)")(
      "max-batch", po::value<int>()->default_value(32),
      "requests running at once (prefilling or decoding)")(
      "kv-block-tokens", po::value<int>()->default_value(16), "tokens per KV-cache block")(
      "max-step-tokens", po::value<int>()->default_value(2048),
      "tokens one step processes: one per decoding request, the rest prompt chunks")(
      "kv-cache-bytes", po::value<uint64_t>(),
      "off-chip bytes for the KV cache (default: 90 % of the off-chip memory less the weights)")(
      "slo-ttft", po::value<double>()->default_value(0.0),
      "time-to-first-token target in seconds, for goodput (0: none)")(
      "slo-tpot", po::value<double>()->default_value(0.0),
      "time-per-output-token target in seconds, for goodput (0: none)")(
      "grid-tokens", po::value<int>()->default_value(64),
      "prefill and decode programs are simulated at prompt / context lengths 1, G, 2G, 4G, ... "
      "(and decode at power-of-two batches); steps in between are interpolated")(
      "max-simulated-batch", po::value<int>()->default_value(16),
      "decode programs are simulated at batches 1, 2, 4, ... up to this; larger batches are "
      "extrapolated linearly from the last two (their simulation grows fast with the batch)")(
      "dtype", po::value<std::string>(),
      "int8 or bf16; default: the hardware's data_types.activation")(
      "parallel", po::value<std::string>()->default_value("auto"),
      "how several cores share each program, as for npusim run (docs/multicore.md)")(
      "fidelity", po::value<std::string>()->default_value("fast"),
      "matrix-unit model: fast (default) or pe")("seed", po::value<uint64_t>()->default_value(1),
                                                 "seed of the pseudo-random weights")(
      "out", po::value<std::string>(),
      "directory for stats.json, report.txt, requests.csv and steps.csv")(
      "trace-json", po::value<std::string>(),
      "write a Chrome / Perfetto trace to this file: a track per request (wait + prefill, "
      "decode) and counters of the steps (KV blocks, running and waiting requests, tokens)")(
      "html", po::value<std::string>(),
      "write the HTML report to this file: latency percentiles and distributions, a track per "
      "request, KV cache, batch and power over time");
  add_memory_fidelity_option(o);
  po::variables_map vm;
  if (!parse_command_line("serve", "--hw HW --workload DECODER --trace requests.csv --out DIR", o,
                          args, vm)) {
    return 0;
  }
  ServeOptions s;
  s.hw = vm["hw"].as<std::string>();
  s.workload = vm["workload"].as<std::string>();
  s.trace = vm["trace"].as<std::string>();
  s.max_batch = vm["max-batch"].as<int>();
  s.kv_block_tokens = vm["kv-block-tokens"].as<int>();
  s.max_step_tokens = vm["max-step-tokens"].as<int>();
  if (vm.count("kv-cache-bytes")) s.kv_cache_bytes = vm["kv-cache-bytes"].as<uint64_t>();
  s.slo_ttft_s = vm["slo-ttft"].as<double>();
  s.slo_tpot_s = vm["slo-tpot"].as<double>();
  s.grid_tokens = vm["grid-tokens"].as<int>();
  s.max_simulated_batch = vm["max-simulated-batch"].as<int>();
  if (vm.count("dtype")) s.dtype = vm["dtype"].as<std::string>();
  s.parallel = vm["parallel"].as<std::string>();
  s.fidelity = vm["fidelity"].as<std::string>();
  s.memory_fidelity = memory_fidelity_from(vm);
  s.seed = vm["seed"].as<uint64_t>();
  s.values = false;
  for (const auto& [flag, v] :
       {std::pair{"--slo-ttft", s.slo_ttft_s}, {"--slo-tpot", s.slo_tpot_s}}) {
    if (!(v >= 0)) throw UsageError(fmt::format("{} {}: expected a time >= 0", flag, v));
  }
  std::filesystem::path out_dir;
  if (vm.count("out")) {
    out_dir = vm["out"].as<std::string>();
    create_output_directory("--out", out_dir,
                            {"stats.json", "report.txt", "requests.csv", "steps.csv"});
  }
  const ServeResult r = serve(s);
  if (!out_dir.empty()) {
    write_file(out_dir / "stats.json", dump_json(r.stats, 2) + "\n");
    write_file(out_dir / "report.txt", r.report());
    write_file(out_dir / "requests.csv", r.requests_csv);
    write_file(out_dir / "steps.csv", r.steps_csv);
  }
  if (vm.count("trace-json")) write_file(vm["trace-json"].as<std::string>(), r.trace_json);
  if (vm.count("html")) write_file(vm["html"].as<std::string>(), r.html);
  std::cout << r.report();
  std::cout << fmt::format("  simulated in {:.3f} s wall\n", r.wall_seconds);
  return 0;
}

}  // namespace npusim
