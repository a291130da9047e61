#include "npusim/compile_target.hpp"

#include <fmt/format.h>

#include <exception>
#include <filesystem>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <tuple>

#include "compiler/frontend/workload.hpp"
#include "compiler/lowering/data_parallel.hpp"
#include "compiler/lowering/lowering.hpp"
#include "compiler/passes/fp8.hpp"
#include "compiler/passes/fusion.hpp"
#include "compiler/passes/parameters.hpp"
#include "compiler/passes/w4a16.hpp"
#include "npusim/calibration.hpp"
#include "npusim/host_ops.hpp"
#include "npusim/tensor_check.hpp"
#include "npusim/tensor_io.hpp"
#include "npusim/token_ids.hpp"
#include "support/error.hpp"
#include "support/npy.hpp"

namespace npusim {

namespace {

std::optional<int> checked_batch(const Target& t) {
  if (t.batch && (*t.batch < 1 || *t.batch > 65536)) {
    throw UserError(fmt::format("--batch {}: expected 1 to 65536", *t.batch));
  }
  return t.batch;
}

std::optional<DataType> checked_dtype(const Target& t) {
  if (t.dtype.empty()) return std::nullopt;
  if (t.dtype == "fp8-e4m3" || t.dtype == "fp8-e5m2") return DataType::kBf16;  // checked_fp8
  if (t.dtype != "int8" && t.dtype != "bf16") {
    throw UserError(
        fmt::format("--dtype '{}': expected int8, bf16, fp8-e4m3 or fp8-e5m2", t.dtype));
  }
  return parse_data_type(t.dtype);
}

// --dtype fp8-e4m3 / fp8-e5m2: a bf16 run whose convolutions and dense layers multiply fp8
// (compiler/passes/fp8.hpp), on a matrix unit that lists the format in data_types.fp8.
Fp8Format checked_fp8(const Target& t, const HwConfig& hw) {
  if (t.dtype.rfind("fp8-", 0) != 0) return Fp8Format::kNone;
  const Fp8Format f = *parse_fp8_format(t.dtype.substr(4));
  if (!hw.data_types.has_fp8(f)) {
    throw UserError(fmt::format(
        "--dtype {}: the matrix unit of {} does not multiply fp8 {} (its data_types.fp8 does not "
        "list \"{}\"; tpu-v4-like-fp8 does)",
        t.dtype, hw.origin.empty() ? hw.name : hw.origin, to_string(f), to_string(f)));
  }
  if (!t.weight_dtype.empty() && t.weight_dtype != "bf16" && t.weight_dtype != t.dtype) {
    throw UserError(
        fmt::format("--weight-dtype {}: an {} run's weights are fp8", t.weight_dtype, t.dtype));
  }
  return f;
}

// --weight-dtype: true for int4 weights (int8 runs: W4A8; bf16 runs: W4A16).
bool checked_int4_weights(const Target& t, DataType run_dtype) {
  if (t.weight_dtype.empty() || t.weight_dtype == to_string(run_dtype)) return false;
  if (t.weight_dtype != "int4") {
    throw UserError(fmt::format("--weight-dtype '{}': expected {} (the run's data type) or int4",
                                t.weight_dtype, to_string(run_dtype)));
  }
  return true;
}

// --weight-group: the group size (0: per-channel scales), only with int4 weights.
int checked_weight_group(const Target& t, bool int4) {
  if (!t.weight_group) return 0;
  const int g = *t.weight_group;
  if (!int4) {
    throw UserError(fmt::format("--weight-group {}: group scales are for --weight-dtype int4", g));
  }
  if (g < 1 || g > 65536) {
    throw UserError(fmt::format("--weight-group {}: expected 1 to 65536 weights", g));
  }
  return g;
}

// int4 weights for every convolution and dense layer with weights. An int8 run's need an even
// number of filters (two to a byte along a row) on an array of an even number of columns (so that
// every DMA box of them starts and ends on a byte); the rest keep int8 (docs/compression.md). A
// bf16 run's (W4A16) are stored per box, whose nibbles may end mid-byte, so all take int4.
// `group`: their group size (--weight-group), 0 for per-channel scales.
void mark_int4_weights(Graph& graph, const HwConfig& hw, int group) {
  const bool bf16 = graph.dtype == DataType::kBf16;
  for (Layer& l : graph.layers) {
    l.int4_weights = (l.kind == OpKind::kConv || l.kind == OpKind::kDense) && l.has_weights() &&
                     (bf16 || (l.filters % 2 == 0 && hw.matrix_unit.cols % 2 == 0));
    l.weight_group = l.int4_weights ? group : 0;
  }
}

// --compress-weights: off, auto (bitmap or CSR-like) or huffman (those or the Huffman format).
enum class WeightCompression { kOff, kAuto, kHuffman };
WeightCompression checked_compress_weights(const Target& t) {
  if (t.compress_weights.empty() || t.compress_weights == "off") return WeightCompression::kOff;
  if (t.compress_weights == "auto") return WeightCompression::kAuto;
  if (t.compress_weights == "huffman") return WeightCompression::kHuffman;
  throw UserError(
      fmt::format("--compress-weights '{}': expected auto, huffman or off", t.compress_weights));
}

// Compression candidates: every convolution and dense layer whose weights are held in memory (a
// model file's, pruned ones, or drawn for a float32 reference), int8 or bf16; the lowering keeps
// a layer dense unless its boxes shrink (compiler/lowering/weight_compression.cpp). Generated
// weights drawn on demand are dense by construction and are not drawn only to find that out.
void mark_compressed_weights(Graph& graph, WeightCompression mode) {
  for (Layer& l : graph.layers) {
    l.compress_weights = (l.kind == OpKind::kConv || l.kind == OpKind::kDense) && l.has_weights() &&
                         !l.weights.empty() && !l.int4_weights;
    l.huffman_weights = l.compress_weights && mode == WeightCompression::kHuffman;
  }
}

Parallelism checked_parallelism(const Target& t) {
  const std::optional<Parallelism> p = parse_parallelism(t.parallel);
  if (!p) {
    throw UserError(
        fmt::format("--parallel '{}': expected data, tensor, pipeline or auto", t.parallel));
  }
  return *p;
}

// Images per micro-batch of a pipeline: only with parallel "pipeline", at least 1.
int checked_micro_batch(const Target& t, Parallelism parallel) {
  if (!t.micro_batch) return 1;
  const int n = *t.micro_batch;
  if (parallel != Parallelism::kPipeline) {
    throw UserError(fmt::format("--micro-batch {}: micro-batches are for --parallel pipeline", n));
  }
  if (n < 1) throw UserError(fmt::format("--micro-batch {}: expected at least 1 image", n));
  return n;
}

// A timing-only run's workload after the steps that do not depend on the hardware (loaded, its
// generated parameters and input drawn, optimized, quantized for timing): the same for every point
// of a sweep over hardware, so a process that runs many keeps the last few and copies one instead
// of doing the steps again. Only for what a key names completely: a zoo network, or a file as long
// as its time and size are the same (an edited file is read again); a generated input; no
// calibration file and no host layers (pin_host_ops reads the hardware).
struct TimingGraph {
  Graph graph;
  std::vector<uint8_t> input;
  std::vector<float> input_real;
  std::vector<WeightSparsity> weight_sparsity;
};

using TimingKey = std::tuple<std::string, int64_t, uintmax_t, std::optional<int>, uint64_t, int>;

std::optional<TimingKey> timing_key(const Target& t, std::optional<int> batch, DataType dtype) {
  int64_t time = 0;
  uintmax_t size = 0;
  std::error_code ec;
  if (std::filesystem::exists(t.workload, ec)) {
    time = std::filesystem::last_write_time(t.workload, ec).time_since_epoch().count();
    size = std::filesystem::file_size(t.workload, ec);
    if (ec) return std::nullopt;
  }
  return TimingKey{t.workload, time, size, batch, t.seed, int(dtype)};
}

class TimingGraphCache {
 public:
  std::shared_ptr<const TimingGraph> find(const TimingKey& key) {
    const std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->first != key) continue;
      entries_.splice(entries_.begin(), entries_, it);  // most recently used first
      return entries_.front().second;
    }
    return nullptr;
  }
  void add(const TimingKey& key, std::shared_ptr<const TimingGraph> graph) {
    const std::lock_guard<std::mutex> lock(mutex_);
    entries_.emplace_front(key, std::move(graph));
    if (entries_.size() > kEntries) entries_.pop_back();
  }

