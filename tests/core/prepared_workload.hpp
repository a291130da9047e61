// A workload (zoo name or JSON path) as `npusim run` prepares it before epilogue fusion:
// parameters drawn from seed 1, the graph optimized, then bf16 weights (no calibration run, so
// large networks stay quick) or int8 quantization calibrated on one random input.
#pragma once

#include <optional>
#include <string>

#include "compiler/frontend/workload.hpp"
#include "compiler/passes/fusion.hpp"
#include "compiler/passes/parameters.hpp"
#include "compiler/passes/quantize.hpp"

namespace npusim {

inline Graph prepared_workload(const std::string& workload, DataType dtype) {
  Graph g = load_workload(workload, std::nullopt);
  materialize_parameters(g, 1);
  optimize_graph(g);
  if (dtype == DataType::kBf16) {
    prepare_bf16(g);
  } else {
    quantize_graph(g, make_random_input(g, 1));
  }
  return g;
}

}  // namespace npusim
