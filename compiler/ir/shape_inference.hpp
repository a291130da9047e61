// Shape inference and the checks every front end shares: each layer's output shape from its
// inputs and attributes, tensors defined before use, parameter sizes, foldable batch norms.
#pragma once

#include <string>
#include <vector>

#include "compiler/ir/graph.hpp"

namespace npusim {

// Errors found while building a graph, reported together: "origin: where: what was expected".
// `where` is a JSON pointer for JSON graphs and "node 'name' (OpType)" for ONNX files.
class GraphDiagnostics {
 public:
  explicit GraphDiagnostics(std::string origin) : origin_(std::move(origin)) {}
  void error(const std::string& where, const std::string& message);
  bool ok() const { return messages_.empty(); }
  void throw_if_errors() const;  // UserErrors
  const std::string& origin() const { return origin_; }

 private:
  std::string origin_;
  std::vector<std::string> messages_;
};

// Infers every layer's shapes and checks the graph (inputs defined earlier, shapes possible,
// parameter sizes consistent). `where(i)` names layer i in messages. Throws UserErrors.
void finalize_graph(Graph& graph, GraphDiagnostics& diag,
                    const std::vector<std::string>& where_of_layer);

}  // namespace npusim
