#include "npusim/token_ids.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "compiler/passes/parameters.hpp"
#include "support/error.hpp"
#include "support/npy.hpp"

namespace npusim {

namespace {

// The stored bytes (int32, little-endian like the host) and the ids as real values.
InputBatch batch_of(const std::vector<int32_t>& ids) {
  InputBatch in;
  in.bytes.resize(ids.size() * 4);
  std::memcpy(in.bytes.data(), ids.data(), in.bytes.size());
  in.real.assign(ids.begin(), ids.end());
  return in;
}

// The position of flat element `i` in a [shape] array, as "[a, b]".
std::string position(uint64_t i, const std::vector<int64_t>& shape) {
  std::vector<int64_t> at(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    at[d] = static_cast<int64_t>(i % uint64_t(shape[d]));
    i /= uint64_t(shape[d]);
  }
  return fmt::format("[{}]", fmt::join(at, ", "));
}

}  // namespace

int32_t ids_vocabulary(const Graph& g) {
  int64_t vocab = std::numeric_limits<int32_t>::max();
  bool found = false;
  for (const Layer& l : g.layers) {
    if (l.kind != OpKind::kEmbedding) continue;
    NPUSIM_CHECK(l.filters > 0 && !l.weights.empty(), "embedding {} has no table", l.name);
    vocab = std::min<int64_t>(vocab, int64_t(l.weights.size() / size_t(l.filters)));
    found = true;
  }
  NPUSIM_CHECK(found, "graph {} takes ids but has no embedding", g.name);
  return static_cast<int32_t>(vocab);
}

InputBatch read_ids_npy(const std::string& path, Graph& g, bool batch_given) {
  NpyArray a;
  try {
    a = read_npy(path);
  } catch (const UserError& e) {
    throw UserError(fmt::format("--input {}", e.what()));
  }
  std::vector<int64_t> expected(g.input_shape.dims.begin(), g.input_shape.dims.end());
  if (g.io_without_batch && a.shape == expected) a.shape.insert(a.shape.begin(), 1);
  const bool shape_ok =
      !a.shape.empty() && std::vector<int64_t>(a.shape.begin() + 1, a.shape.end()) == expected;
  if (!shape_ok || a.shape[0] < 1) {
    throw UserError(fmt::format("--input {}: expected token ids of shape [batch, {}], got [{}]",
                                path, fmt::join(expected, ", "), fmt::join(a.shape, ", ")));
  }
  if (a.dtype != "int32" && a.dtype != "int64") {
    throw UserError(
        fmt::format("--input {}: the model's input '{}' holds token ids: expected an "
                    "int32 or int64 array, got {}",
                    path, g.input_name, a.dtype));
  }
  const int batch = static_cast<int>(a.shape[0]);
  if (g.io_without_batch && batch_given && g.batch != 1) {
    throw UserError(
        fmt::format("--input {}: the model runs as one whole tensor (batch 1), but --batch is {}",
                    path, g.batch));
  }
  if (batch_given && batch != g.batch) {
    throw UserError(
        fmt::format("--input {}: holds a batch of {}, but --batch is {}", path, batch, g.batch));
  }
  const int32_t vocab = ids_vocabulary(g);
  std::vector<int32_t> ids(a.elements());
  for (uint64_t i = 0; i < ids.size(); ++i) {
    const int64_t v = npy_integer_at(a, i);
    if (v < 0 || v >= vocab) {
      throw UserError(
          fmt::format("--input {}: token id {} at {} is outside the embedding table's "
                      "{} rows [0, {})",
                      path, v, position(i, a.shape), vocab, vocab));
    }
    ids[i] = static_cast<int32_t>(v);
  }
  g.batch = batch;
  return batch_of(ids);
}

InputBatch random_ids(const Graph& g, uint64_t seed) {
  return batch_of(make_random_ids(g, seed, ids_vocabulary(g)));
}

}  // namespace npusim
