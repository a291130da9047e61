// The one dispatch of the functional reference: which loop computes each operator, shared by the
// int8 reference (reference.cpp) and the bf16 one (reference_bf16.cpp). Each supplies an `Ops`
// type with its arithmetic:
//   using Value;                                     // int8_t or float
//   matrix(l, batch, inputs), pool(l, batch, x)      // conv / dense / matmul, pools
//   activation(l, x), binary(l, a, b)                // elementwise
//   concat_value(l, input, v)                        // one element into a concat or a move
//   move_constant(l, c)                              // a move's constant c on the output
//   softmax_row(l, x, y, n), layernorm_row(l, x, y, n, offset of the row in the batch)
//   embedding(l, batch, ids)                         // the table rows the ids select
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compiler/ir/backward_rules.hpp"
#include "compiler/ir/graph.hpp"
#include "support/error.hpp"

namespace npusim::reference_loops {

// Concatenation along the last dimension: each input's rows into their columns.
template <class Ops, class T>
std::vector<T> concat(const Layer& l, int batch, const std::vector<const std::vector<T>*>& in) {
  const uint64_t rows = uint64_t(batch) * l.out_shape.outer();
  const int C = l.out_shape.last();
  std::vector<T> y(rows * C);
  int offset = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const int ci = l.in_shapes[i].last();
    for (uint64_t r = 0; r < rows; ++r) {
      for (int c = 0; c < ci; ++c)
        y[r * C + offset + c] = Ops::concat_value(l, i, (*in[i])[r * ci + c]);
    }
    offset += ci;
  }
  return y;
}

// Data movement: every output element is one input element (rescaled like a concatenation's) or
// one of the layer's constants.
template <class Ops, class T>
std::vector<T> move(const Layer& l, int batch, const std::vector<const std::vector<T>*>& in) {
  const uint64_t n = l.out_shape.elements();
  std::vector<T> y(batch * n);
  const bool per_image = l.move_op == kPerImageConstants;
  NPUSIM_CHECK(!per_image || l.move_constants.size() % size_t(batch) == 0,
               "move {}: {} per-image constants for batch {}", l.name, l.move_constants.size(),
               batch);
  const size_t image_constants = per_image ? l.move_constants.size() / size_t(batch) : 0;
  for (int b = 0; b < batch; ++b) {
    for (const MoveRun& r : l.move_from.runs()) {
      for (uint64_t i = 0; i < r.count; ++i) {
        const MoveSource s = r.at(i);
        const uint64_t j = r.out + i;
        if (s.input < 0) {
          const size_t c = static_cast<size_t>(s.element) + size_t(b) * image_constants;
          y[b * n + j] = Ops::move_constant(l, l.move_constants[c]);
          continue;
        }
        const auto k = static_cast<size_t>(s.input);
        const T v = (*in[k])[b * l.in_shapes[k].elements() + static_cast<uint64_t>(s.element)];
        y[b * n + j] = Ops::concat_value(l, k, v);
      }
    }
  }
  return y;
}

// Embedding lookup: the row of `table` ([vocab][l.filters]) each id selects, in id order.
template <class T>
std::vector<T> embedding_rows(const Layer& l, const std::vector<int32_t>& ids,
                              const std::vector<T>& table) {
  const size_t n = size_t(l.filters), vocab = table.size() / n;
  std::vector<T> y(ids.size() * n);
  for (size_t i = 0; i < ids.size(); ++i) {
    NPUSIM_CHECK(ids[i] >= 0 && size_t(ids[i]) < vocab, "layer {}: id {} at {} outside [0, {})",
                 l.name, ids[i], i, vocab);
    std::copy_n(table.begin() + long(size_t(ids[i]) * n), n, y.begin() + long(i * n));
  }
  return y;
}

// An operator over each row of the last dimension.
template <class T, class Row>
std::vector<T> rows(const Layer& l, const std::vector<T>& x, Row row) {
  const int n = l.out_shape.last();
  std::vector<T> y(x.size());
  for (size_t r = 0; r < x.size(); r += n) row(&x[r], &y[r], n);
  return y;
}

// One stage of a fused epilogue (Layer::epilogue) on `y`, the output of the stage before: the
// separate layer's own arithmetic, so fusion changes no value.
template <class Ops, class T>
std::vector<T> epilogue_stage(const Layer& s, int batch, const std::vector<T>& y,
                              const std::vector<const std::vector<T>*>& host_inputs) {
  if (s.kind == OpKind::kMaxPool || s.kind == OpKind::kAvgPool) return Ops::pool(s, batch, y);
  NPUSIM_CHECK(s.kind == OpKind::kAdd && s.residual_input >= 0 &&
                   size_t(s.residual_input) < host_inputs.size(),
               "epilogue stage {} ({}) cannot run", s.name, to_string(s.kind));
  const std::vector<T>& r = *host_inputs[s.residual_input];
  return s.chain_operand == 0 ? Ops::binary(s, y, r) : Ops::binary(s, r, y);
}

// One layer's output from its inputs (batch x elements each, channels last).
template <class Ops>
std::vector<typename Ops::Value> layer(
    const Layer& l, int batch, const std::vector<const std::vector<typename Ops::Value>*>& in) {
  using T = typename Ops::Value;
  const std::vector<T>& x = *in[0];
  switch (l.kind) {
    case OpKind::kConv:
    case OpKind::kDense:
    case OpKind::kMatMul: {
      std::vector<T> y = Ops::matrix(l, batch, in);
      for (const Layer& s : l.epilogue) y = epilogue_stage<Ops>(s, batch, y, in);
      return y;
    }
    case OpKind::kMaxPool:
    case OpKind::kAvgPool:
      return Ops::pool(l, batch, x);
    case OpKind::kActivation:
      return Ops::activation(l, x);
    case OpKind::kAdd:
    case OpKind::kMul:
      return Ops::binary(l, x, *in[1]);
    case OpKind::kConcat:
      return concat<Ops>(l, batch, in);
    case OpKind::kReshape:
      return x;
    case OpKind::kSoftmax:
      return rows(l, x, [&](const T* a, T* b, int n) { Ops::softmax_row(l, a, b, n); });
    case OpKind::kLayerNorm:
      return rows(l, x, [&](const T* a, T* b, int n) {
        Ops::layernorm_row(l, a, b, n, static_cast<uint64_t>(a - x.data()));
      });
    case OpKind::kMove:
      return move<Ops>(l, batch, in);
    case OpKind::kEmbedding:
      return Ops::embedding(l, batch, x);
    case OpKind::kBatchNorm:
      break;
  }
  NPUSIM_CHECK(false, "layer {} ({}) cannot run: batch norm must be folded first", l.name,
               to_string(l.kind));
  return {};
}

// Every tensor of a prepared graph by name, from the input batch.
template <class Ops>
std::map<std::string, std::vector<typename Ops::Value>> graph(
    const Graph& g, const std::vector<typename Ops::Value>& input) {
  std::map<std::string, std::vector<typename Ops::Value>> tensors{{g.input_name, input}};
  for (const auto& l : g.layers) {
    std::vector<const std::vector<typename Ops::Value>*> in;
    for (const auto& name : l.inputs) in.push_back(&tensors.at(name));
    tensors[l.output] = layer<Ops>(l, g.batch, in);
  }
  return tensors;
}

}  // namespace npusim::reference_loops
