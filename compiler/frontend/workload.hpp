// Loading a workload by name: a zoo network, a JSON graph file or an ONNX file.
#pragma once

#include <optional>
#include <string>

#include "compiler/frontend/json_graph.hpp"
#include "compiler/ir/graph.hpp"

namespace npusim {

// `spec` is a zoo name, a .json graph file or an .onnx file. `batch` overrides the file's batch.
Graph load_workload(const std::string& spec, std::optional<int> batch);

}  // namespace npusim
