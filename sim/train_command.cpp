#include "sim/train_command.hpp"

#include <fmt/format.h>

#include <boost/program_options.hpp>
#include <filesystem>
#include <iostream>

#include "npusim/npusim.hpp"
#include "sim/command_line.hpp"
#include "support/error.hpp"
#include "support/npy.hpp"
#include "support/text_escape.hpp"

namespace po = boost::program_options;

namespace npusim {

int command_train(const std::vector<std::string>& args) {
  po::options_description o("train options");
  o.add_options()("hw", po::value<std::string>()->required(),
                  "hardware: a preset name (npusim presets) or a JSON file")(
      "workload", po::value<std::string>()->required(),
      "a zoo name or a JSON graph (docs/training.md lists the operators training "
      "differentiates): a classifier ending in a softmax (mnist-cnn, "
      "workloads/training/digits-mlp.json) or a regression (--loss mse)")(
      "batch", po::value<int>()->default_value(32), "samples per step")(
      "steps", po::value<int>()->default_value(1), "training steps")(
      "optimizer", po::value<std::string>()->default_value("sgd"),
      "sgd, momentum (0.9) or adam (0.9, 0.999, eps 1e-7, bias-corrected)")(
      "lr", po::value<double>()->default_value(0.01), "learning rate")(
      "optimizer-on", po::value<std::string>()->default_value("chip"),
      "chip (the fp32 update on the vector unit after the backward pass and all-reduce: fp32 "
      "master weights and state in off-chip memory, checked bit for bit against the host's "
      "update every step) or host (the host updates the masters between steps, no cycles)")(
      "loss", po::value<std::string>()->default_value("auto"),
      "xent (mean softmax cross-entropy against integer labels: a workload ending in a softmax), "
      "mse (mean squared error against float targets y.npy of the output's shape: any other "
      "workload) or auto (xent where the output is a final softmax, else mse)")(
      "data", po::value<std::string>(),
      "directory with x.npy (float [N, ...] in the workload's input layout) and y.npy (integer "
      "labels [N]; float targets [N, ...] for --loss mse), and heldout/ the same for the held-out "
      "accuracy (scripts/digits_dataset.py "
      "writes one); default: random samples and labels from the seed")(
      "shuffle", "a fresh seeded permutation of the data per pass (default: file order)")(
      "eval-every", po::value<int>()->default_value(0),
      "held-out accuracy every K steps (always after the last step; needs --data DIR/heldout)")(
      "save-weights", po::value<std::string>(),
      "write DIR/initial/ and DIR/final/: <layer>.weight.npy (dense [out, in], conv [out, "
      "in, kh, kw]) and <layer>.bias.npy, float32, PyTorch's layout")(
      "seed", po::value<uint64_t>()->default_value(1),
      "seed of the initial weights (Glorot uniform, zero biases), "
      "the shuffle and the random data")(
      "parallel", po::value<std::string>()->default_value("auto"),
      "on a chip of several cores: data (each core trains on batch / cores samples, the "
      "gradients summed by a ring all-reduce over the interconnect; the batch must be a multiple "
      "of the cores) or auto (data when the batch splits evenly, else one core); "
      "docs/training.md")(
      "dtype", po::value<std::string>(),
      "bf16 (the default and the only one: bf16 matrix inputs, fp32 accumulation and master "
      "weights); int8 is refused")("fidelity", po::value<std::string>()->default_value("fast"),
                                   "matrix-unit model: fast (default) or pe")(
      "values", po::value<std::string>()->default_value("on"),
      "on, or off: time the step only (no values computed or checked, no weights drawn, no "
      "loss; --data, --save-weights, --eval-every and --shuffle need the values)")(
      "out", po::value<std::string>(),
      "directory for stats.json, report.txt and loss.npy (float64 [steps])")(
      "trace-json", po::value<std::string>(),
      "write the first step's Chrome / Perfetto trace JSON to this file: every unit's "
      "instructions, and a process \"phases\" with the step's forward, backward, all-reduce and "
      "optimizer as named spans")(
      "html", po::value<std::string>(),
      "write the HTML report to this file: the loss per step with the held-out accuracy, a "
      "step's cycles by phase, energy by component, off-chip memory, the steps");
  add_memory_fidelity_option(o);
  po::variables_map vm;
  if (!parse_command_line(
          "train",
          "--hw HW --workload M [--batch B] [--steps S] [--optimizer "
          "sgd|momentum|adam] [--lr LR] [--optimizer-on chip|host] [--loss xent|mse|auto] [--data "
          "DIR] [--shuffle] "
          "[--parallel data|auto] [--save-weights DIR] [--values on|off] [--html FILE] "
          "[--trace-json FILE] --out DIR",
          o, args, vm)) {
    return 0;
  }
  TrainOptions t;
  t.hw = vm["hw"].as<std::string>();
  t.workload = vm["workload"].as<std::string>();
  t.batch = vm["batch"].as<int>();
  t.steps = vm["steps"].as<int>();
  t.optimizer = vm["optimizer"].as<std::string>();
  t.lr = vm["lr"].as<double>();
  t.optimizer_on = vm["optimizer-on"].as<std::string>();
  t.loss = vm["loss"].as<std::string>();
  if (vm.count("data")) t.data = vm["data"].as<std::string>();
  t.shuffle = vm.count("shuffle") > 0;
  t.eval_every = vm["eval-every"].as<int>();
  if (vm.count("save-weights")) t.save_weights = vm["save-weights"].as<std::string>();
  t.seed = vm["seed"].as<uint64_t>();
  t.parallel = vm["parallel"].as<std::string>();
  if (vm.count("dtype")) t.dtype = vm["dtype"].as<std::string>();
  t.fidelity = vm["fidelity"].as<std::string>();
  t.memory_fidelity = memory_fidelity_from(vm);
  const std::string values = vm["values"].as<std::string>();
  if (values != "on" && values != "off") {
    throw UsageError(fmt::format("--values '{}': expected on or off", values));
  }
  t.values = values == "on";
  t.record_trace = vm.count("trace-json") > 0;
  std::filesystem::path out_dir;
  if (vm.count("out")) {
    out_dir = vm["out"].as<std::string>();
    create_output_directory("--out", out_dir, {"stats.json", "report.txt", "loss.npy"});
  }
  const TrainResult r = train(t);
  if (!out_dir.empty()) {
    write_file(out_dir / "stats.json", dump_json(r.stats, 2) + "\n");
    write_file(out_dir / "report.txt", r.report());
    write_npy_float64((out_dir / "loss.npy").string(), {int64_t(r.loss.size())}, r.loss);
  }
  if (vm.count("html")) write_file(vm["html"].as<std::string>(), r.html());
  if (vm.count("trace-json")) write_file(vm["trace-json"].as<std::string>(), r.trace_json);
  std::cout << r.report();
  std::cout << fmt::format("  simulated in {:.3f} s wall\n", r.wall_seconds);
  if (!r.mismatch.empty()) {
    std::cerr << "npusim: " << r.mismatch << "\n";
    return 1;
  }
  return 0;
}

}  // namespace npusim
