#include "sim/calibration.hpp"

#include <fmt/format.h>

#include "sim/command_line.hpp"
#include "sim/tensor_io.hpp"

namespace po = boost::program_options;

namespace npusim {

void add_calibration_options(po::options_description& o) {
  o.add_options()("calibration", po::value<std::string>(),
                  "int8: calibrate activation scales on this batch (.npy, [samples, ...] like "
                  "--input, any number of samples) instead of the run's own input; a float file "
                  "also sets the input scale")(
      "calibration-method", po::value<std::string>()->default_value("max"),
      "how an activation scale is chosen from the calibration values: max (the largest "
      "magnitude maps to 127) or percentile (the --calibration-percentile-th percentile of the "
      "magnitudes does; larger values saturate)")(
      "calibration-percentile", po::value<double>(),
      "with --calibration-method percentile: the percentile, in [50, 100] (default 99.99)");
}

CalibrationRequest calibration_request(const po::variables_map& vm) {
  CalibrationRequest r;
  if (vm.count("calibration")) r.file = vm["calibration"].as<std::string>();
  const std::string method = vm["calibration-method"].as<std::string>();
  if (method == "max") {
    r.options.method = CalibrationMethod::kMax;
  } else if (method == "percentile") {
    r.options.method = CalibrationMethod::kPercentile;
  } else {
    throw UsageError(fmt::format("--calibration-method '{}': expected max or percentile", method));
  }
  if (vm.count("calibration-percentile")) {
    const double p = vm["calibration-percentile"].as<double>();
    if (r.options.method != CalibrationMethod::kPercentile) {
      throw UsageError("--calibration-percentile needs --calibration-method percentile");
    }
    if (!(p >= 50.0 && p <= 100.0)) {
      throw UsageError(fmt::format("--calibration-percentile {}: expected 50 to 100", p));
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
