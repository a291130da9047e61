#include "npusim/simulate.hpp"

#include <fmt/format.h>
#include <sys/resource.h>

#if defined(__SANITIZE_ADDRESS__)
#include <pthread.h>
#include <sanitizer/common_interface_defs.h>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "models/hazard_checker.hpp"
#include "models/soc.hpp"
#include "npusim/host_run.hpp"
#include "npusim/multicore_stats.hpp"
#include "npusim/power_stats.hpp"
#include "npusim/pruning_stats.hpp"
#include "npusim/tensor_check.hpp"
#include "npusim/tensor_io.hpp"
#include "support/error.hpp"
#include "support/stats.hpp"
#include "support/text_escape.hpp"

namespace npusim {

namespace {

using Interval = std::pair<uint64_t, uint64_t>;  // [first, end)

// The process's peak resident set (Linux reports ru_maxrss in KiB).
uint64_t peak_resident_bytes() {
  struct rusage usage {};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return uint64_t(usage.ru_maxrss) * 1024;
}

// Sorts and merges overlapping intervals in place.
void merge(std::vector<Interval>& v) {
  std::sort(v.begin(), v.end());
  size_t out = 0;
  for (const Interval& x : v) {
    if (x.first >= x.second) continue;
    if (out > 0 && x.first <= v[out - 1].second) {
      v[out - 1].second = std::max(v[out - 1].second, x.second);
    } else {
      v[out++] = x;
    }
  }
  v.resize(out);
}

uint64_t length(const std::vector<Interval>& v) {
  uint64_t n = 0;
  for (const Interval& x : v) n += x.second - x.first;
  return n;
}

// Length of the intersection of two merged interval lists.
uint64_t overlap(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  uint64_t n = 0;
  for (size_t i = 0, j = 0; i < a.size() && j < b.size();) {
    const uint64_t lo = std::max(a[i].first, b[j].first), hi = std::min(a[i].second, b[j].second);
    if (lo < hi) n += hi - lo;
    (a[i].second < b[j].second) ? ++i : ++j;
  }
  return n;
}

struct Activity {
  uint64_t dma = 0, compute = 0, both = 0;
};

// DMA and compute (matrix, vector; not the host's) activity of instructions [first, end): cycles
// with a DMA instruction in flight, with a compute instruction in flight, and with both.
void activity(const Program& program, const std::vector<InstructionTiming>& timings, uint32_t first,
              uint32_t end, uint64_t* dma, uint64_t* compute, uint64_t* both) {
  std::vector<Interval> d, c;
  for (uint32_t i = first; i < end; ++i) {
    const UnitKind u = program.instructions[i].unit;
    if (u == UnitKind::kLink) continue;  // neither off-chip traffic nor compute (interconnect.*)
    const Interval x{timings[i].start_cycle, timings[i].end_cycle};
    if (u == UnitKind::kDmaLoad || u == UnitKind::kDmaStore) {
      d.push_back(x);
    } else if (u == UnitKind::kMatrix || u == UnitKind::kVector) {
      c.push_back(x);
    }
  }
  merge(d);
  merge(c);
  *dma = length(d);
  *compute = length(c);
  *both = overlap(d, c);
}

// The simulated bytes of program.tensors[i] in sample order: in place when the tensor is one piece
// (off chip, or the copy core 0 captured while it was written resident in its unified buffer,
// models/tensor_shadows.hpp); gathered into `gathered` from every core's part otherwise.
const uint8_t* tensor_bytes(const Program& program, Soc& soc, size_t i,
                            std::vector<uint8_t>& gathered) {
  const TensorPlacement& t = program.tensors[i];
  const auto resident = [&](int core, size_t part) {
    return soc.cores.at(core)->shadows.bytes(i, part);
  };
  if (t.parts.empty()) {
    return t.buffer == BufferId::kUnified ? resident(0, 0)
                                          : soc.memory_contents().data() + t.dram_addr;
  }
  gathered = read_tensor(t, soc.memory_contents().data(), resident);
  return gathered.data();
}

// Per layer: its span and what each unit did in it, from the instruction timings and the units'
// per-layer counters.
std::vector<LayerStats> layer_stats(const Program& program, const Soc& soc) {
  const auto& timings = soc.scoreboard.timings();
  std::vector<const DmaEngine*> queues(soc.load_queues.begin(), soc.load_queues.end());
  queues.insert(queues.end(), soc.store_queues.begin(), soc.store_queues.end());
  std::vector<LayerStats> layers;
  for (size_t li = 0; li < program.layers.size(); ++li) {
    const LayerRecord& rec = program.layers[li];
    LayerStats s;
    if (rec.end_instruction > rec.first_instruction) {
      s.start_cycle = UINT64_MAX;
      for (uint32_t i = rec.first_instruction; i < rec.end_instruction; ++i) {
        s.start_cycle = std::min(s.start_cycle, timings[i].start_cycle);
        s.end_cycle = std::max(s.end_cycle, timings[i].end_cycle);
      }
    } else if (li > 0) {
      s.start_cycle = s.end_cycle = layers.back().end_cycle;
    }
    for (const auto& mxu : soc.matrix_units) {
      s.mxu_busy_cycles += mxu->layer_busy_cycles()[li];
      s.mxu_stall_cycles += mxu->layer_stall_cycles()[li];
    }
    for (const VectorUnit* vpu : soc.vector_units)
      s.vpu_busy_cycles += vpu->layer_busy_cycles()[li];
    for (const DmaEngine* q : queues) {
      s.dma_busy_cycles += q->layer_busy_cycles()[li];
      s.bank_conflict_cycles += q->layer_bank_conflict_cycles()[li];
    }
    activity(program, timings, rec.first_instruction, rec.end_instruction, &s.dma_active_cycles,
             &s.compute_active_cycles, &s.dma_compute_overlap_cycles);
    s.dma_exposed_cycles = s.dma_active_cycles - s.dma_compute_overlap_cycles;
    layers.push_back(s);
  }
  return layers;
}

double utilization(const HwConfig& hw, uint64_t macs, uint64_t cycles) {
  return cycles == 0 ? 0.0 : macs / (hw.chip_peak_macs_per_cycle() * cycles);
}

// Sum of one counter over a group of units.
template <class Units, class F>
uint64_t sum(const Units& units, F f) {
  uint64_t n = 0;
  for (const auto& u : units) n += f(*u);
  return n;
}

// Everything stats.json says, registered once (docs/stats.md is generated from these
// descriptions: `npusim run --list-stats`).
void register_run(stats::Registry& reg, const HwConfig& hw, const Program& program,
                  const RunDescription& run, const Soc& soc, const SimulationResult& r,
                  const std::vector<LayerStats>& layers, const Activity& total) {
  using stats::Registry;
  const double latency = double(r.total_cycles) / (hw.clock_mhz * 1e6);
  reg.value("npusim_stats_version", "", "version of this format", 1);
  reg.value("hardware", "", "hardware preset or file", run.hw_name);
  reg.value("workload", "", "zoo network or file", run.workload_name);
  reg.value("batch", "count", "inferences in the batch", program.batch);
  reg.value("seed", "", "seed of the generated parameters and input", run.seed);
  reg.value("fidelity", "", "matrix-unit model: fast or pe", run.fidelity);
  reg.value("values", "",
            "on: the units computed values and they were checked against the reference; off: "
            "timing only (the same cycles, no values, no check)",
            run.values ? "on" : "off");
  reg.value("clock_mhz", "MHz", "core clock", hw.clock_mhz);
  reg.value("dtype", "", "data type the network ran in: int8 or bf16", to_string(program.dtype));
  reg.value("quantization.calibration", "",
            "what int8 activation scales were calibrated on: input (the run's own batch), "
            "file:<path> (--calibration) or none (bf16, or a timing-only run)",
            run.calibration);
  reg.value("quantization.calibration_samples", "count", "samples in the calibration batch",
            run.calibration_samples);
  reg.value("quantization.calibration_method", "",
            "how a scale was chosen from the calibration values: max, percentile or none (bf16)",
            run.calibration_method);
  reg.value("quantization.weight_dtype", "",
            "weights of convolutions and dense layers: int8 or bf16 (the run's data type), or "
            "int4 (--weight-dtype int4: one scale per output channel, or with --weight-group "
            "per group, two to a byte off chip; int8 runs: integer group scales, layers with an "
            "odd number of filters keep int8; bf16 runs (W4A16): bf16 scales), or fp8-e4m3 / "
            "fp8-e5m2 (--dtype fp8-*: one byte a weight off chip)",
            run.weight_dtype.empty() ? std::string(to_string(program.dtype)) : run.weight_dtype);
  reg.value("quantization.calibration_percentile", "%",
            "percentile of the magnitudes mapped to 127 (0 unless the method is percentile)",
            run.calibration_percentile);
  reg.value("total_cycles", "cycles",
            "cycle at which the last instruction completed (the first starts at 0)",
            r.total_cycles);
  reg.value("latency_s", "s", "total_cycles / clock, for the whole batch", latency);
  reg.value("inferences_per_s", "1/s", "batch / latency_s",
            latency > 0 ? program.batch / latency : 0.0);
  reg.value("macs", "count", "multiply-accumulates executed by the matrix units", r.macs);
  reg.value("ops_per_s", "ops/s", "2 x macs / latency_s",
            latency > 0 ? 2.0 * r.macs / latency : 0.0);
  reg.value("mxu_utilization", "ratio", "macs / (total_cycles x rows x cols x count x cores)",
            utilization(hw, r.macs, r.total_cycles));
  reg.value("instructions", "count", "instructions in the program", program.instructions.size());

  const auto busy = [](const ExecutionUnit& u) { return u.stats().busy_cycles; };
  reg.value("units.mxu_busy_cycles", "cycles", "busy cycles of the matrix units, summed",
            sum(soc.matrix_units, busy));
  reg.value("units.vpu_busy_cycles", "cycles", "busy cycles of the vector units, summed",
            sum(soc.vector_units, busy));
  reg.value("units.dma_load_busy_cycles", "cycles", "busy cycles of the DMA load queues, summed",
            sum(soc.load_queues, busy));
  reg.value("units.dma_store_busy_cycles", "cycles", "busy cycles of the DMA store queues, summed",
            sum(soc.store_queues, busy));
  reg.value("dram.read_bytes", "bytes", "bytes read from off-chip memory", soc.memory_bytes_read());
  reg.value("dram.write_bytes", "bytes", "bytes written to off-chip memory",
            soc.memory_bytes_written());
  uint64_t parameter_bytes = 0;
  for (const auto& segment : program.dram_init) parameter_bytes += segment.size();
  reg.value("dram.parameter_bytes", "bytes",
            "weights, biases and normalization parameters the program keeps in off-chip memory",
            parameter_bytes);

  std::vector<const DmaEngine*> queues(soc.load_queues.begin(), soc.load_queues.end());
  queues.insert(queues.end(), soc.store_queues.begin(), soc.store_queues.end());
  reg.value("dma.bursts", "count",
            "transactions the DMA queues issued (one per DRAM burst, or per row with the simple "
            "memory)",
            sum(queues, [](const DmaEngine& q) { return q.bursts(); }));
  reg.value("dma.bank_conflict_cycles", "cycles",
            "cycles DMA loads lost to compute holding a buffer bank (docs/memory_system.md)",
            sum(queues, [](const DmaEngine& q) { return q.bank_conflict_cycles(); }));
  reg.value("dma.window_full_cycles", "cycles",
            "cycles a queue had a burst waiting for a free slot of its outstanding window",
            sum(queues, [](const DmaEngine& q) { return q.window_full_cycles(); }));
  reg.value("dma.active_cycles", "cycles", "cycles with a DMA instruction in flight", total.dma);
  reg.value("dma.compute_active_cycles", "cycles",
            "cycles with a matrix or vector instruction in flight", total.compute);
  reg.value("dma.compute_overlap_cycles", "cycles", "cycles with both DMA and compute in flight",
            total.both);
  reg.value("dma.exposed_cycles", "cycles", "cycles with DMA alone (DMA time compute did not hide)",
            total.dma - total.both);

  const FunctionalCheck& c = r.check;
  reg.value("functional_check.checked", "",
            "the outputs were compared with the reference (false with --values off: the figures "
            "below are then zero)",
            c.checked);
  reg.value("functional_check.bit_exact", "",
            "every value of every layer's output tensor equals the reference", c.bit_exact);
  reg.value("functional_check.tensors", "count",
            "tensors compared: every layer's output (off chip, or captured in the unified buffer)",
            c.tensors);
  reg.value("functional_check.first_mismatch", "",
            "the first layer (in program order) whose output fails the verdict, or empty",
            c.first_mismatch);
  reg.value("functional_check.within_tolerance", "",
            "the verdict: int8 every tensor bit-exact; bf16 every layer within its bound on the "
            "simulator's own inputs of that layer (docs/reliability.md)",
            c.within_tolerance);
  reg.value("functional_check.max_abs_error", "",
            "largest difference from the whole-graph reference (int8: in int8 steps, the verdict; "
            "bf16: in real values, information)",
            c.max_abs_error);
  reg.value("functional_check.max_relative_error", "ratio",
            "max_abs_error / range, worst tensor (whole-graph reference)", c.max_relative_error);
  reg.value("functional_check.mismatches", "count",
            "values that differ from the whole-graph reference", c.mismatches);
  reg.value("functional_check.bound_exceeded", "count",
            "values outside their layer's bound (bf16; int8: the mismatches)", c.bound_exceeded);
  reg.value("functional_check.max_bound_ratio", "ratio",
            "bf16: worst |simulated - layer reference| / allowed difference, over values with a "
            "nonzero bound (at most 1 when the check passes; 0 for int8)",
            c.max_bound_ratio);
  reg.value("functional_check.compared_values", "count", "values compared", c.compared);

  const size_t n = layers.size();
  const auto& recs = program.layers;
  const auto& L = layers;
  reg.column("layers", n, "name", "", "layer name", [&recs](size_t i) { return recs[i].name; });
  reg.column("layers", n, "op", "", "operator", [&recs](size_t i) { return recs[i].op; });
  reg.column("layers", n, "fused", "", "layers folded into it",
             [&recs](size_t i) { return recs[i].fused; });
  reg.column("layers", n, "cores", "count",
             "cores its instructions run on (several: split by output channels or data parallel)",
             [&recs](size_t i) { return recs[i].cores; });
  reg.column("layers", n, "parallel", "",
             "how it was spread over the cores: core 0, data, or tensor, with the estimate of an "
             "auto choice",
             [&recs](size_t i) { return recs[i].parallel; });
  reg.column("layers", n, "cycles", "cycles",
             "end_cycle - start_cycle: from its first instruction's start to its last completion "
             "(spans of neighbouring layers may overlap)",
             [L](size_t i) { return L[i].cycles(); });
  reg.column("layers", n, "start_cycle", "cycles", "start of its first instruction",
             [L](size_t i) { return L[i].start_cycle; });
  reg.column("layers", n, "end_cycle", "cycles", "completion of its last instruction",
             [L](size_t i) { return L[i].end_cycle; });
  reg.column("layers", n, "macs", "count",
             "multiply-accumulates of the matrix units (0 on a layer the host CPU runs)",
             [&recs](size_t i) { return recs[i].macs; });
  reg.column("layers", n, "mxu_utilization", "ratio", "macs / (cycles x peak MACs per cycle)",
             [L, &recs, &hw](size_t i) { return utilization(hw, recs[i].macs, L[i].cycles()); });
  reg.column("layers", n, "mxu_busy_cycles", "cycles", "matrix units' busy cycles, summed",
             [L](size_t i) { return L[i].mxu_busy_cycles; });
  reg.column("layers", n, "mxu_stall_cycles", "cycles",
             "matrix units waiting for their operands (mostly DMA)",
             [L](size_t i) { return L[i].mxu_stall_cycles; });
  reg.column("layers", n, "vpu_busy_cycles", "cycles", "vector unit's busy cycles",
             [L](size_t i) { return L[i].vpu_busy_cycles; });
  reg.column("layers", n, "dma_busy_cycles", "cycles", "DMA queues' busy cycles, summed",
             [L](size_t i) { return L[i].dma_busy_cycles; });
  reg.column("layers", n, "dma_active_cycles", "cycles", "cycles with its DMA in flight",
             [L](size_t i) { return L[i].dma_active_cycles; });
  reg.column("layers", n, "compute_active_cycles", "cycles", "cycles with its compute in flight",
             [L](size_t i) { return L[i].compute_active_cycles; });
  reg.column("layers", n, "dma_compute_overlap_cycles", "cycles", "cycles with both",
             [L](size_t i) { return L[i].dma_compute_overlap_cycles; });
  reg.column("layers", n, "dma_exposed_cycles", "cycles", "its DMA time not hidden behind compute",
             [L](size_t i) { return L[i].dma_exposed_cycles; });
  reg.column("layers", n, "bank_conflict_cycles", "cycles", "bank-conflict cycles of its loads",
             [L](size_t i) { return L[i].bank_conflict_cycles; });
  reg.column("layers", n, "dram_read_bytes", "bytes", "off-chip bytes its program reads",
             [&recs](size_t i) { return recs[i].dram_read_bytes; });
  reg.column("layers", n, "dram_write_bytes", "bytes", "off-chip bytes its program writes",
             [&recs](size_t i) { return recs[i].dram_write_bytes; });
  reg.column("layers", n, "dram_bytes_lower_bound", "bytes",
             "each input, weight and output byte once",
             [&recs](size_t i) { return recs[i].dram_bytes_lower_bound; });
  reg.column("layers", n, "tiling", "", "the tiling the compiler chose",
             [&recs](size_t i) { return recs[i].tiling; });
  // The host's figures, the only ones that differ between two runs of the same input: under one
  // key, and never in report.txt or the traces.
  reg.derived("host.wall_seconds", "s", "host time of the simulation",
              [&r] { return r.wall_seconds; });
  reg.value("host.hazard_check_seconds", "s",
            "host time of the hazard checker (models/hazard_checker.hpp), part of wall_seconds",
            r.hazard_check_seconds);
  reg.value(
      "host.functional_check_seconds", "s",
      "host time of the functional check (references and comparison, npusim/tensor_check.hpp), "
      "part of wall_seconds",
      r.functional_check_seconds);
  reg.derived("host.peak_memory_bytes", "bytes",
              "peak resident memory of the npusim process so far (getrusage ru_maxrss)",
              [] { return peak_resident_bytes(); });
}

// SystemC's VCD trace file at `path` (nothing if empty), written to "<path>.tmp.vcd" and renamed
// by finish(); a run that fails leaves no file behind.
struct VcdFile {
  explicit VcdFile(const std::string& path) : path_(path) {
    if (path_.empty()) return;
    file = sc_core::sc_create_vcd_trace_file((path_ + ".tmp").c_str());
    NPUSIM_CHECK(file != nullptr, "cannot create the VCD trace file {}.tmp.vcd", path_);
    file->set_time_unit(1, sc_core::SC_PS);
  }
  // After sc_start returned (nothing left to do): the trace file writes a time step's values when
  // time moves on, so one more idle cycle flushes the changes of the run's last cycle. Returns why
  // the file could not be put in place, or "": the run's other results are kept either way.
  std::string finish(const sc_core::sc_time& period) {
    if (!file) return "";
    sc_core::sc_start(period);
    sc_core::sc_close_vcd_trace_file(file);
    file = nullptr;
    blank_date(path_ + ".tmp.vcd");
    std::error_code ec;
    std::filesystem::rename(path_ + ".tmp.vcd", path_, ec);
    return ec ? fmt::format("--vcd '{}': cannot write: {}", path_, ec.message()) : "";
  }
  ~VcdFile() {
    if (!file) return;
    sc_core::sc_close_vcd_trace_file(file);
    std::error_code ec;
    std::filesystem::remove(path_ + ".tmp.vcd", ec);
  }
  sc_core::sc_trace_file* file = nullptr;

