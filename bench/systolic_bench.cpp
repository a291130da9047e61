// Speed of the systolic-array cores: runs ResNet-50's convolutions and FC layer (batch 1, 224x224,
// as im2col GEMMs, about 4.1 G MACs) tile by tile through one array model and prints simulated
// cycles and MACs per wall second and per CPU second. Not a test: bench/systolic_speed.sh runs it.
//
//   npusim_systolic_bench [--fidelity fast|pe] [--rows R] [--cols C] [--dataflow ws|os|is]
//                         [--type int8|bf16] [--single-buffer] [--budget-s SECONDS]
// --budget-s stops after the tile that crosses the wall-time budget (the pe fidelity cannot run
// the whole network in reasonable time); the figures are then for the part that ran.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "models/systolic/array_model.hpp"
#include "models/systolic/number_formats.hpp"
#include "models/systolic/pe_array_model.hpp"

namespace {

using npusim::Dataflow;
using namespace npusim::systolic;

struct Gemm {
  int m, k, n;
};

// ResNet-50 v1.5 (stride in the 3x3 convolutions), batch 1, 224x224: one GEMM per layer.
std::vector<Gemm> resnet50_gemms() {
  std::vector<Gemm> gemms;
  int size = 112;
  gemms.push_back({size * size, 3 * 7 * 7, 64});  // conv1 7x7/2
  size = 56;                                      // max pool
  int in_channels = 64;
  const int blocks[4] = {3, 4, 6, 3};
  const int widths[4] = {64, 128, 256, 512};
  for (int stage = 0; stage < 4; ++stage) {
    const int width = widths[stage], out_channels = 4 * width;
    for (int block = 0; block < blocks[stage]; ++block) {
      const int stride = (block == 0 && stage > 0) ? 2 : 1;
      const int out_size = size / stride;
      gemms.push_back({size * size, in_channels, width});           // 1x1 reduce
      gemms.push_back({out_size * out_size, width * 9, width});     // 3x3 (strided)
      gemms.push_back({out_size * out_size, width, out_channels});  // 1x1 expand
      if (block == 0) gemms.push_back({out_size * out_size, in_channels, out_channels});  // proj
      in_channels = out_channels;
      size = out_size;
    }
  }
  gemms.push_back({1, 2048, 1000});  // fc
  return gemms;
}

struct Options {
  Fidelity fidelity = Fidelity::kFast;
  ArrayParams params{256, 256, Dataflow::kWeightStationary, true};
  bool bf16 = false;
  double budget_s = 0;  // 0: no budget
};

[[noreturn]] void usage(const char* message) {
  std::fprintf(stderr, "npusim_systolic_bench: %s\n", message);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value after " + arg).c_str());
      return argv[++i];
    };
    if (arg == "--fidelity") {
      const auto f = parse_fidelity(value());
      if (!f) usage("--fidelity must be fast or pe");
      o.fidelity = *f;
    } else if (arg == "--rows") {
      o.params.rows = std::atoi(value().c_str());
    } else if (arg == "--cols") {
      o.params.cols = std::atoi(value().c_str());
    } else if (arg == "--dataflow") {
      const auto d = npusim::parse_dataflow(value());
      if (!d) usage("--dataflow must be ws, os or is");
      o.params.dataflow = *d;
    } else if (arg == "--type") {
      const std::string t = value();
      if (t != "int8" && t != "bf16") usage("--type must be int8 or bf16");
      o.bf16 = t == "bf16";
    } else if (arg == "--single-buffer") {
      o.params.weight_double_buffer = false;
    } else if (arg == "--budget-s") {
      o.budget_s = std::atof(value().c_str());
    } else {
      usage(("unknown argument " + arg).c_str());
    }
  }
  if (o.params.rows < 1 || o.params.cols < 1 || o.params.rows > 4096 || o.params.cols > 4096) {
    usage("--rows and --cols must be between 1 and 4096");
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const ArrayParams& p = o.params;
  auto model = make_array_model(p, o.fidelity);
  std::mt19937 rng(1);
  const auto start = std::chrono::steady_clock::now();
  const std::clock_t cpu_start = std::clock();
  const auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  double prepare_s = 0, prepare_cpu_s = 0;  // operand generation, excluded from the rates
  uint64_t issue = 0, tiles = 0, macs = 0, gemms_done = 0;
  bool stopped = false;
  for (const Gemm& g : resnet50_gemms()) {
    const auto prepare_start = std::chrono::steady_clock::now();
    const std::clock_t prepare_cpu_start = std::clock();
    std::vector<int8_t> a8, w8;
    std::vector<uint16_t> a16, w16;
    std::vector<int32_t> acc_int;
    std::vector<float> acc_float;
    if (o.bf16) {
      a16.resize(static_cast<size_t>(g.m) * g.k);
      w16.resize(static_cast<size_t>(g.k) * g.n);
      for (auto& x : a16) x = float_to_bf16(static_cast<float>(rng() % 255) / 64.0f - 2.0f);
      for (auto& x : w16) x = float_to_bf16(static_cast<float>(rng() % 255) / 64.0f - 2.0f);
      acc_float.assign(static_cast<size_t>(g.m) * g.n, 0.0f);
    } else {
      a8.resize(static_cast<size_t>(g.m) * g.k);
      w8.resize(static_cast<size_t>(g.k) * g.n);
      for (auto& x : a8) x = static_cast<int8_t>(rng());
      for (auto& x : w8) x = static_cast<int8_t>(rng());
      acc_int.assign(static_cast<size_t>(g.m) * g.n, 0);
    }
    prepare_cpu_s += static_cast<double>(std::clock() - prepare_cpu_start) / CLOCKS_PER_SEC;
    prepare_s +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - prepare_start).count();
    // Tile sizes per dataflow (the fit rule of array_model.hpp); the streamed dimension whole.
    const bool ws = p.dataflow == Dataflow::kWeightStationary;
    const bool os = p.dataflow == Dataflow::kOutputStationary;
    const int tm = ws ? g.m : (os ? p.rows : p.cols);
    const int tk = os ? g.k : p.rows;
    const int tn = p.dataflow == Dataflow::kInputStationary ? g.n : p.cols;
    for (int m0 = 0; m0 < g.m && !stopped; m0 += tm) {
      for (int n0 = 0; n0 < g.n && !stopped; n0 += tn) {
        for (int k0 = 0; k0 < g.k; k0 += tk) {
          const TileShape t{std::min(tm, g.m - m0), std::min(tk, g.k - k0), std::min(tn, g.n - n0)};
          TileTiming timing;
          if (o.bf16) {
            timing =
                model->execute_bf16(t,
                                    {&a16[static_cast<size_t>(m0) * g.k + k0], g.k,
                                     &w16[static_cast<size_t>(k0) * g.n + n0], g.n,
                                     &acc_float[static_cast<size_t>(m0) * g.n + n0], g.n, k0 > 0},
                                    issue);
          } else {
            timing =
                model->execute_int8(t,
                                    {&a8[static_cast<size_t>(m0) * g.k + k0], g.k,
                                     &w8[static_cast<size_t>(k0) * g.n + n0], g.n,
                                     &acc_int[static_cast<size_t>(m0) * g.n + n0], g.n, k0 > 0},
                                    issue);
          }
          issue = timing.next_issue_cycle;
          ++tiles;
          macs += static_cast<uint64_t>(t.m) * t.k * t.n;
        }
        if (o.budget_s > 0 && elapsed() - prepare_s > o.budget_s) stopped = true;
      }
    }
    if (!stopped) ++gemms_done;
    if (stopped) break;
  }
  const double wall = elapsed() - prepare_s;
  // CPU time of this process: on a shared machine the wall clock overstates the time.
  const double cpu = static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC - prepare_cpu_s;
  const uint64_t cycles = model->stats().last_done_cycle;
  std::printf(
      "fidelity=%s array=%dx%d dataflow=%s %s type=%s workload=resnet50%s layers=%llu tiles=%llu\n",
      to_string(o.fidelity), p.rows, p.cols, npusim::to_string(p.dataflow),
      p.weight_double_buffer ? "double-buffered" : "single-buffered", o.bf16 ? "bf16" : "int8",
      stopped ? "(partial: budget reached)" : "", static_cast<unsigned long long>(gemms_done),
      static_cast<unsigned long long>(tiles));
  std::printf(
      "  simulated_cycles=%llu macs=%llu utilization=%.3f wall_s=%.3f cpu_s=%.3f\n",
      static_cast<unsigned long long>(cycles), static_cast<unsigned long long>(macs),
      cycles ? static_cast<double>(macs) / (static_cast<double>(cycles) * p.rows * p.cols) : 0.0,
      wall, cpu);
  std::printf("  per wall second: simulated_cycles=%.4g macs=%.4g\n", cycles / wall, macs / wall);
  std::printf("  per cpu second:  simulated_cycles=%.4g macs=%.4g\n", cycles / cpu, macs / cpu);
  if (auto* pe = dynamic_cast<PeArrayModel*>(model.get())) {
    std::printf("  per cpu second:  pe_cycles=%.4g\n", pe->pe_cycles_stepped() / cpu);
  }
  return 0;
}
