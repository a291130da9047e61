// One layer mapped onto the systolic array the way SCALE-Sim v2 maps it.
//
// The layer becomes a GEMM: IFMAP M x K (im2col, M = ofmap pixels, K = window), FILTER K x N,
// OFMAP M x N. The dataflow spreads Sr over the R array rows and Sc over the C columns and
// streams T in time (os: M, N, K; ws: K, N, M; is: K, M, N). Folds run one after another in the
// order `for fc in col folds: for fr in row folds`, each lasting
//   os: T + R + C - 2 cycles,   ws / is: 2R + C + T - 2 cycles,
// whatever part of the array it uses. Within a fold, cycle i ("demand row") requests operands on
// lanes in a fixed skewed pattern; the lane order inside a row is SCALE-Sim's column order, which
// its DRAM models observe. This class gives those per-row requests in closed form, so a layer is
// never expanded into demand matrices.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "compat/scalesim/scalesim_config.hpp"
#include "compat/scalesim/scalesim_topology.hpp"

namespace npusim::scalesim {

class LayerModel {
 public:
  LayerModel(const Config& config, const Layer& layer);

  // GEMM view
  int64_t ofmap_h() const { return ofmap_h_; }
  int64_t ofmap_w() const { return ofmap_w_; }
  int64_t m() const { return m_; }
  int64_t n() const { return n_; }
  int64_t k() const { return k_; }
  int64_t macs() const { return m_ * n_ * k_; }

  // Mapping
  Dataflow dataflow() const { return dataflow_; }
  int64_t rows() const { return r_; }
  int64_t cols() const { return c_; }
  int64_t sr() const { return sr_; }
  int64_t sc() const { return sc_; }
  int64_t t() const { return t_; }
  int64_t row_folds() const { return row_folds_; }
  int64_t col_folds() const { return col_folds_; }
  int64_t folds() const { return row_folds_ * col_folds_; }
  int64_t cycles_per_fold() const { return cycles_per_fold_; }
  int64_t demand_rows() const { return folds() * cycles_per_fold_; }
  int64_t rows_used(int64_t fr) const { return std::min(r_, sr_ - fr * r_); }
  int64_t cols_used(int64_t fc) const { return std::min(c_, sc_ - fc * c_); }

  // Addresses as SCALE-Sim numbers them (offsets included); -1 for a window element that lies
  // outside the IFMAP (SCALE-Sim has no padding: the last windows may hang over the edge).
  int64_t ifmap_addr(int64_t m, int64_t k) const {
    const WindowPart& pm = m_part_[static_cast<size_t>(m)];
    const WindowPart& pk = k_part_[static_cast<size_t>(k)];
    if (pk.y > pm.y || pk.x > pm.x) return -1;
    return ifmap_offset_ + pm.base + pk.base;
  }
  int64_t filter_addr(int64_t k, int64_t n) const { return filter_offset_ + n * k_ + k; }
  int64_t ifmap_offset() const { return ifmap_offset_; }
  int64_t filter_offset() const { return filter_offset_; }
  int64_t ifmap_words() const { return ifmap_h_ * ifmap_w_ * channels_; }  // address range
  int64_t filter_words() const { return k_ * n_; }
  // Distinct IFMAP / FILTER addresses the layer reads.
  int64_t ifmap_footprint() const;
  int64_t filter_footprint() const { return k_ * n_; }

  // Calls fn(address) for every valid IFMAP request of demand row i of fold (fr, fc), in lane
  // order. Returns nothing; rows outside the operand's window simply call nothing.
  template <class Fn>
  void for_each_ifmap(int64_t fr, int64_t fc, int64_t i, Fn&& fn) const;
  template <class Fn>
  void for_each_filter(int64_t fr, int64_t fc, int64_t i, Fn&& fn) const;
  // Number of OFMAP writes in demand row i of fold (fr, fc).
  int64_t ofmap_writes(int64_t fr, int64_t fc, int64_t i) const;
  // Number of IFMAP / FILTER lanes active in demand row i (requests, counting any -1 address).
  int64_t ifmap_lanes(int64_t fr, int64_t fc, int64_t i) const;
  int64_t filter_lanes(int64_t fr, int64_t fc, int64_t i) const;

  // Appends the demand-row indices of fold (fr, fc) at which ofmap_writes, ifmap_lanes or
  // filter_lanes may change slope: between two consecutive ones each is affine in i.
  void row_breakpoints(int64_t fr, int64_t fc, std::vector<int64_t>& out) const;

  // True when no IFMAP window element falls outside the IFMAP (so no request is -1) and the
  // windows do not overlap (so distinct (m, k) have distinct addresses): GEMMs, 1x1 convolutions
  // with stride 1, and the like.
  bool ifmap_is_dense_and_distinct() const;
  // Smallest number of requests between two requests of the same address in the operand's
  // demand stream (INT64_MAX if no address repeats); only meaningful when
  // ifmap_is_dense_and_distinct() (FILTER addresses are always distinct within a block).
  int64_t ifmap_repeat_distance() const;
  int64_t filter_repeat_distance() const;

