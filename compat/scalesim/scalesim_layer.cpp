#include "compat/scalesim/scalesim_layer.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cstdint>

#include "support/error.hpp"

namespace npusim::scalesim {

namespace {
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Output size along one axis: SCALE-Sim uses ceil((in - filter + stride) / stride), so a last
// window that hangs over the edge still produces an output.
int64_t ofmap_size(int64_t in, int64_t filter, int64_t stride) {
  return ceil_div(in - filter + stride, stride);
}

// Number of input positions along one axis touched by some window.
int64_t covered(int64_t in, int64_t filter, int64_t stride, int64_t out) {
  if (stride <= filter) return std::min(in, (out - 1) * stride + filter);
  int64_t total = 0;
  for (int64_t o = 0; o < out; ++o)
    total += std::max<int64_t>(0, std::min(filter, in - o * stride));
  return total;
}
}  // namespace

LayerModel::LayerModel(const Config& config, const Layer& layer)
    : dataflow_(config.dataflow),
      r_(config.array_rows),
      c_(config.array_cols),
      ifmap_h_(layer.ifmap_h),
      ifmap_w_(layer.ifmap_w),
      channels_(layer.channels),
      filter_h_(layer.filter_h),
      filter_w_(layer.filter_w),
      stride_h_(layer.stride_h),
      stride_w_(layer.stride_w),
      ifmap_offset_(config.ifmap_offset),
      filter_offset_(config.filter_offset) {
  NPUSIM_CHECK(filter_h_ <= ifmap_h_ && filter_w_ <= ifmap_w_, "layer '{}': filter exceeds ifmap",
               layer.name);
  ofmap_h_ = ofmap_size(ifmap_h_, filter_h_, stride_h_);
  ofmap_w_ = ofmap_size(ifmap_w_, filter_w_, stride_w_);
  m_ = ofmap_h_ * ofmap_w_;
  k_ = filter_h_ * filter_w_ * channels_;
  n_ = layer.num_filters;
  switch (dataflow_) {
    case Dataflow::kOutputStationary:
      sr_ = m_, sc_ = n_, t_ = k_;
      cycles_per_fold_ = t_ + r_ + c_ - 2;
      break;
    case Dataflow::kWeightStationary:
      sr_ = k_, sc_ = n_, t_ = m_;
      cycles_per_fold_ = 2 * r_ + c_ + t_ - 2;
      break;
    case Dataflow::kInputStationary:
      sr_ = k_, sc_ = m_, t_ = n_;
      cycles_per_fold_ = 2 * r_ + c_ + t_ - 2;
      break;
  }
  row_folds_ = ceil_div(sr_, r_);
  col_folds_ = ceil_div(sc_, c_);

  // IFMAP address = base(m) + base(k) (HWC layout), valid while the window stays inside.
  m_part_.resize(static_cast<size_t>(m_));
  for (int64_t m = 0; m < m_; ++m) {
    const int64_t iy = (m / ofmap_w_) * stride_h_;
    const int64_t ix = (m % ofmap_w_) * stride_w_;
    m_part_[static_cast<size_t>(m)] = {static_cast<int32_t>(ifmap_h_ - 1 - iy),
                                       static_cast<int32_t>(ifmap_w_ - 1 - ix),
                                       (iy * ifmap_w_ + ix) * channels_};
  }
  k_part_.resize(static_cast<size_t>(k_));
  for (int64_t k = 0; k < k_; ++k) {
    const int64_t fy = k / (filter_w_ * channels_);
    const int64_t rem = k % (filter_w_ * channels_);
    const int64_t fx = rem / channels_;
    const int64_t ch = rem % channels_;
    k_part_[static_cast<size_t>(k)] = {static_cast<int32_t>(fy), static_cast<int32_t>(fx),
                                       fy * ifmap_w_ * channels_ + fx * channels_ + ch};
  }
}

int64_t LayerModel::ifmap_footprint() const {
  return covered(ifmap_h_, filter_h_, stride_h_, ofmap_h_) *
         covered(ifmap_w_, filter_w_, stride_w_, ofmap_w_) * channels_;
}

int64_t LayerModel::ofmap_writes(int64_t fr, int64_t fc, int64_t i) const {
  int64_t a = 0;
  int64_t h = 0;
  if (dataflow_ == Dataflow::kOutputStationary) {
    // T-1 idle rows, then the R result rows leave bottom row first, skewed over the columns.
    const int64_t ru = rows_used(fr);
    a = i - (t_ - 1) - (r_ - ru);
    h = ru;
  } else {
    // 2R-1 idle rows, then T result rows skewed over the columns.
    a = i - (2 * r_ - 1);
    h = t_;
  }
  const int64_t lo = std::max<int64_t>(0, a - h + 1);
  const int64_t hi = std::min(cols_used(fc) - 1, a);
  return hi >= lo ? hi - lo + 1 : 0;
}

namespace {
int64_t span(int64_t lo, int64_t hi) { return hi >= lo ? hi - lo + 1 : 0; }
}  // namespace

int64_t LayerModel::ifmap_lanes(int64_t fr, int64_t fc, int64_t i) const {
  switch (dataflow_) {
    case Dataflow::kOutputStationary:
      return span(std::max<int64_t>(0, i - t_ + 1), std::min(rows_used(fr) - 1, i));
    case Dataflow::kWeightStationary:
      return span(std::max<int64_t>(0, i - r_ - t_ + 1), std::min(rows_used(fr) - 1, i - r_));
    case Dataflow::kInputStationary:
      return (i < r_ && r_ - 1 - i < rows_used(fr)) ? cols_used(fc) : 0;
  }
  return 0;
}

int64_t LayerModel::filter_lanes(int64_t fr, int64_t fc, int64_t i) const {
  switch (dataflow_) {
    case Dataflow::kOutputStationary:
      return span(std::max<int64_t>(0, i - t_ + 1), std::min(cols_used(fc) - 1, i));
    case Dataflow::kWeightStationary:
      return (i < r_ && r_ - 1 - i < rows_used(fr)) ? cols_used(fc) : 0;
    case Dataflow::kInputStationary:
      return span(std::max<int64_t>(0, i - r_ - t_ + 1), std::min(rows_used(fr) - 1, i - r_));
  }
  return 0;
}

namespace {
// Kinks of span(max(a, i - x), min(b, i - y)), clamped at 0 (see ifmap_lanes and friends).
void ramp_breakpoints(int64_t a, int64_t x, int64_t b, int64_t y, std::vector<int64_t>& out) {
  for (int64_t p : {a + x, b + y, a + y, b + x + 1}) out.push_back(p);
}
}  // namespace

void LayerModel::row_breakpoints(int64_t fr, int64_t fc, std::vector<int64_t>& out) const {
  const int64_t ru = rows_used(fr);
  const int64_t cu = cols_used(fc);
  switch (dataflow_) {
    case Dataflow::kOutputStationary:
      ramp_breakpoints(0, t_ - 1, ru - 1, 0, out);  // ifmap
      ramp_breakpoints(0, t_ - 1, cu - 1, 0, out);  // filter
      break;
    case Dataflow::kWeightStationary:
      ramp_breakpoints(0, r_ + t_ - 1, ru - 1, r_, out);  // ifmap
      out.push_back(r_ - ru);                             // filter block
      out.push_back(r_);
      break;
    case Dataflow::kInputStationary:
      out.push_back(r_ - ru);  // ifmap block
      out.push_back(r_);
      ramp_breakpoints(0, r_ + t_ - 1, ru - 1, r_, out);  // filter
      break;
  }
  // ofmap: span(max(0, a - h + 1), min(cu - 1, a)) with a = i - d
  const int64_t d = dataflow_ == Dataflow::kOutputStationary ? (t_ - 1) + (r_ - ru) : 2 * r_ - 1;
  const int64_t h = dataflow_ == Dataflow::kOutputStationary ? ru : t_;
  ramp_breakpoints(0, d + h - 1, cu - 1, d, out);
}

bool LayerModel::ifmap_is_dense_and_distinct() const {
  return (ifmap_h_ - filter_h_) % stride_h_ == 0 && (ifmap_w_ - filter_w_) % stride_w_ == 0 &&
         (ofmap_h_ == 1 || stride_h_ >= filter_h_) && (ofmap_w_ == 1 || stride_w_ >= filter_w_);
}

int64_t LayerModel::ifmap_repeat_distance() const {
  // os / ws: every column fold re-reads the whole IFMAP in the same order (one pass = M*K
  // distinct requests); is: each IFMAP element is read once.
  if (dataflow_ == Dataflow::kInputStationary || col_folds_ == 1) return INT64_MAX;
  return m_ * k_;
}

int64_t LayerModel::filter_repeat_distance() const {
  switch (dataflow_) {
    case Dataflow::kOutputStationary:  // each column fold's K x cu block is read row_folds times
      return row_folds_ == 1 ? INT64_MAX : k_ * cols_used(col_folds_ - 1);
    case Dataflow::kWeightStationary:  // each weight is loaded once
      return INT64_MAX;
    case Dataflow::kInputStationary:  // every column fold re-reads all K x N weights
      return col_folds_ == 1 ? INT64_MAX : k_ * n_;
  }
  return INT64_MAX;
}

namespace {
// Walks an Mp x Np matrix anti-diagonal by anti-diagonal, bottom-left to top-right within a
// diagonal (SCALE-Sim "rolls out" skewed operands this way so prefetch order follows demand).
template <class Elem>
std::vector<int64_t> diagonal_order(int64_t mp, int64_t np, Elem&& elem) {
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(mp * np));
  for (int64_t d = 0; d < mp + np - 1; ++d) {
    const int64_t hi = std::min(d, mp - 1);
    const int64_t lo = std::max<int64_t>(0, d - np + 1);
    for (int64_t row = hi; row >= lo; --row) out.push_back(elem(row, d - row));
  }
  return out;
}
template <class Elem>
std::vector<int64_t> row_major_order(int64_t mp, int64_t np, Elem&& elem) {
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(mp * np));
  for (int64_t row = 0; row < mp; ++row)
    for (int64_t col = 0; col < np; ++col) out.push_back(elem(row, col));
  return out;
}
}  // namespace

