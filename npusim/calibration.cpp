#include "npusim/calibration.hpp"

#include <fmt/format.h>

#include "npusim/tensor_io.hpp"
#include "support/error.hpp"

namespace npusim {

CalibrationRequest calibration_request(const std::string& file, const std::string& method,
                                       std::optional<double> percentile) {
  CalibrationRequest r;
  r.file = file;
  if (method == "max") {
    r.options.method = CalibrationMethod::kMax;
  } else if (method == "percentile") {
    r.options.method = CalibrationMethod::kPercentile;
  } else {
    throw UserError(fmt::format("--calibration-method '{}': expected max or percentile", method));
  }
  if (percentile) {
    const double p = *percentile;
    if (r.options.method != CalibrationMethod::kPercentile) {
      throw UserError("--calibration-percentile needs --calibration-method percentile");
    }
    if (!(p >= 50.0 && p <= 100.0)) {
      throw UserError(fmt::format("--calibration-percentile {}: expected 50 to 100", p));
    }
    r.options.percentile = p;
  }
  return r;
}

CalibrationBatch read_calibration_npy(const CalibrationRequest& request, Graph& g) {
  BatchFile f = read_batch_npy("--calibration", request.file, g);
  if (!f.is_int8) {
    g.input_scale = calibrate_input_scale(f.values, request.options);
    f.codes = quantize_values(f.values, g.input_scale);
  }
  return {std::move(f.codes), f.batch};
}

std::string calibration_source(const CalibrationRequest& request) {
  return request.file.empty() ? "input" : "file:" + request.file;
}

}  // namespace npusim