  // The order in which SCALE-Sim's USER-mode read buffers prefetch each operand (its "prefetch
  // matrix", flattened, -1 for padding).
  std::vector<int64_t> ifmap_prefetch_order() const;
  std::vector<int64_t> filter_prefetch_order() const;
  // Where the requests of demand row i sit in that order: positions first, first+1, ...,
  // first+count-1, in lane order (a demand row reads one anti-diagonal, or one row, of the
  // prefetch matrix), padding included.
  struct Span {
    int64_t first = 0;
    int64_t count = 0;
  };
  Span ifmap_prefetch_span(int64_t fr, int64_t fc, int64_t i) const;
  Span filter_prefetch_span(int64_t fr, int64_t fc, int64_t i) const;

 private:
  Dataflow dataflow_;
  int64_t r_, c_;
  int64_t ifmap_h_, ifmap_w_, channels_, filter_h_, filter_w_, stride_h_, stride_w_;
  int64_t ofmap_h_, ofmap_w_, m_, n_, k_;
  int64_t sr_, sc_, t_, row_folds_, col_folds_, cycles_per_fold_;
  int64_t ifmap_offset_, filter_offset_;
  // IFMAP address of (m, k) = m part + k part; valid while the window offset (k part: fy, fx)
  // stays within the room left below / right of the window origin (m part: H-1-iy, W-1-ix).
  struct WindowPart {
    int32_t y;
    int32_t x;
    int64_t base;
  };
  std::vector<WindowPart> m_part_, k_part_;
};

template <class Fn>
void LayerModel::for_each_ifmap(int64_t fr, int64_t fc, int64_t i, Fn&& fn) const {
  switch (dataflow_) {
    case Dataflow::kOutputStationary: {  // lane r holds ofmap pixel fr*R+r, streams k = i - r
      const int64_t lo = std::max<int64_t>(0, i - t_ + 1);
      const int64_t hi = std::min(rows_used(fr) - 1, i);
      for (int64_t r = lo; r <= hi; ++r) {
        const int64_t a = ifmap_addr(fr * r_ + r, i - r);
        if (a >= 0) fn(a);
      }
      break;
    }
    case Dataflow::kWeightStationary: {  // R weight-load cycles, then lane r streams m = i-r-R
      const int64_t lo = std::max<int64_t>(0, i - r_ - t_ + 1);
      const int64_t hi = std::min(rows_used(fr) - 1, i - r_);
      for (int64_t r = lo; r <= hi; ++r) {
        const int64_t a = ifmap_addr(i - r - r_, fr * r_ + r);
        if (a >= 0) fn(a);
      }
      break;
    }
    case Dataflow::kInputStationary: {  // inputs loaded bottom row first in the first R cycles
      if (i >= r_) break;
      const int64_t krow = r_ - 1 - i;
      if (krow >= rows_used(fr)) break;
      const int64_t kk = fr * r_ + krow;
      const int64_t cu = cols_used(fc);
      for (int64_t c = 0; c < cu; ++c) {
        const int64_t a = ifmap_addr(fc * c_ + c, kk);
        if (a >= 0) fn(a);
      }
      break;
    }
  }
}

template <class Fn>
void LayerModel::for_each_filter(int64_t fr, int64_t fc, int64_t i, Fn&& fn) const {
  switch (dataflow_) {
    case Dataflow::kOutputStationary: {  // lane c holds filter fc*C+c, streams k = i - c
      const int64_t lo = std::max<int64_t>(0, i - t_ + 1);
      const int64_t hi = std::min(cols_used(fc) - 1, i);
      for (int64_t c = lo; c <= hi; ++c) fn(filter_addr(i - c, fc * c_ + c));
      break;
    }
    case Dataflow::kWeightStationary: {  // weights loaded bottom row first in the first R cycles
      if (i >= r_) break;
      const int64_t krow = r_ - 1 - i;
      if (krow >= rows_used(fr)) break;
      const int64_t kk = fr * r_ + krow;
      const int64_t cu = cols_used(fc);
      for (int64_t c = 0; c < cu; ++c) fn(filter_addr(kk, fc * c_ + c));
      break;
    }
    case Dataflow::kInputStationary: {  // R load cycles, then lane r streams n = i - r - R
      const int64_t lo = std::max<int64_t>(0, i - r_ - t_ + 1);
      const int64_t hi = std::min(rows_used(fr) - 1, i - r_);
      for (int64_t r = lo; r <= hi; ++r) fn(filter_addr(fr * r_ + r, i - r - r_));
      break;
    }
  }
}

}  // namespace npusim::scalesim
