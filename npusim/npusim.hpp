// npusim as a library: the one public header. A run is options in, a result out: its stats.json
// (the stats registry), its output tensors, its per-layer records, and what it can still write
// (trace JSON, HTML report). The command line (sim/) and the Python module (python/) are
// argument parsing and printing over these functions (docs/python.md, DESIGN.md "Layers").
//
// Contract:
// - Bad input (a preset or file that does not exist, a JSON pointer with a bad value, a flag value
//   out of range, a workload that does not fit) throws InputError whose message names the file,
//   pointer or option as the command line does ("--hw 'x': ..."); the CLI prints it and exits 2.
//   A broken invariant throws InternalError (a bug in npusim). Nothing here prints or exits.
// - Every run() elaborates its SystemC design in a simulation context of its own (the process's
//   first run in the one SystemC made, every later run in a fresh one, deleted after the run), so
//   a process may run any number of designs one after the other and each gives the result it
//   gives alone. The context is process-global in SystemC 2.3: run() holds a process-wide mutex
//   while it simulates, so the simulations of runs from several threads take turns.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "support/error.hpp"

namespace npusim {

// A user's bad input: the located message the command line prints after "npusim: error: ".
using InputError = UserError;

// What to compile: the hardware, the network and everything that shapes the program.
struct Target {
  std::string hw;  // a preset name (presets()) or a JSON file
  // Instead of a file: the description itself; `hw` then only names it in messages ("hw" if
  // empty).
  std::optional<nlohmann::json> hw_description;
  std::string workload;            // a zoo name (zoo()), a JSON graph file or an .onnx model
  std::optional<int> batch;        // overrides the workload's, 1 to 65536
  uint64_t seed = 1;               // of the generated parameters (and input, without input_npy)
  std::string dtype;               // "int8", "bf16", or "" for the hardware's data_types.activation
  std::string input_npy;           // the input batch as .npy (docs/onnx.md), or "" for a random one
  std::string parallel = "auto";   // data, tensor, pipeline or auto (docs/multicore.md)
  std::optional<int> micro_batch;  // images per micro-batch, with parallel "pipeline" only
  std::string host_ops;            // NAME,...: layers pinned to the host CPU
  // int8 activation scales: calibrated on this .npy instead of the input, with this method (max
  // or percentile) and percentile (50 to 100, method percentile only).
  std::string calibration_file;
  std::string calibration_method = "max";
  std::optional<double> calibration_percentile;
  // Weight pruning before quantization (docs/compression.md): "" (none), "magnitude:F",
  // "global:F" or "N:M".
  std::string prune;
  // Weights of convolutions and dense layers (docs/compression.md): "" or the run's data type,
  // or "int4" (weight-only int4 stored two to a byte off chip with per-channel scales: W4A8 in
  // int8 runs, W4A16 with bf16 scales in bf16 runs).
  std::string weight_dtype;
  // With weight_dtype int4: a scale per group of this many consecutive weights along the
  // reduction axis and output channel (docs/compression.md); none: one scale per output channel.
  std::optional<int> weight_group;
  // Weights stored compressed off chip (docs/compression.md): "" or "off", or "auto" (each
  // convolution and dense layer whose stored weights shrink in the bitmap or CSR-like format).
  std::string compress_weights;
  // How the DRAM model simulates (docs/memory_system.md, "Memory fidelity"): "" keeps the
  // hardware's memory.fidelity, "command" or "bulk" overrides it (memory.model "dram" only).
  std::string memory_fidelity;
};

// Which part of a run the recorded timeline keeps (docs/traces.md).
struct TraceFilter {
  std::vector<std::string> layers;  // layer names (a pipeline's name selects every micro-batch)
  uint64_t window_start = 0, window_end = UINT64_MAX;  // instructions overlapping these cycles
  bool bursts = false;                                 // also every DMA burst and DRAM command
};

struct RunOptions : Target {
  std::string fidelity = "fast";  // fast or pe
  // false: timing only (the same cycles, no values, no check, no outputs).
  bool values = true;
  bool intermediates = false;  // also every layer's output tensor (RunResult::intermediates)
  bool float_outputs = false;  // also the float32 reference's outputs (RunResult::float_outputs)
  // Record the timeline for RunResult::write_trace_json / write_html (costs time and memory).
  bool record_trace = false;
  TraceFilter trace_filter;
  std::string vcd_path;  // SystemC waveforms to this file (written during the run)
};

// A tensor as --save-outputs writes it: float32 real values in the graph's file layout (channels
// last for JSON graphs, channels first for ONNX models), [batch, ...].
struct Tensor {
  std::string name;  // the graph's tensor name
  // The name with bytes other than [A-Za-z0-9._-] made '_', and ~2, ~3 ... where two tensors of a
  // run would otherwise share a file (docs/reliability.md "Names are bytes").
  std::string file_name;
  std::vector<int64_t> shape;
  std::vector<float> values;  // C order
};

// One figure of stats.json: its path ("dram.read_bytes", "layers[].cycles"), unit and meaning.
struct StatDescriptor {
  std::string path, unit, description;
};

struct RunRecording;  // what a run keeps to write its traces afterwards (opaque)

struct RunResult {
  nlohmann::json stats;               // stats.json
  nlohmann::json hardware;            // the resolved hardware description (config.resolved.json)
  std::vector<Tensor> outputs;        // the graph's outputs, in Program order
  std::vector<Tensor> intermediates;  // with RunOptions::intermediates
  std::vector<Tensor> float_outputs;  // with RunOptions::float_outputs
  std::vector<StatDescriptor> descriptors;
  double wall_seconds = 0.0;  // host time of the simulation
  // The functional check failed: the message the CLI prints (a bug in npusim), else empty.
  std::string mismatch;
  // "file.npy <- name" for each tensor of outputs + intermediates (one directory), and of
  // float_outputs, whose file got a ~k suffix; the names escaped for a terminal.
  std::vector<std::string> renamed_files, renamed_float_files;
  // The VCD file (RunOptions::vcd_path) could not be written: why; the run's results stand.
  std::string vcd_error;
  std::shared_ptr<const RunRecording> recording;  // with RunOptions::record_trace