 private:
  static constexpr size_t kEntries = 4;  // a sweep's workloads (resnet50's graph is ~25 MB)
  std::mutex mutex_;
  std::list<std::pair<TimingKey, std::shared_ptr<const TimingGraph>>> entries_;
};

TimingGraphCache& timing_graph_cache() {
  static TimingGraphCache cache;
  return cache;
}

}  // namespace

namespace {
Compiled finish_compile(Compiled c, const Target& t, const std::string& hw_spec,
                        Parallelism parallel, int micro_batch, bool int8, bool values,
                        bool keep_real_weights, const LayerCores* cores = nullptr);
}  // namespace

namespace {
// docs/onnx.md "Rank mapping": an ONNX model run as one whole tensor holds its batch in axis 0 of
// its input; a symbolic one is --batch, else the --input file's axis 0. The import resolves it to
// 1 without --batch: when the file holds another batch, or the model does not import that way
// (an initial state made for the file's batch), it is imported again with the file's.
Graph load_with_input_batch(const Target& t, std::optional<int> batch) {
  const std::string& w = t.workload;
  const bool onnx = w.size() > 5 && w.compare(w.size() - 5, 5, ".onnx") == 0;
  std::optional<int> file_batch;
  if (!batch && onnx && !t.input_npy.empty()) {
    try {
      const std::vector<int64_t> shape = read_npy(t.input_npy).shape;
      if (shape.size() > 1 && shape[0] > 1) file_batch = static_cast<int>(shape[0]);
    } catch (const UserError&) {  // read_input_npy reports it, naming --input
    }
  }
  if (!file_batch) return load_workload(w, batch);
  std::exception_ptr first;
  try {
    Graph g = load_workload(w, batch);
    const std::vector<int>& dims = g.input_shape.dims;
    if (!g.io_without_batch || dims.size() < 2 || dims[0] == *file_batch) return g;
  } catch (const UserError&) {
    first = std::current_exception();
  }
  try {
    return load_workload(w, file_batch);
  } catch (const UserError&) {
    if (first) std::rethrow_exception(first);
    throw;
  }
}
}  // namespace