namespace {
// Position of (row, col) of an mp x np matrix walked as diagonal_order() walks it.
int64_t diagonal_position(int64_t mp, int64_t np, int64_t row, int64_t col) {
  const int64_t d = row + col;
  // Elements on the diagonals before d: sum over e < d of min(e, mp-1) + 1 - max(0, e-np+1).
  const int64_t upper = d <= mp ? d * (d + 1) / 2 : mp * (mp + 1) / 2 + (d - mp) * mp;
  const int64_t cut = d > np ? (d - np) * (d - np + 1) / 2 : 0;
  return upper - cut + (std::min(d, mp - 1) - row);
}
}  // namespace

LayerModel::Span LayerModel::ifmap_prefetch_span(int64_t fr, int64_t fc, int64_t i) const {
  Span span;
  switch (dataflow_) {
    case Dataflow::kOutputStationary: {  // lane r: row fr*T + i - r, col r
      const int64_t lo = std::max<int64_t>(0, i - t_ + 1);
      const int64_t hi = std::min(rows_used(fr) - 1, i);
      if (hi < lo) return span;
      span.first = diagonal_position(row_folds_ * t_, r_, fr * t_ + i - lo, lo);
      span.count = hi - lo + 1;
      return span;
    }
    case Dataflow::kWeightStationary: {  // lane r: row fr*T + i - R - r, col r
      const int64_t lo = std::max<int64_t>(0, i - r_ - t_ + 1);
      const int64_t hi = std::min(rows_used(fr) - 1, i - r_);
      if (hi < lo) return span;
      span.first = diagonal_position(row_folds_ * t_, r_, fr * t_ + i - r_ - lo, lo);
      span.count = hi - lo + 1;
      return span;
    }
    case Dataflow::kInputStationary: {  // row fc*K + k, cols 0..cu-1
      if (i >= r_ || r_ - 1 - i >= rows_used(fr)) return span;
      span.first = (fc * k_ + fr * r_ + (r_ - 1 - i)) * c_;
      span.count = cols_used(fc);
      return span;
    }
  }
  return span;
}