  // The per-layer records, stats["layers"].
  const nlohmann::json& layers() const { return stats.at("layers"); }
  // report.txt (per_layer: with the per-layer tables).
  std::string report(bool per_layer) const;
  // Every scalar per-layer figure as CSV (--format csv).
  std::string layers_csv() const;
  // The Chrome/Perfetto trace JSON and the HTML report of a run with record_trace; InputError if
  // the run recorded no trace or the file cannot be written.
  void write_trace_json(const std::string& path) const;
  void write_html(const std::string& path) const;
};

// Compiles and simulates.
RunResult run(const RunOptions& options);

// The program as assembly (npusim compile).
std::string compile(const Target& target);

// A hardware description checked, and a network compiled on it (npusim validate).
struct Validation {
  std::string hw_name;
  bool has_workload = false;
  std::string network;
  size_t layers = 0;  // after fusion
  uint64_t macs = 0;
  int batch = 0;
  size_t instructions = 0;
};
Validation validate(const Target& target);  // target.workload may be empty

struct PresetInfo {
  std::string name, headline, description;
  std::vector<std::pair<std::string, std::string>> facts;  // label, value
  std::string listing;                                     // the entry `npusim presets` prints
};
std::vector<PresetInfo> presets();
// A preset or hardware file resolved, every default filled in (npusim presets --show).
nlohmann::json resolved_hardware(const std::string& hw);

// Autoregressive generation with a decoder-only transformer (docs/llm.md): a prefill program over
// the prompt, then one decode-step program per further token, the KV cache in off-chip memory,
// greedy sampling. `workload` is a built-in decoder (decoders()) or a decoder JSON file; `batch`
// sequences (default 1, or the --input file's); `input_npy`: the prompt ids [batch, prompt] (int32
// or int64), else drawn from the seed; `weights`: a safetensors file with Hugging Face's names,
// else weights drawn from the seed. RunOptions' fidelity, values, dtype and parallel apply to
// every program; its trace, intermediates, host_ops and calibration options are not taken.
struct GenerateOptions : RunOptions {
  int prompt_tokens = 16;
  int new_tokens = 8;
  std::string weights;  // a .safetensors file, or "" for seeded weights
  // With record_trace (and trace_filter, per program): the programs traced, "all" or a list of
  // prefill, decode, last and decode step numbers (npusim/generation_trace.hpp).
  std::string trace_steps = "all";
};

struct GenerateResult {
  // stats.json: "generation" (the figures of docs/llm.md), "steps" (one record per program:
  // prefill, then each decode step), "prefill" (the prefill run's own stats.json).
  nlohmann::json stats;
  std::vector<int32_t> tokens;  // generated ids, [batch][new_tokens] row-major
  std::vector<int32_t> prompt;  // the prompt ids, [batch][prompt_tokens]
  // With values: the simulated logits each id was sampled from, [new_tokens][batch][vocab].
  std::vector<float> logits;
  int vocab = 0;
  int batch = 1, new_tokens = 0, prompt_tokens = 0;
  double wall_seconds = 0.0;
  // A program's functional check failed, or a sampled id differs from the reference's greedy
  // id: the message the CLI prints (a bug in npusim), else empty.
  std::string mismatch;
  // With record_trace: the Chrome / Perfetto trace JSON of the traced programs, one after the
  // other (docs/llm.md, "Traces and the HTML report").
  std::string trace_json;
  std::string report() const;  // report.txt: the summary and a line per step
  std::string html() const;    // the HTML report (npusim generate --html)
  // Write the trace (InputError without record_trace) and the HTML report through a temporary
  // file; a path that cannot be written is an InputError.
  void write_trace_json(const std::string& path) const;
  void write_html(const std::string& path) const;
};
GenerateResult generate(const GenerateOptions& options);

// LLM serving (docs/serving.md): the requests of a trace (CSV: id, arrival_s, prompt_tokens,
// output_tokens) scheduled with continuous batching over a paged KV cache, each step priced by the
// decoder's simulated prefill and decode-step programs (timing only: `values` must be false).
// `workload` is a decoder as for generate; RunOptions' hw, dtype, parallel and fidelity apply.
struct ServeOptions : RunOptions {
  std::string trace;           // the request trace (CSV)
  int max_batch = 32;          // requests running at once
  int kv_block_tokens = 16;    // tokens per KV-cache block
  int max_step_tokens = 2048;  // tokens per step: one per decoding request, the rest prefill
  // Off-chip bytes for the KV cache; default 90 % of the memory less the weights.
  std::optional<uint64_t> kv_cache_bytes;
  double slo_ttft_s = 0, slo_tpot_s = 0;  // latency targets for goodput (0: none)
  int grid_tokens = 64;  // programs are simulated at prompt / context lengths on this grid
  // Decode programs are simulated at batches 1, 2, 4, ... up to this; larger batches are
  // extrapolated along the last two (docs/serving.md).
  int max_simulated_batch = 16;
};

struct ServeResult {
  nlohmann::json stats;      // stats.json: "serving" (docs/serving.md)
  std::string requests_csv;  // per request: arrival, first token, finish, TTFT, TPOT, ...
  std::string steps_csv;     // per step: times, tokens, running, waiting, KV blocks, energy
  std::string trace_json;    // Chrome / Perfetto trace: a track per request, step counters
  std::string html;          // the HTML report: percentiles, distributions, requests, steps
  double wall_seconds = 0.0;
  std::string report() const;
};
ServeResult serve(const ServeOptions& options);

// Training (docs/training.md): `steps` steps of `batch` samples (RunOptions::batch, default 32)
// of a classifier (a workload ending in a softmax; the layers it can differentiate are listed
// there) against the mean softmax cross-entropy. Each step is one program compiled from the
// differentiated graph (forward, loss gradient, backward) and simulated with values, checked
// against the reference like any run; its gradients update fp32 master weights with the
// optimizer. The run is bf16 (bf16 matrix inputs, fp32 accumulation); dtype int8 is refused.
// Initial weights are Keras' (Glorot uniform from `seed`, zero biases).
struct TrainOptions : RunOptions {
  int steps = 1;
  std::string optimizer = "sgd";  // sgd, momentum or adam
  // xent (softmax cross-entropy against integer labels), mse (mean squared error against float
  // targets y.npy of the output's shape) or auto (xent where the output is a final softmax).
  std::string loss = "auto";
  double lr = 0.01;
  // DIR with x.npy (float [N, ...], the workload's input layout) and y.npy (integer labels [N]);
  // DIR/heldout/ the same for the held-out accuracy. "": seeded random samples and labels.
  std::string data;
  bool shuffle = false;  // a fresh permutation (from `seed`) per pass, else file order
  int eval_every = 0;    // held-out accuracy every K steps (0: after the last step only)
  // DIR/initial/ and DIR/final/: <layer>.weight.npy ([out, in]) and <layer>.bias.npy, float32.
  std::string save_weights;
  // chip: the optimizer's fp32 update runs on the vector unit after the backward pass (masters and
  // state in off-chip memory, checked bit for bit against the host's update every step); host:
  // the host updates the masters between steps (no cycles).
  std::string optimizer_on = "chip";
};

struct TrainResult {
  // stats.json: "training" (the figures of docs/training.md), "steps" (one record per step),
  // "first_step" (the first step's own run stats.json).
  nlohmann::json stats;
  std::vector<double> loss;  // per step, from the simulated logits
  double wall_seconds = 0.0;
  // A step's functional check failed: the message the CLI prints (a bug in npusim), else empty.
  std::string mismatch;
  // With record_trace: the Chrome / Perfetto trace JSON of the first step, its phases (forward,
  // backward, all-reduce, optimizer) a track of their own.
  std::string trace_json;
  std::string report() const;  // report.txt
  // The HTML report (npusim train --html): loss and held-out accuracy per step, a step's phases,
  // energy by component, off-chip memory, the steps.
  std::string html() const;
};
TrainResult train(const TrainOptions& options);

struct DecoderEntry {
  std::string name, description;
  int layers = 0, hidden = 0, heads = 0, kv_heads = 0, ffn = 0, vocab = 0, max_context = 0;
  uint64_t parameters = 0;
};
std::vector<DecoderEntry> decoders();  // the built-in decoders (npusim generate --workload)

struct ZooEntry {
  std::string name, description;
  int batch = 0;
  size_t layers = 0;
  uint64_t macs = 0;
};
std::vector<ZooEntry> zoo();

}  // namespace npusim
