// The per-layer check of the bf16 path: one layer of the reference applied to given inputs (the
// simulator's own inputs of that layer), with a bound on how far a correct simulation of that
// layer may be from it. The bound is derived from the arithmetic, not a fixed tolerance
// (docs/reliability.md, "bf16: every layer within its bound"):
//
// - conv, dense, matmul: the array sums K exact bf16 x bf16 products in fp32 in its own order
//   (tiles, dataflow) and adds the bias; the reference sums them in index order. Each differs from
//   the exact sum by at most gamma(K+1) * S, S = sum |a * w| + |bias|, gamma(n) = n u / (1 - n u),
//   u = 2^-24 (fp32's unit roundoff), so the two differ by at most 2 gamma(K+1) S before the
//   activation (Lipschitz constant L) and the one rounding to bf16.
// - pooling, activations, add / mul, concat, reshape, softmax, layer norm: the vector unit runs
//   the same fp32 operations in the same order as the reference (arch/float_ops.hpp and the loops
//   of reference_loops.hpp), so on the same inputs the bound is 0: bit for bit.
// - An input the run did not keep (a fused intermediate) comes from the reference with its own
//   bound, which propagates: through sums by sum |w| e, through activations by L e, through
//   max / average pooling by the window's largest / average e, through softmax by
//   p (exp(2 e) - 1), through layer norm by |gamma| (2 e + |x_hat| 2 e) / (sigma - 2 e), plus the
//   fp32 rounding of each such operation (a few u per operation, see the .cpp).
//
// Rounding to bf16 (nearest even, 8 significant bits) is monotone, so two fp32 values at most E
// apart round to bf16 values at most E + ulp apart, ulp the bf16 spacing at the larger magnitude;
// with E = 0 they round to the same value.
#pragma once

#include <vector>

#include "compiler/ir/graph.hpp"
#include "compiler/reference/reference_bf16.hpp"

namespace npusim {

// One input of a layer: its values and, per value, the bound on its error (nullptr: exact, the
// simulator's own bytes).
struct Bf16Operand {
  const TensorF* value = nullptr;
  const std::vector<float>* bound = nullptr;
};

// The reference output of one layer and, per value, the bound E on the difference of a correct
// simulation's fp32 result before its rounding to bf16 (0: the same operations on the same
// values, so the same bits).
struct Bf16LayerResult {
  TensorF value;
  std::vector<float> bound;
};

Bf16LayerResult reference_bf16_layer(const Layer& l, int batch,
                                     const std::vector<Bf16Operand>& inputs);

// The largest difference allowed between a simulated bf16 value and the reference `ref` whose
// pre-rounding bound is `bound`: 0 if bound is 0, else bound + the bf16 spacing at the larger of
// |ref| + bound and |sim|.
double bf16_allowed_difference(float ref, float sim, float bound);

// The error bound of a value the run did not keep, to propagate into the layers that read it.
float bf16_propagated_bound(float ref, float bound);

// The fp32 products of a conv, dense or matmul layer without bias or activation: a x w (w the
// bf16 weights as floats, or the second activation of a matmul), summed in index order.
TensorF bf16_matrix_products(const Layer& l, int batch, const float* a, const float* w);

}  // namespace npusim
