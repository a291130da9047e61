// Tensors at the command line's boundary: --input x.npy and --save-outputs / --save-intermediates.
// Files hold [batch, ...sample] arrays in the graph's file layout: channels last for JSON graphs,
// channels first (NCHW / NCDHW) for ONNX models. Saved tensors are float32 real values
// (int8 value x scale).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/graph.hpp"

namespace npusim {

// Reads the input batch. int8 files are taken as they are, on the graph's input scale; float
// files are quantized with a scale calibrated on them (max |x| / 127), which becomes the graph's
// input scale. Sets the graph's batch from the file, or checks it against `batch_given`.
std::vector<int8_t> read_input_npy(const std::string& path, Graph& graph, bool batch_given);

// Writes one tensor (batch x sample, channels last, int8 on `scale`) as float32 real values in
// the graph's file layout to DIR/<name>.npy (characters other than letters, digits, '.', '-' and
// '_' in the name become '_').
void write_tensor_npy(const std::string& dir, const Graph& graph, const std::string& name,
                      const std::vector<int>& sample_dims, int batch, float scale,
                      const std::vector<int8_t>& values);

}  // namespace npusim
