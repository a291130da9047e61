// Fuzz target: the whole run path, as a user runs it (docs/fuzzing.md). The input is a workload,
// a JSON graph when its first non-blank byte is '{', else an ONNX model's bytes; it goes through
// `npusim run` (sim/cli.cpp): import, compile for a tiny chip, a short simulation with values on
// and the functional check, and every writer (stats.json, config.resolved.json, report.txt,
// layers.csv, trace.json, the HTML report, the VCD, --save-outputs) into a temporary directory.
//
// Accepted: exit 0, or exit 2 (a clear message about bad input). Exit 1 (an internal error, a
// functional mismatch, an output that could not be written) is a crash, as is anything a
// sanitizer reports. SystemC simulates one design per process, so the run is a forked child:
// libFuzzer sees the coverage of the parent's import (which decides the size), not the child's,
// and finds the run's failures by mutating inputs that import. Work is bounded before the run: a
// workload over kMaxMacs MACs, kMaxValues tensor values or kMaxLayers layers is skipped (refused
// inputs still run: their message is part of the path).
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <systemc>
#include <vector>

#include "compiler/frontend/json_graph.hpp"
#include "compiler/frontend/onnx_import.hpp"
#include "compiler/ir/graph.hpp"
#include "sim/cli.hpp"
#include "support/json_reader.hpp"
#include "tests/fuzz/fuzz_target.hpp"

namespace {

constexpr uint64_t kMaxMacs = uint64_t{1} << 20;
constexpr uint64_t kMaxValues = uint64_t{1} << 16;
constexpr size_t kMaxLayers = 48;

// The chip: an 8x8 array, small buffers, so tiling and the memory plan have work to do on small
// layers; the default (simple) off-chip memory keeps a run short.
constexpr const char* kTinyHw = R"({
  "schema_version": 1,
  "name": "fuzz-tiny",
  "matrix_unit": {"rows": 8, "cols": 8},
  "buffers": {
    "unified_buffer": {"capacity_bytes": 16384},
    "weight_buffer": {"capacity_bytes": 8192},
    "accumulators": {"capacity_bytes": 65536}
  }
})";

bool is_json(const std::string& bytes) {
  for (char c : bytes) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    return c == '{';
  }
  return false;
}

// Whether the workload is small enough to simulate; false also for one the readers refuse (the
// run below then refuses it too, through the same reader, and that is what it is fed for).
bool small_enough(const std::string& bytes, bool json) {
  npusim::Graph g;
  try {
    g = json ? npusim::parse_workload(npusim::parse_json_text(bytes, "fuzz.json"), "fuzz.json")
             : npusim::import_onnx_bytes(bytes, "fuzz.onnx", std::nullopt);
  } catch (const npusim::UserError&) {
    return true;
  }
  if (g.layers.size() > kMaxLayers || g.total_macs() > kMaxMacs) return false;
  uint64_t values = g.input_shape.elements();
  for (const auto& layer : g.layers) {
    values += layer.out_shape.elements();
    if (layer.has_weights()) values += layer.reduction() * uint64_t(layer.filters);
  }
  return values * uint64_t(g.batch) <= kMaxValues;
}

const std::filesystem::path& work_dir() {
  static const std::filesystem::path dir = [] {
    auto d =
        std::filesystem::temp_directory_path() / ("npusim-fuzz-run-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    std::ofstream(d / "hw.json") << kTinyHw;
    return d;
  }();
  return dir;
}

void write(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  if (!out) std::abort();
}

}  // namespace

// libsystemc.so refers to sc_main; npusim's own is in sim/main.cpp, not linked here.
int sc_main(int, char*[]) { return 0; }

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  const std::string bytes = npusim::fuzz::as_text(data, size);
  const bool json = is_json(bytes);
  if (!small_enough(bytes, json)) return 0;
  const std::filesystem::path& dir = work_dir();
  const std::filesystem::path workload = dir / (json ? "fuzz.json" : "fuzz.onnx");
  const std::filesystem::path out = dir / "out";
  std::filesystem::remove_all(out);
  write(workload, bytes);
  std::vector<std::string> args = {"run",
                                   "--hw",
                                   (dir / "hw.json").string(),
                                   "--workload",
                                   workload.string(),
                                   "--out",
                                   out.string(),
                                   "--format",
                                   "csv"};
  for (const char* flag : {"trace", "html", "vcd", "save-outputs"}) {
    args.push_back(std::string("--") + flag);
    args.push_back((out / flag).string());
  }
  args.push_back("--save-intermediates");
  // SystemC elaborates and simulates one design per process: each run is a child process. Its
  // exit status (or the signal that ended it: a sanitizer's report, a crash) decides.
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t child = fork();
  if (child < 0) std::abort();
  if (child == 0) {
    // stdout (the CSV) is not what is checked; keep the fuzzer's output readable.
    if (FILE* null = std::freopen("/dev/null", "w", stdout); null == nullptr) _exit(1);
    const int rc = npusim::cli_main(args);
    std::fflush(stdout);
    std::fflush(stderr);
    _exit(rc);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) std::abort();
  }
  if (WIFSIGNALED(status)) {
    std::fprintf(stderr, "fuzz_run: npusim run died of signal %d\n", WTERMSIG(status));
    std::abort();
  }
  const int rc = WEXITSTATUS(status);
  if (rc != 0 && rc != 2) {
    std::fprintf(stderr, "fuzz_run: npusim run exited %d (0 or 2 expected)\n", rc);
    std::abort();
  }
  return 0;
}
