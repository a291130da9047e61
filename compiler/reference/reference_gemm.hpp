// The int8 reference's matrix products at library speed: convolutions (as an im2col matrix times
// the weights) and dense / matmul layers through oneDNN's s8 x s8 -> s32 GEMM
// (dnnl_gemm_s8s8s32, Debian libdnnl-dev). Integer products and sums are exact in any order, so
// the results equal the plain loops of reference_loops.hpp bit for bit; a test checks it on random
// shapes. This stays an implementation separate from the models' (models/systolic/gemm_kernels).
//
// oneDNN's int8 GEMM is exact only on CPUs with VNNI instructions (without them its intermediate
// 16-bit sums may saturate: oneDNN's "int8 computations" guide). Elsewhere, and in builds without
// oneDNN, available() is false and every function here runs the plain loops instead.
#pragma once

#include <cstdint>

#include "compiler/ir/graph.hpp"

namespace npusim::reference_gemm {

// True when the oneDNN path runs (oneDNN linked and the CPU has VNNI).
bool available();

// acc[r][n] = sum_k a[r][k] * w[k][n] (w[n][k] when `transposed`); a is rows x K, acc rows x N,
// all row-major and dense. Overwrites acc.
void gemm(const int8_t* a, const int8_t* w, int32_t* acc, uint64_t rows, int K, int N,
          bool transposed);

// The int32 accumulators of conv layer `l` (input x, weights w as in reference_loops::conv),
// written to acc (batch x output elements, zeroed by the caller).
void conv(const Layer& l, int batch, const int8_t* x, const int8_t* w, int32_t* acc);

}  // namespace npusim::reference_gemm
