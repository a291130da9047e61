// ONNX import: reads an .onnx file (opset 11-20) into the graph IR, with the file's initializers
// as the real-valued weights. ONNX tensors are channels first (NCHW / NCDHW); the IR is channels
// last, so the importer converts the input shape, the conv weights (OIHW -> [kh][kw][cin/g][cout])
// and the rows of a dense layer that reads a flattened feature map (ONNX flattens C,H,W; the IR
// flattens H,W,C). docs/onnx.md lists the operators, attributes and limits.
#pragma once

#include <optional>
#include <string>

#include "compiler/ir/graph.hpp"

namespace npusim {

// Imports and finalizes (shape inference and checks) the model at `path`. `batch` overrides the
// model's batch (a symbolic batch dimension defaults to 1). Every problem found is reported at
// once as UserErrors "path: node 'name' (OpType): what was expected".
Graph import_onnx(const std::string& path, std::optional<int> batch);

// The same from the file's bytes; `path` names the model in messages.
Graph import_onnx_bytes(const std::string& bytes, const std::string& path,
                        std::optional<int> batch);

}  // namespace npusim
