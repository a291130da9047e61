#include "compiler/passes/move_folding.hpp"

#include <algorithm>
#include <array>

#include "compiler/passes/tensor_index.hpp"

namespace npusim {

namespace {

std::vector<uint64_t> strides_of(const TensorShape& s) {
  std::vector<uint64_t> st(s.dims.size(), 1);
  for (size_t a = s.dims.size(); a-- > 1;) st[a - 1] = st[a] * uint64_t(s.dims[a]);
  return st;
}

// Visits every element of `shape` with its coordinates, in row-major order; stops at false.
template <class Visit>
bool each_element(const TensorShape& shape, Visit visit) {
  std::vector<int> at(shape.dims.size(), 0);
  for (uint64_t j = 0; j < shape.elements(); ++j) {
    if (!visit(j, at)) return false;
    for (size_t a = at.size(); a-- > 0;) {
      if (++at[a] < shape.dims[a]) break;
      at[a] = 0;
    }
  }
  return true;
}

// The zero padding (depth, height, width begins and ends) that `l` is, if it is exactly that.
bool spatial_zero_pad(const Layer& l, std::array<int, 3>& begin, std::array<int, 3>& end) {
  const TensorShape &x = l.in_shapes[0], &y = l.out_shape;
  const bool zeros = std::all_of(l.move_constants.begin(), l.move_constants.end(),
                                 [](float c) { return c == 0.0f; });
  if (l.inputs.size() != 1 || !zeros || x.rank() != y.rank() || (x.rank() != 3 && x.rank() != 4) ||
      x.last() != y.last()) {
    return false;
  }
  // The first copied element is the input's first, at the padding's begin corner.
  const auto first = std::find_if(l.move_from.begin(), l.move_from.end(),
                                  [](const MoveSource& s) { return s.input >= 0; });
  if (first == l.move_from.end()) return false;
  const auto ys = strides_of(y);
  uint64_t at = first.index();
  const int spatial = x.rank() - 1, skip = 3 - spatial;  // rank 3: no depth axis
  begin = end = {0, 0, 0};
  for (int a = 0; a < spatial; ++a) {
    begin[skip + a] = int(at / ys[a]);
    at %= ys[a];
    end[skip + a] = y.dims[a] - x.dims[a] - begin[skip + a];
    if (end[skip + a] < 0) return false;
  }
  const auto xs = strides_of(x);
  auto source = l.move_from.begin();  // element j's, as each_element visits j in order
  return each_element(y, [&](uint64_t /*j*/, const std::vector<int>& c) {
    uint64_t flat = uint64_t(c.back());
    bool inside = true;
    for (int a = 0; a < spatial; ++a) {
      const int i = c[a] - begin[skip + a];
      inside = inside && i >= 0 && i < x.dims[a];
      flat += uint64_t(i) * xs[a];
    }
    const MoveSource s = *source++;
    return inside ? s == MoveSource{0, int32_t(flat)} : s.input < 0;
  });
}

// True when `l` swaps the last two axes of its input and moves nothing else.
bool swaps_last_two(const Layer& l) {
  const TensorShape &x = l.in_shapes[0], &y = l.out_shape;
  const int r = x.rank();
  if (l.inputs.size() != 1 || r < 2 || y.rank() != r) return false;
  TensorShape swapped = x;
  std::swap(swapped.dims[r - 1], swapped.dims[r - 2]);
  if (swapped != y) return false;
  const auto xs = strides_of(x);
  auto source = l.move_from.begin();  // element j's, as each_element visits j in order
  return each_element(y, [&](uint64_t /*j*/, const std::vector<int>& c) {
    uint64_t flat = uint64_t(c[r - 2]) * xs[r - 1] + uint64_t(c[r - 1]) * xs[r - 2];
    for (int a = 0; a + 2 < r; ++a) flat += uint64_t(c[a]) * xs[a];
    return *source++ == MoveSource{0, int32_t(flat)};
  });
}

}  // namespace

void fold_moves(Graph& g) {
  TensorIndex index(g);
  for (size_t i = 0; i < g.layers.size(); ++i) {
    const Layer& m = g.layers[i];
    if (m.kind != OpKind::kMove || index.is_output(m.output)) continue;
    // Every reader, with the operand it reads the move's output as.
    const std::vector<TensorIndex::Reader> readers = index.readers(m.output);
    auto all_readers = [&](auto pred) {
      return !readers.empty() && std::all_of(readers.begin(), readers.end(), [&](const auto& r) {
        return pred(g.layers[size_t(r.first)], size_t(r.second));
      });
    };
    std::array<int, 3> begin{}, end{};
    const bool pad = all_readers([](const Layer& l, size_t k) {
                       return l.kind == OpKind::kConv && k == 0 && !l.same_padding;
                     }) &&
                     spatial_zero_pad(m, begin, end);
    const bool transpose = !pad && all_readers([](const Layer& l, size_t k) {
      return l.kind == OpKind::kMatMul && k == 1 && !l.transpose_b;
    }) && swaps_last_two(m);
    if (!pad && !transpose) continue;
    for (const auto& [position, k] : readers) {
      Layer* l = &g.layers[size_t(position)];
      index.forget_reads(*l, position);
      l->inputs[size_t(k)] = m.inputs[0];
      l->in_shapes[size_t(k)] = m.in_shapes[0];
      index.enter_reads(*l, position);
      l->fused.push_back(m.name);
      if (transpose) l->transpose_b = true;
      for (int a = 0; pad && a < 3; ++a) {
        l->pads_begin[a] += begin[a];
        l->pads_end[a] += end[a];
      }
    }
    index.remove(m, int(i));
  }
  index.erase_removed(g);
}

}  // namespace npusim