 private:
  // SystemC writes the wall-clock date into the header's `$date` section; blanking it in place
  // (the same number of bytes, spaces) keeps a run's VCD identical byte for byte to the next
  // run's (docs/reliability.md, "Same input, same bytes").
  static void blank_date(const std::string& file_path) {
    std::fstream f(file_path, std::ios::in | std::ios::out | std::ios::binary);
    NPUSIM_CHECK(f.good(), "cannot reopen the VCD trace file {}", file_path);
    std::string head(512, '\0');
    f.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<size_t>(f.gcount()));
    const size_t open = head.find("$date"), close = head.find("$end", open);
    NPUSIM_CHECK(open == 0 && close != std::string::npos, "{}: no $date section at its start",
                 file_path);
    std::string blank = head.substr(open + 5, close - open - 5);
    for (char& ch : blank) ch = ch == '\n' ? ch : ' ';
    f.clear();
    f.seekp(static_cast<std::streamoff>(open + 5));
    f.write(blank.data(), static_cast<std::streamsize>(blank.size()));
    NPUSIM_CHECK(f.good(), "cannot write the VCD trace file {}", file_path);
  }
  std::string path_;
};

#if defined(__SANITIZE_ADDRESS__)
// SystemC announces its coroutine switches to AddressSanitizer (__sanitizer_start_switch_fiber),
// but back on the main stack after sc_start, ASan still holds a coroutine's stack top as the main
// thread's: the span from there to the main stack is then too large for __asan_handle_no_return to
// clear before a throw ("ASan is ignoring requested __asan_handle_no_return", google/sanitizers
// #189), and the unwinder's writes into the frames a throw leaves behind are reported as false
// stack-buffer-overflows. Announcing a "switch" to the main stack itself puts its bounds back.
void restore_main_stack_bounds() {
  pthread_attr_t attr;
  NPUSIM_CHECK(pthread_getattr_np(pthread_self(), &attr) == 0, "pthread_getattr_np failed");
  void* bottom = nullptr;
  size_t size = 0;
  const int got = pthread_attr_getstack(&attr, &bottom, &size);
  pthread_attr_destroy(&attr);
  NPUSIM_CHECK(got == 0, "pthread_attr_getstack failed");
  void* fake_stack = nullptr;
  __sanitizer_start_switch_fiber(&fake_stack, bottom, size);
  __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
}
#else
void restore_main_stack_bounds() {}
#endif

// The SystemC simulation context of one run. SystemC 2.3 elaborates and runs one design per
// context, and the context is a process global (sc_curr_simcontext). The first run of a process
// uses the context SystemC made (a command-line run is the process's only one, as before); every
// later run, after a run or after one that failed during elaboration, gets a fresh context, deleted
// after the run's modules (declare it before them). Meanwhile it holds the process-wide lock, so
// runs from several threads take turns and each gives the result it gives alone.
class SimulationContext {
 public:
  SimulationContext() : lock_(mutex()) {
    static bool first = true;
    ExecutionUnit::clear_failure();
    if (first) {
      first = false;
      return;
    }
    previous_ = sc_core::sc_curr_simcontext;
    previous_default_ = sc_core::sc_default_global_context;
    context_ = new sc_core::sc_simcontext;
    sc_core::sc_curr_simcontext = context_;
    sc_core::sc_default_global_context = context_;
  }
  ~SimulationContext() {
    if (context_) {
      delete context_;
      sc_core::sc_curr_simcontext = previous_;
      sc_core::sc_default_global_context = previous_default_;
    }
    ExecutionUnit::clear_failure();
  }
  SimulationContext(const SimulationContext&) = delete;
  SimulationContext& operator=(const SimulationContext&) = delete;

