// Tensors at a run's boundary: --input x.npy, --calibration c.npy, and the outputs a run returns
// (RunResult::outputs, intermediates, float_outputs) that --save-outputs / --save-intermediates /
// --save-float-outputs write.
// Files hold [batch, ...sample] arrays in the graph's file layout: channels last for JSON graphs,
// channels first (NCHW / NCDHW) for ONNX models. Saved tensors are float32 real values
// (int8 value x scale).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "arch/program.hpp"
#include "compiler/ir/graph.hpp"
#include "compiler/passes/quantize.hpp"
#include "npusim/npusim.hpp"

namespace npusim {

struct SimulationResult;

// A [batch, ...sample] file for the graph's input, channels last: int8 codes (an int8 file) or
// finite float values (any other dtype). `flag` (--input, --calibration) and the path start every
// message; a missing file, a bad dtype or a shape that is not the graph's input is a UserError.
struct BatchFile {
  int batch = 0;
  bool is_int8 = false;
  std::vector<int8_t> codes;  // is_int8
  std::vector<float> values;  // otherwise
};
BatchFile read_batch_npy(const std::string& flag, const std::string& path, const Graph& graph);
// round(x / scale), saturated to int8.
std::vector<int8_t> quantize_values(const std::vector<float>& values, float scale);
// The input scale calibrated on float values: calibration_magnitude / 127.
float calibrate_input_scale(const std::vector<float>& values, const CalibrationOptions& options);

// The batch a network runs on: its stored bytes (int8 or bf16) and its real values (channels
// last, for the float32 reference).
struct InputBatch {
  std::vector<uint8_t> bytes;
  std::vector<float> real;
};
// Reads the input batch (graph.dtype). int8 graphs: int8 files are taken as they are, on the
// graph's input scale; float files are quantized on the graph's input scale, which is first
// calibrated on them (calibration_magnitude / 127) when `calibrate_scale` is given. bf16 graphs:
// values (int8 files times the input scale) rounded to bf16. Sets the graph's batch from the
// file, or checks it against `batch_given`.
InputBatch read_input_npy(const std::string& path, Graph& graph, bool batch_given,
                          const std::optional<CalibrationOptions>& calibrate_scale);
// A pseudo-random input batch in the graph's data type (make_random_input's int8 values; bf16
// graphs get them times the input scale).
InputBatch random_input(const Graph& graph, uint64_t seed);

// The real values of a stored tensor: int8 codes times `scale`, or bf16 values.
std::vector<float> decode_tensor(const std::vector<uint8_t>& bytes, int element_bytes, float scale);

// Names are bytes (docs/reliability.md "Names are bytes"): a tensor's file is DIR/<file_name>.npy,
// every byte of its name other than an ASCII letter, digit, '.', '-' or '_' made '_'. Two names
// that give the same file (`a/b` and `a_b`, or names that differ only in bytes outside UTF-8) must
// not overwrite each other: among `tensors` (the files of one directory), a name that is its own
// file name keeps it, the others get <stem>~2, ~3 and so on, in the order given. Returns
// "file.npy <- name" for every tensor that got a ~k file (the name escaped for a terminal).
std::vector<std::string> assign_file_names(const std::vector<Tensor*>& tensors);

// One tensor (batch x sample, channels last, stored as int8 on `scale` or bf16) as float32 real
// values in the graph's file layout.
Tensor stored_tensor(const Graph& graph, const std::string& name,
                     const std::vector<int>& sample_dims, int batch, float scale, int element_bytes,
                     const std::vector<uint8_t>& stored);
// A finished simulation's outputs (Program::outputs) as stored tensors by name.
std::map<std::string, Tensor> program_outputs(const Graph& graph, const Program& program,
                                              const SimulationResult& r);
// The message of program `name`'s failed functional check (a bf16 bound exceeded); empty when it
// passed or did not run.
std::string functional_mismatch(const SimulationResult& r, const std::string& name);
// The same for real values (batch x sample, channels last).
Tensor real_tensor(const Graph& graph, const std::string& name, const std::vector<int>& sample_dims,
                   int batch, std::vector<float> real);

}  // namespace npusim
