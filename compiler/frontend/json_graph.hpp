// The JSON graph front end (docs/workload_format.md).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "compiler/ir/graph.hpp"

namespace npusim {

constexpr int kWorkloadSchemaVersion = 1;

// Parses and checks a JSON workload (all problems at once), shapes inferred.
Graph parse_workload(const nlohmann::json& root, const std::string& origin);

}  // namespace npusim