 private:
  static std::mutex& mutex() {
    static std::mutex m;
    return m;
  }
  std::lock_guard<std::mutex> lock_;
  sc_core::sc_simcontext* context_ = nullptr;  // null: the process's first context, kept
  sc_core::sc_simcontext* previous_ = nullptr;
  sc_core::sc_simcontext* previous_default_ = nullptr;
};

}  // namespace

SimulationResult simulate(const HwConfig& hw, const Program& program, const Graph& graph,
                          const std::vector<uint8_t>& input, systolic::Fidelity fidelity,
                          const RunDescription& run, bool all_tensors, const Recording& recording,
                          const std::map<std::string, Tensor8>* reference) {
  const auto wall_start = std::chrono::steady_clock::now();
  NPUSIM_CHECK(input.size() == program.input.bytes(), "input has {} bytes, the program expects {}",
               input.size(), program.input.bytes());
  const SimulationContext context;  // outlives the Soc
  Soc soc("soc", hw, program, fidelity, run.values);
  write_tensor(program.input, input, soc.memory_contents().data());
  // Host layers compile for one core (a layer record per graph layer); a pipeline's records are
  // per micro-batch and it has no host layers.
  if (run.values && soc.host_cpu) soc.host.kernel = host_reference_kernel(program, graph);
  if (recording.timeline) soc.record_to(*recording.timeline);
  VcdFile vcd(recording.vcd_path);
  if (vcd.file) soc.trace_waveforms(vcd.file);

  ExecutionUnit::clear_failure();
  sc_core::sc_start();
  const std::string vcd_error = vcd.finish(soc.clock.period());
  restore_main_stack_bounds();  // before anything below throws
  if (auto failure = ExecutionUnit::failure()) std::rethrow_exception(failure);
  NPUSIM_CHECK(soc.scoreboard.all_done(),
               "simulation ended with {} of {} instructions completed: a dependency was never met. "
               "Units:{}",
               soc.scoreboard.completed(), program.instructions.size(), soc.describe_units());

  SimulationResult r;
  r.vcd_error = vcd_error;
  const auto& timings = soc.scoreboard.timings();
  // Always on: no instruction touched bytes before the instruction it depends on was done.
  const auto check_start = std::chrono::steady_clock::now();
  std::vector<Window> windows;
  windows.reserve(timings.size());
  for (const auto& t : timings) windows.push_back({t.start_cycle, t.end_cycle});
  if (const auto hazard = find_hazard(program, windows)) throw InternalError(hazard->message);
  r.hazard_check_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - check_start).count();
  for (const auto& t : timings) r.total_cycles = std::max(r.total_cycles, t.end_cycle);
  r.macs = sum(soc.matrix_units, [](const MatrixUnit& m) { return m.macs(); });
  NPUSIM_CHECK(r.macs == program.total_macs, "the matrix units executed {} MACs, the graph has {}",
               r.macs, program.total_macs);

  // Outputs from simulated off-chip memory, against the reference.
  for (const auto& out : program.outputs) {
    r.outputs.push_back(read_tensor(out, soc.memory_contents().data()));
  }
  const auto functional_start = std::chrono::steady_clock::now();
  // Every layer's output as the run left it: in simulated off-chip memory, or captured while it
  // was written in the unified buffer (a multi-part tensor gathered once, for the check and for
  // --save-intermediates).
  std::vector<std::vector<uint8_t>> gathered(program.tensors.size());
  std::vector<const uint8_t*> simulated(program.tensors.size(), nullptr);
  for (size_t i = 0; run.values && i < program.tensors.size(); ++i) {
    simulated[i] = tensor_bytes(program, soc, i, gathered[i]);
  }
  if (run.values) {
    std::map<std::string, const uint8_t*> kept;
    for (size_t i = 0; i < program.tensors.size(); ++i)
      kept[program.tensors[i].name] = simulated[i];
    check_tensors(
        graph, input,
        [&kept](const std::string& name) -> const uint8_t* {
          const auto it = kept.find(name);
          return it == kept.end() ? nullptr : it->second;
        },
        r.check, reference);
  }
  r.functional_check_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - functional_start).count();
  for (size_t i = 0; all_tensors && run.values && i < program.tensors.size(); ++i) {
    r.tensors.emplace_back(simulated[i], simulated[i] + program.tensors[i].bytes());
  }

  Activity total;
  activity(program, timings, 0, uint32_t(program.instructions.size()), &total.dma, &total.compute,
           &total.both);
  const std::vector<LayerStats> layers = layer_stats(program, soc);
  stats::Registry reg;
  register_run(reg, hw, program, run, soc, r, layers, total);
  register_pruning(reg, run);
  soc.register_stats(reg, hw, r.total_cycles);
  register_host_stats(reg, hw, program, soc);
  register_power_stats(reg, hw, program, soc, r.total_cycles, recording.timeline);
  r.descriptors = reg.descriptors();
  r.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  r.stats = reg.to_json();
  return r;
}