HwConfig target_hardware(const Target& t) {
  HwConfig hw = t.hw_description ? parse_hw_config(*t.hw_description, t.hw.empty() ? "hw" : t.hw)
                                 : load_hw_config(t.hw);
  if (t.memory_fidelity.empty()) return hw;
  if (t.memory_fidelity != "command" && t.memory_fidelity != "bulk") {
    throw UserError(
        fmt::format("--memory-fidelity '{}': expected command or bulk", t.memory_fidelity));
  }
  if (hw.memory.model != MemoryModel::kDram) {
    throw UserError(fmt::format(
        "--memory-fidelity {}: hardware '{}' has memory.model \"simple\"; the fidelity applies "
        "to the \"dram\" model",
        t.memory_fidelity, hw.name));
  }
  hw.memory.fidelity =
      t.memory_fidelity == "bulk" ? MemoryFidelity::kBulk : MemoryFidelity::kCommand;
  return hw;
}

Compiled load_and_compile(const Target& t, bool keep_real_weights, bool values) {
  const std::optional<int> batch = checked_batch(t);
  const std::optional<DataType> dtype = checked_dtype(t);
  const Parallelism parallel = checked_parallelism(t);
  const int micro_batch = checked_micro_batch(t, parallel);
  const CalibrationRequest calibration =
      calibration_request(t.calibration_file, t.calibration_method, t.calibration_percentile);
  const std::string hw_spec = t.hw.empty() ? "hw" : t.hw;
  Compiled c;
  c.hw = target_hardware(t);
  const DataType run_dtype = dtype.value_or(c.hw.data_types.activation);
  const bool int8 = run_dtype == DataType::kInt8;
  std::optional<TimingKey> key;
  const PruneSpec prune = t.prune.empty() ? PruneSpec{} : parse_prune_spec(t.prune);
  const Fp8Format fp8 = checked_fp8(t, c.hw);
  const bool int4 = fp8 == Fp8Format::kNone && checked_int4_weights(t, run_dtype);
  const int group = checked_weight_group(t, int4);
  const WeightCompression compress = checked_compress_weights(t);
  if (!values && int8 && !keep_real_weights && t.input_npy.empty() && calibration.file.empty() &&
      t.host_ops.empty() && prune.kind == PruneSpec::Kind::kNone && !int4 &&
      compress == WeightCompression::kOff) {
    key = timing_key(t, batch, run_dtype);
  }
  if (key) {
    std::shared_ptr<const TimingGraph> prepared = timing_graph_cache().find(*key);
    if (!prepared) {
      auto fresh = std::make_shared<TimingGraph>();
      fresh->graph = load_workload(t.workload, batch);
      fresh->graph.dtype = run_dtype;
      materialize_parameters(fresh->graph, t.seed, WeightStorage::kOnDemand);
      fresh->weight_sparsity = weight_sparsity(fresh->graph);
      InputBatch in = fresh->graph.input_ids ? random_ids(fresh->graph, t.seed)
                                             : random_input(fresh->graph, t.seed);
      fresh->input = std::move(in.bytes);
      fresh->input_real = std::move(in.real);
      optimize_graph(fresh->graph);
      quantize_graph_for_timing(fresh->graph);
      for (Layer& l : fresh->graph.layers) std::vector<float>().swap(l.weights);
      prepared = fresh;
      timing_graph_cache().add(*key, prepared);
    }
    c.graph = prepared->graph;
    c.input = prepared->input;
    c.input_real = prepared->input_real;
    c.weight_sparsity = prepared->weight_sparsity;
    return finish_compile(std::move(c), t, hw_spec, parallel, micro_batch, int8, values,
                          keep_real_weights);
  }
  c.graph = load_with_input_batch(t, batch);
  c.graph.dtype = run_dtype;
  if (!calibration.file.empty() && !int8) {
    throw UserError(
        fmt::format("--calibration {}: only int8 runs calibrate scales, this one runs in bf16",
                    calibration.file));
  }
  // Before any file may set the input scale: generated weights depend on the seed and the graph
  // only, so runs that calibrate differently run the same network. They are drawn when quantized,
  // never all at once (VGG-16's are 553 MB), unless the float32 reference needs them.
  materialize_parameters(c.graph, t.seed,
                         keep_real_weights ? WeightStorage::kStored : WeightStorage::kOnDemand);
  // Pruning needs every weight of a layer at once, so it draws generated ones into memory.
  prune_weights(c.graph, prune);
  if (prune.kind != PruneSpec::Kind::kNone) c.prune = prune.text;
  c.weight_sparsity = weight_sparsity(c.graph);
  std::optional<CalibrationBatch> separate;
  if (!calibration.file.empty()) separate = read_calibration_npy(calibration, c.graph);
  if (c.graph.input_ids && separate) {
    throw UserError(
        fmt::format("--calibration {}: the model's input '{}' holds token ids: its "
                    "scales come from the embedding table, not a calibration batch",
                    calibration.file, c.graph.input_name));
  }
  const std::string& input_npy = t.input_npy;
  InputBatch in =
      c.graph.input_ids ? (input_npy.empty() ? random_ids(c.graph, t.seed)
                                             : read_ids_npy(input_npy, c.graph, batch.has_value()))
      : input_npy.empty()
          ? random_input(c.graph, t.seed)
          : read_input_npy(input_npy, c.graph, batch.has_value(),
                           separate ? std::nullopt : std::optional(calibration.options));
  c.input = std::move(in.bytes);
  c.input_real = std::move(in.real);
  optimize_graph(c.graph);
  if (int4) {
    mark_int4_weights(c.graph, c.hw, group);
    c.weight_dtype = "int4";
  }
  if (compress != WeightCompression::kOff) mark_compressed_weights(c.graph, compress);
  pin_host_ops(c.graph, c.hw, t.host_ops, hw_spec);
  if (!int8) {
    prepare_bf16(c.graph, /*weights=*/values || keep_real_weights);
    if (int4) prepare_w4a16(c.graph, /*weights=*/values || keep_real_weights);
    if (fp8 != Fp8Format::kNone) {
      const TensorF batch_in = values ? bf16_input(c.graph, c.input) : TensorF{};
      prepare_fp8(c.graph, fp8, values || keep_real_weights, values ? &batch_in : nullptr);
      c.weight_dtype = t.dtype;
    }
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
  return finish_compile(std::move(c), t, hw_spec, parallel, micro_batch, int8, values,
                        keep_real_weights);
}

Compiled compile_graph(const HwConfig& hw, Graph graph, std::vector<uint8_t> input,
                       std::vector<float> input_real, const Target& t, bool values,
                       const LayerCores* cores) {
  const std::optional<DataType> dtype = checked_dtype(t);
  const Parallelism parallel = checked_parallelism(t);
  const int micro_batch = checked_micro_batch(t, parallel);
  Compiled c;
  c.hw = hw;
  c.graph = std::move(graph);
  c.graph.dtype = dtype.value_or(c.hw.data_types.activation);
  const bool int8 = c.graph.dtype == DataType::kInt8;
  materialize_parameters(c.graph, t.seed, WeightStorage::kOnDemand);
  if (!t.prune.empty()) {
    const PruneSpec prune = parse_prune_spec(t.prune);
    prune_weights(c.graph, prune);
    c.prune = prune.text;
    c.weight_sparsity = weight_sparsity(c.graph);
  }
  c.input = std::move(input);
  c.input_real = std::move(input_real);
  optimize_graph(c.graph);
  const Fp8Format fp8 = checked_fp8(t, c.hw);
  const bool int4 = fp8 == Fp8Format::kNone && checked_int4_weights(t, c.graph.dtype);
  const int group = checked_weight_group(t, int4);
  if (int4) {
    mark_int4_weights(c.graph, c.hw, group);
    c.weight_dtype = "int4";
  }
  const WeightCompression compress = checked_compress_weights(t);
  if (compress != WeightCompression::kOff) mark_compressed_weights(c.graph, compress);
  if (!int8) {
    // Timing only: the matrix layers' weights stay undrawn (llama-7b-like's are 13.5 GB in bf16).
    prepare_bf16(c.graph, /*weights=*/values);
    if (int4) prepare_w4a16(c.graph, /*weights=*/values);
    if (fp8 != Fp8Format::kNone) {
      const TensorF batch_in = values ? bf16_input(c.graph, c.input) : TensorF{};
      prepare_fp8(c.graph, fp8, values, values ? &batch_in : nullptr);
      c.weight_dtype = t.dtype;
    }
  } else if (values) {
    const CalibrationOptions options;
    quantize_graph(c.graph, std::vector<int8_t>(c.input.begin(), c.input.end()), c.graph.batch,
                   options, &c.reference);
    c.calibration = "input";
    c.calibration_samples = c.graph.batch;
    c.calibration_options = options;
  } else {
    quantize_graph_for_timing(c.graph);
  }
  return finish_compile(std::move(c), t, t.hw.empty() ? "hw" : t.hw, parallel, micro_batch, int8,
                        values, false, cores);
}

namespace {

// Fusion and compilation for the hardware, from the quantized (or bf16) graph.
Compiled finish_compile(Compiled c, const Target& t, const std::string& hw_spec,
                        Parallelism parallel, int micro_batch, bool int8, bool values,
                        bool keep_real_weights, const LayerCores* cores) {
  // From here on the int8 or bf16 weights stand for the given float ones; an N:M sparse matrix
  // unit's compiler still reads which layers have the structure from them (has_nm_structure).
  if (!keep_real_weights) {
    const MatrixUnitConfig& mu = c.hw.matrix_unit;
    for (Layer& l : c.graph.layers) {
      if (mu.sparse_n > 0 && has_nm_structure(l, mu.sparse_n, mu.sparse_m)) continue;
      std::vector<float>().swap(l.weights);
    }
  }
  const int element_bytes = c.graph.dtype == DataType::kBf16 ? 2 : 1;
  fuse_epilogues(c.graph, [&](const Layer& l) {
    // A layer pinned to the host stays a layer of its own, and nothing joins a host layer.
    if (l.on_host || (!l.epilogue.empty() && l.epilogue.back().on_host)) return false;
    // A layer placed on a core joins a layer on the same core only.
    if (cores && !l.epilogue.empty() && cores->core(l.epilogue.back().name) != cores->core(l.name))
      return false;
    return matrix_layer_fits(c.hw, l, c.graph.batch, element_bytes);
  });
  CompileResult result = cores ? compile_placed(c.graph, c.hw, *cores)
                               : compile_parallel(c.graph, c.hw, parallel, micro_batch);
  if (!result.ok) throw UserError(fmt::format("{} on {}: {}", t.workload, hw_spec, result.reason));
  c.program = std::move(result.program);
  // The program holds the int8 weights now; only the reference reads the graph's copy, and it
  // has run already (the calibration's tensors) or will not run (timing only).
  // A host layer's weights stay: the host computes it with the reference (npusim/host_run.hpp).
  if (int8 && (!values || !c.reference.empty())) {
    for (size_t i = 0; i < c.graph.layers.size(); ++i) {
      if (!c.program.layers[i].on_host) std::vector<int8_t>().swap(c.graph.layers[i].qweights);
    }
  }
  return c;
}

}  // namespace

}  // namespace npusim
