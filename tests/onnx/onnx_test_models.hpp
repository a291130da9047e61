// Paths to the models make_models.py writes at test time, and reading its .npy files.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/npy.hpp"

namespace npusim::onnx_test {

inline std::string model_path(const std::string& name) {
  return std::string(NPUSIM_ONNX_MODELS) + "/" + name + ".onnx";
}

// A float array make_models.py wrote next to model `model` (its input, an output or an
// initializer "init_<name>").
struct FloatArray {
  std::vector<int64_t> shape;
  std::vector<float> values;
};
inline FloatArray load_array(const std::string& model, const std::string& file) {
  std::string path = std::string(NPUSIM_ONNX_MODELS) + "/" + model + "/" + file + ".npy";
  NpyArray a = read_npy(path);
  return {a.shape, npy_to_float32(a, path)};
}

}  // namespace npusim::onnx_test