namespace {

// What the int8 scales were calibrated on, or nothing for bf16.
std::string calibration_line(const nlohmann::json& s) {
  if (!s.contains("quantization")) return "";
  const auto& q = s["quantization"];
  const std::string source = q["calibration"].get<std::string>();
  if (source == "none") return "";
  const std::string method = q["calibration_method"].get<std::string>();
  return fmt::format("  calibration        int8 scales from {} ({} samples), {}\n",
                     source == "input" ? std::string("the run's input") : source,
                     q["calibration_samples"].get<int>(),
                     method == "percentile" ? fmt::format("{:g}th percentile of |x|",
                                                          q["calibration_percentile"].get<double>())
                                            : "max |x|");
}

}  // namespace

std::string text_report(const nlohmann::json& s, bool per_layer) {
  const auto& c = s["functional_check"];
  const double latency = s["latency_s"].get<double>();
  std::string out = fmt::format(
      "npusim: {} on {} (batch {}, {}, seed {}, fidelity {}{})\n"
      "  total cycles       {}\n"
      "  latency            {:.3f} us at {} MHz\n"
      "  throughput         {:.1f} inferences/s\n"
      "  MACs               {}\n"
      "  MXU utilization    {:.2f} %\n"
      "  off-chip traffic   {} B read, {} B written\n"
      "  functional check   {}\n{}",
      printable_text(s["workload"].get<std::string>()),
      printable_text(s["hardware"].get<std::string>()), s["batch"].get<int>(),
      s["dtype"].get<std::string>(), s["seed"].get<uint64_t>(), s["fidelity"].get<std::string>(),
      s.value("values", "on") == "off" ? ", timing only" : "", s["total_cycles"].get<uint64_t>(),
      latency * 1e6, s["clock_mhz"].get<double>(), s["inferences_per_s"].get<double>(),
      s["macs"].get<uint64_t>(), 100.0 * s["mxu_utilization"].get<double>(),
      s["dram"]["read_bytes"].get<uint64_t>(), s["dram"]["write_bytes"].get<uint64_t>(),
      !c.value("checked", true)
          ? std::string("not run (--values off: timing only, no values computed)")
      : c["bit_exact"].get<bool>()
          ? fmt::format("outputs match the reference bit for bit, every layer's tensor too ({} "
                        "tensors, {} values)",
                        c["tensors"].get<uint64_t>(), c["compared_values"].get<uint64_t>())
      : c["within_tolerance"].get<bool>()
          ? fmt::format("outputs match the reference within each layer's bf16 bound on its own "
                        "simulated inputs, every layer's tensor too (worst {:.2g} of the bound; {} "
                        "tensors, {} values; against the whole-graph reference max relative error "
                        "{:.2g})",
                        c["max_bound_ratio"].get<double>(), c["tensors"].get<uint64_t>(),
                        c["compared_values"].get<uint64_t>(), c["max_relative_error"].get<double>())
          : fmt::format("MISMATCH from layer {} on: {} of {} values outside their layer's bound",
                        printable_text(c["first_mismatch"].get<std::string>()),
                        c["bound_exceeded"].get<uint64_t>(), c["compared_values"].get<uint64_t>()),
      calibration_line(s));
  const auto& m = s["memory"];
  if (m.value("model", "") == "dram") {
    out += fmt::format(
        "  off-chip memory    {} ({} channels): {:.1f} of {:.1f} GB/s, row hits {:.1f} %, {} ACT, "
        "{} REF, {:.2f} pJ/bit\n",
        m["preset"].get<std::string>(), m["channels"].get<int>(), m["bandwidth_gbps"].get<double>(),
        m["peak_bandwidth_gbps"].get<double>(), 100.0 * m["row_hit_rate"].get<double>(),
        m["act_commands"].get<uint64_t>(), m["ref_commands"].get<uint64_t>(),
        m["energy_pj_per_bit"].get<double>());
  }
  const auto& d = s["dma"];
  out +=
      fmt::format("  DMA / compute      {} DMA cycles, {} overlapped with compute, {} exposed\n",
                  d["active_cycles"].get<uint64_t>(), d["compute_overlap_cycles"].get<uint64_t>(),
                  d["exposed_cycles"].get<uint64_t>());
  if (per_layer) {
    out += fmt::format("\n  {:<16} {:<8} {:>12} {:>14} {:>8} {:>12} {:>12} {:>12}\n", "layer", "op",
                       "cycles", "MACs", "util %", "mxu stall", "dma exposed", "dram bytes");
    for (const auto& l : s["layers"]) {
      out += fmt::format(
          "  {:<16} {:<8} {:>12} {:>14} {:>8.2f} {:>12} {:>12} {:>12}\n",
          printable_text(l["name"].get<std::string>()), l["op"].get<std::string>(),
          l["cycles"].get<uint64_t>(), l["macs"].get<uint64_t>(),
          100.0 * l["mxu_utilization"].get<double>(), l["mxu_stall_cycles"].get<uint64_t>(),
          l["dma_exposed_cycles"].get<uint64_t>(),
          l["dram_read_bytes"].get<uint64_t>() + l["dram_write_bytes"].get<uint64_t>());
    }
  }
  if (s.contains("host_cpu") && s["host_cpu"]["layers"].get<uint64_t>() > 0) {
    const auto &h = s["host_cpu"], &k = s["link"];
    out += fmt::format(
        "  host CPU           {} layers, {} cycles computing; link {} B to the host, {} B back\n",
        h["layers"].get<uint64_t>(), h["busy_cycles"].get<uint64_t>(),
        k["to_host_bytes"].get<uint64_t>(), k["to_device_bytes"].get<uint64_t>());
    for (const auto& l : s["layers"]) {
      if (!per_layer || !l.value("on_host", false)) continue;
      out += fmt::format("    {:<16} on the host: {} cycles computing, {} cycles of link, {} B\n",
                         printable_text(l["name"].get<std::string>()),
                         l["host_cycles"].get<uint64_t>(), l["link_cycles"].get<uint64_t>(),
                         l["link_bytes"].get<uint64_t>());
    }
  }
  out += multicore_report(s);
  out += power_report(s, per_layer);
  return out;
}

}  // namespace npusim
