// The input of a model whose graph input is int32 token ids (Graph::input_ids, an embedding
// lookup): `--input ids.npy` (int32 or int64, [batch, ...] like the ONNX input) or ids drawn in
// [0, vocab). Ids are stored 4 bytes each, little-endian, and never quantized.
#pragma once

#include <cstdint>
#include <string>

#include "compiler/ir/graph.hpp"
#include "npusim/tensor_io.hpp"

namespace npusim {

// The rows of the smallest table the ids index (every kEmbedding layer reads the input).
int32_t ids_vocabulary(const Graph& graph);
// Reads the ids; a wrong dtype or shape, or an id outside [0, vocab) is a UserError naming
// --input, the file and the first bad position. Sets the graph's batch from the file, or checks it
// against `batch_given`.
InputBatch read_ids_npy(const std::string& path, Graph& graph, bool batch_given);
// Ids drawn from `seed` in [0, vocab).
InputBatch random_ids(const Graph& graph, uint64_t seed);

}  // namespace npusim
