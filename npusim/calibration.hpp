// How a run chooses int8 activation scales (docs/quantization.md): on the run's own input (the
// default) or on a separate batch, `--calibration FILE.npy`, as deployment toolchains calibrate;
// with the largest magnitude or a percentile of the magnitudes (`--calibration-method
// max|percentile`, `--calibration-percentile P`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/graph.hpp"
#include "compiler/passes/quantize.hpp"

namespace npusim {

struct CalibrationRequest {
  std::string file;  // empty: calibrate on the run's input
  CalibrationOptions options;
};

// The request of --calibration FILE, --calibration-method METHOD and --calibration-percentile P; a
// bad method or percentile is a UserError naming the flag (exit 2).
CalibrationRequest calibration_request(const std::string& file, const std::string& method,
                                       std::optional<double> percentile);

// The calibration batch of a --calibration file: int8 files are codes on the graph's input scale;
// float files set the graph's input scale (calibrated on them with the request's method) and are
// quantized on it. Shape and dtype are checked like --input's; errors name the file.
struct CalibrationBatch {
  std::vector<int8_t> codes;  // samples x input elements, channels last
  int samples = 0;
};
CalibrationBatch read_calibration_npy(const CalibrationRequest& request, Graph& graph);

// What stats.json says was calibrated on: "input" or "file:<path>".
std::string calibration_source(const CalibrationRequest& request);

}  // namespace npusim
