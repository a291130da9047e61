// Tensors at the command line's boundary: --input x.npy and --save-outputs / --save-intermediates.
// Files hold [batch, ...sample] arrays in the graph's file layout: channels last for JSON graphs,
// channels first (NCHW / NCDHW) for ONNX models. Saved tensors are float32 real values
// (int8 value x scale).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/graph.hpp"

namespace npusim {

// Reads the input batch as the bytes the network runs on (graph.dtype). int8 graphs: int8 files
// are taken as they are, on the graph's input scale; float files are quantized with a scale
// calibrated on them (max |x| / 127), which becomes the graph's input scale. bf16 graphs: values
// (int8 files times the input scale) rounded to bf16. Sets the graph's batch from the file, or
// checks it against `batch_given`.
std::vector<uint8_t> read_input_npy(const std::string& path, Graph& graph, bool batch_given);
// A pseudo-random input batch in the graph's data type (make_random_input's int8 values; bf16
// graphs get them times the input scale).
std::vector<uint8_t> random_input_bytes(const Graph& graph, uint64_t seed);

// The real values of a stored tensor: int8 codes times `scale`, or bf16 values.
std::vector<float> decode_tensor(const std::vector<uint8_t>& bytes, int element_bytes, float scale);

// Writes one tensor (batch x sample, channels last, stored as int8 on `scale` or bf16) as float32
// real values in the graph's file layout to DIR/<name>.npy (characters other than letters,
// digits, '.', '-' and '_' in the name become '_').
void write_tensor_npy(const std::string& dir, const Graph& graph, const std::string& name,
                      const std::vector<int>& sample_dims, int batch, float scale,
                      int element_bytes, const std::vector<uint8_t>& stored);

}  // namespace npusim