LayerModel::Span LayerModel::filter_prefetch_span(int64_t fr, int64_t fc, int64_t i) const {
  Span span;
  switch (dataflow_) {
    case Dataflow::kOutputStationary: {  // lane c: row fc*T + i - c, col c
      const int64_t lo = std::max<int64_t>(0, i - t_ + 1);
      const int64_t hi = std::min(cols_used(fc) - 1, i);
      if (hi < lo) return span;
      span.first = diagonal_position(col_folds_ * t_, c_, fc * t_ + i - lo, lo);
      span.count = hi - lo + 1;
      return span;
    }
    case Dataflow::kWeightStationary: {  // row fc*K + k, cols 0..cu-1
      if (i >= r_ || r_ - 1 - i >= rows_used(fr)) return span;
      span.first = (fc * k_ + fr * r_ + (r_ - 1 - i)) * c_;
      span.count = cols_used(fc);
      return span;
    }
    case Dataflow::kInputStationary: {  // lane r: row fr*T + i - R - r, col r
      const int64_t lo = std::max<int64_t>(0, i - r_ - t_ + 1);
      const int64_t hi = std::min(rows_used(fr) - 1, i - r_);
      if (hi < lo) return span;
      span.first = diagonal_position(row_folds_ * t_, r_, fr * t_ + i - r_ - lo, lo);
      span.count = hi - lo + 1;
      return span;
    }
  }
  return span;
}

std::vector<int64_t> LayerModel::ifmap_prefetch_order() const {
  switch (dataflow_) {
    case Dataflow::kOutputStationary:  // per row fold: T x R block of IFMAP^T, diagonal
      return diagonal_order(row_folds_ * t_, r_, [&](int64_t row, int64_t col) -> int64_t {
        const int64_t fr = row / t_;
        const int64_t kk = row % t_;
        if (col >= rows_used(fr)) return -1;
        return ifmap_addr(fr * r_ + col, kk);
      });
    case Dataflow::kWeightStationary:  // per row fold: M x R block of IFMAP, diagonal
      return diagonal_order(row_folds_ * t_, r_, [&](int64_t row, int64_t col) -> int64_t {
        const int64_t fr = row / t_;
        const int64_t mm = row % t_;
        if (col >= rows_used(fr)) return -1;
        return ifmap_addr(mm, fr * r_ + col);
      });
    case Dataflow::kInputStationary:  // per col fold: K x C block of IFMAP^T, row major
      return row_major_order(col_folds_ * k_, c_, [&](int64_t row, int64_t col) -> int64_t {
        const int64_t fc = row / k_;
        const int64_t kk = row % k_;
        if (col >= cols_used(fc)) return -1;
        return ifmap_addr(fc * c_ + col, kk);
      });
  }
  return {};
}

std::vector<int64_t> LayerModel::filter_prefetch_order() const {
  switch (dataflow_) {
    case Dataflow::kOutputStationary:  // per col fold: K x C block of FILTER, diagonal
      return diagonal_order(col_folds_ * t_, c_, [&](int64_t row, int64_t col) -> int64_t {
        const int64_t fc = row / t_;
        const int64_t kk = row % t_;
        if (col >= cols_used(fc)) return -1;
        return filter_addr(kk, fc * c_ + col);
      });
    case Dataflow::kWeightStationary:  // per col fold: K x C block of FILTER, row major
      return row_major_order(col_folds_ * k_, c_, [&](int64_t row, int64_t col) -> int64_t {
        const int64_t fc = row / k_;
        const int64_t kk = row % k_;
        if (col >= cols_used(fc)) return -1;
        return filter_addr(kk, fc * c_ + col);
      });
    case Dataflow::kInputStationary:  // per row fold: N x R block of FILTER^T, diagonal
      return diagonal_order(row_folds_ * t_, r_, [&](int64_t row, int64_t col) -> int64_t {
        const int64_t fr = row / t_;
        const int64_t nn = row % t_;
        if (col >= rows_used(fr)) return -1;
        return filter_addr(fr * r_ + col, nn);
      });
  }
  return {};
}

}  // namespace npusim::scalesim
