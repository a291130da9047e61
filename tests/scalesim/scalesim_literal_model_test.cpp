// npusim's closed-form SCALE-Sim mode against a literal model written in this test: it builds
// SCALE-Sim's operand, prefetch and demand matrices element by element exactly as
// docs/scalesim.md describes them (prefix/suffix idle rows, row flips, skews, diagonal
// roll-out) and runs SCALE-Sim's memory models on them request by request (sets held as
// std::set, windows of sets, lines of words). Random small layers, arrays, SRAM sizes and
// bandwidths, all dataflows, CALC and USER modes: every cycle figure of the reports must agree.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <vector>

#include "compat/scalesim/scalesim_sim.hpp"
#include "tests/scalesim/scalesim_test_util.hpp"

namespace npusim::scalesim {
namespace {

using Mat = std::vector<std::vector<int64_t>>;

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

Mat filled(int64_t rows, int64_t cols) {
  return Mat(static_cast<size_t>(rows), std::vector<int64_t>(static_cast<size_t>(cols), -1));
}
void append(Mat& a, const Mat& b) { a.insert(a.end(), b.begin(), b.end()); }
Mat skew(const Mat& m) {
  const int64_t rows = static_cast<int64_t>(m.size());
  const int64_t cols = static_cast<int64_t>(m[0].size());
  Mat out = filled(rows + cols - 1, cols);
  for (int64_t c = 0; c < cols; ++c)
    for (int64_t i = 0; i < rows; ++i) out[c + i][c] = m[i][c];
  return out;
}
Mat flip(Mat m) {
  std::reverse(m.begin(), m.end());
  return m;
}
// rows [r0, r0+nr) x cols [c0, c0+nc) of m, padded with -1 to pr x pc
Mat block(const Mat& m, int64_t r0, int64_t nr, int64_t c0, int64_t nc, int64_t pr, int64_t pc) {
  Mat out = filled(pr, pc);
  for (int64_t i = 0; i < nr; ++i)
    for (int64_t j = 0; j < nc; ++j) out[i][j] = m[r0 + i][c0 + j];
  return out;
}
Mat transpose(const Mat& m) {
  Mat out = filled(static_cast<int64_t>(m[0].size()), static_cast<int64_t>(m.size()));
  for (size_t i = 0; i < m.size(); ++i)
    for (size_t j = 0; j < m[0].size(); ++j) out[j][i] = m[i][j];
  return out;
}
std::vector<int64_t> diagonal(const Mat& m) {
  const int64_t rows = static_cast<int64_t>(m.size()), cols = static_cast<int64_t>(m[0].size());
  std::vector<int64_t> out;
  for (int64_t d = 0; d < rows + cols; ++d)
    for (int64_t r = std::min(d, rows - 1); r >= std::max<int64_t>(0, d - cols + 1); --r)
      out.push_back(m[r][d - r]);
  return out;
}
std::vector<int64_t> flat(const Mat& m) {
  std::vector<int64_t> out;
  for (const auto& row : m) out.insert(out.end(), row.begin(), row.end());
  return out;
}

struct Literal {
  Mat ifmap_demand, filter_demand, ofmap_demand;
  std::vector<int64_t> ifmap_prefetch, filter_prefetch;
};

Literal build(const Config& cfg, const Layer& l) {
  const int64_t oh = cdiv(l.ifmap_h - l.filter_h + l.stride_h, l.stride_h);
  const int64_t ow = cdiv(l.ifmap_w - l.filter_w + l.stride_w, l.stride_w);
  const int64_t m = oh * ow, k = l.filter_h * l.filter_w * l.channels, n = l.num_filters;
  Mat ifmap = filled(m, k), filter = filled(k, n), ofmap = filled(m, n);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < k; ++j) {
      const int64_t iy = (i / ow) * l.stride_h, ix = (i % ow) * l.stride_w;
      const int64_t fy = j / (l.filter_w * l.channels);
      const int64_t fx = (j % (l.filter_w * l.channels)) / l.channels;
      const int64_t ch = j % l.channels;
      if (iy + fy < l.ifmap_h && ix + fx < l.ifmap_w)
        ifmap[i][j] = cfg.ifmap_offset + ((iy + fy) * l.ifmap_w + (ix + fx)) * l.channels + ch;
    }
  }
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < n; ++j) filter[i][j] = cfg.filter_offset + j * k + i;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) ofmap[i][j] = cfg.ofmap_offset + i * n + j;

  const int64_t r = cfg.array_rows, c = cfg.array_cols;
  Literal lit;
  const auto used = [](int64_t total, int64_t f, int64_t size) {
    return std::min(size, total - f * size);
  };
  if (cfg.dataflow == Dataflow::kOutputStationary) {
    const int64_t t = k;
    const Mat it = transpose(ifmap);  // K x M
    for (int64_t fc = 0; fc < cdiv(n, c); ++fc) {
      for (int64_t fr = 0; fr < cdiv(m, r); ++fr) {
        const int64_t ru = used(m, fr, r), cu = used(n, fc, c);
        Mat a = block(it, 0, t, fr * r, ru, t, r);
        append(a, filled(c - 1, r));
        append(lit.ifmap_demand, skew(a));
        Mat b = block(filter, 0, t, fc * c, cu, t, c);
        append(b, filled(r - 1, c));
        append(lit.filter_demand, skew(b));
        Mat o = filled(t - 1, c);
        append(o, flip(block(ofmap, fr * r, ru, fc * c, cu, r, c)));
        append(lit.ofmap_demand, skew(o));
      }
    }
    Mat ip, fp;
    for (int64_t fr = 0; fr < cdiv(m, r); ++fr)
      append(ip, block(it, 0, t, fr * r, used(m, fr, r), t, r));
    for (int64_t fc = 0; fc < cdiv(n, c); ++fc)
      append(fp, block(filter, 0, t, fc * c, used(n, fc, c), t, c));
    lit.ifmap_prefetch = diagonal(ip);
    lit.filter_prefetch = diagonal(fp);
  } else if (cfg.dataflow == Dataflow::kWeightStationary) {
    const int64_t t = m;
    for (int64_t fc = 0; fc < cdiv(n, c); ++fc) {
      for (int64_t fr = 0; fr < cdiv(k, r); ++fr) {
        const int64_t ru = used(k, fr, r), cu = used(n, fc, c);
        Mat a = filled(r, r);
        append(a, block(ifmap, 0, t, fr * r, ru, t, r));
        append(a, filled(c - 1, r));
        append(lit.ifmap_demand, skew(a));
        Mat b = flip(block(filter, fr * r, ru, fc * c, cu, r, c));
        append(b, filled(r + c + t - 2, c));
        append(lit.filter_demand, b);
        Mat o = filled(2 * r - 1, c);
        append(o, block(ofmap, 0, t, fc * c, cu, t, c));
        append(lit.ofmap_demand, skew(o));
      }
    }
    Mat ip, fp;
    for (int64_t fr = 0; fr < cdiv(k, r); ++fr)
      append(ip, block(ifmap, 0, t, fr * r, used(k, fr, r), t, r));
    for (int64_t fc = 0; fc < cdiv(n, c); ++fc)
      append(fp, block(filter, 0, k, fc * c, used(n, fc, c), k, c));
    lit.ifmap_prefetch = diagonal(ip);
    lit.filter_prefetch = flat(fp);
  } else {
    const int64_t t = n;
    const Mat it = transpose(ifmap);   // K x M
    const Mat ft = transpose(filter);  // N x K
    const Mat ot = transpose(ofmap);   // N x M
    for (int64_t fc = 0; fc < cdiv(m, c); ++fc) {
      for (int64_t fr = 0; fr < cdiv(k, r); ++fr) {
        const int64_t ru = used(k, fr, r), cu = used(m, fc, c);
        Mat a = flip(block(it, fr * r, ru, fc * c, cu, r, c));
        append(a, filled(r + c + t - 2, c));
        append(lit.ifmap_demand, a);
        Mat b = filled(r, r);
        append(b, block(ft, 0, t, fr * r, ru, t, r));
        append(b, filled(c - 1, r));
        append(lit.filter_demand, skew(b));
        Mat o = filled(2 * r - 1, c);
        append(o, block(ot, 0, t, fc * c, cu, t, c));
        append(lit.ofmap_demand, skew(o));
      }
    }
    Mat ip, fp;
    for (int64_t fc = 0; fc < cdiv(m, c); ++fc)
      append(ip, block(it, 0, k, fc * c, used(m, fc, c), k, c));
    for (int64_t fr = 0; fr < cdiv(k, r); ++fr)
      append(fp, block(ft, 0, t, fr * r, used(k, fr, r), t, r));
    lit.ifmap_prefetch = flat(ip);
    lit.filter_prefetch = diagonal(fp);
  }
  return lit;
}

struct Trace {  // cycles of the DRAM trace rows and words moved
  std::vector<int64_t> cycles;
  int64_t words = 0;
};

// SCALE-Sim's CALC-mode read buffer, literally: sets of floor(words/100) new addresses, windows
// of 50 sets, the first window fetched before cycle 0 at 10 words/cycle.
class LiteralCalcRead {
 public:
  explicit LiteralCalcRead(int64_t words) : s_(words / 100) {}
  void service(int64_t cycle, const std::vector<int64_t>& row) {
    for (int64_t a : row) {
      if (a < 0) continue;
      if (!first_seen_) first_seen_ = true, first_ = cycle;
    }
    for (int64_t a : row)
      if (a >= 0) manage(cycle, a);
  }
  Trace finish() {
    if (!current_.empty()) {
      sets_.push_back(current_);
    } else {
      --id_;
    }
    if (!active_done_) {
      last_end_ = -1 - 1;
      const int64_t count = id_ + 1;
      n_active_ = count;
      last_start_ = last_end_ - cdiv(count * s_, 10) + 1;
      prefetch();
    } else {
      pf_end_ = id_;
      prefetch();
    }
    return trace_;
  }

 private:
  bool hit(int64_t a) const {
    const int64_t end = std::min(id_, read_end_ + 1);
    for (int64_t i = read_start_; i < end; ++i)
      if (sets_[i].count(a)) return true;
    return false;
  }
  void manage(int64_t cycle, int64_t a) {
    if (hit(a) || current_.count(a)) return;
    current_.insert(a);
    if (static_cast<int64_t>(current_.size()) < s_) return;
    sets_.push_back(current_);
    current_.clear();
    ++id_;
    if (id_ != read_end_ + 1) return;
    if (!active_done_) {
      last_end_ = first_ - 1 - 1;
      last_start_ = last_end_ - cdiv(50 * s_, 10) + 1;
      prefetch();
      pf_start_ = read_end_ + 1;
      pf_end_ = pf_start_ + 49;
      active_done_ = true;
    } else {
      prefetch();
      pf_start_ += 50;
      pf_end_ += 50;
    }
    read_start_ += 50;
    read_end_ += 50;
    last_start_ = last_end_ + 1;
    last_end_ = cycle;
  }
  void prefetch() {
    const int64_t lo = active_done_ ? pf_start_ : 0;
    const int64_t hi = active_done_ ? pf_end_ : n_active_ - 1;
    for (int64_t i = lo; i <= hi; ++i) trace_.words += static_cast<int64_t>(sets_[i].size());
    const int64_t rows = last_end_ - last_start_ + 1;
    ASSERT_GT(rows, 0);
    for (int64_t i = 0; i < rows; ++i) trace_.cycles.push_back(last_start_ + i + 1);
  }

  int64_t s_;
  std::vector<std::set<int64_t>> sets_;
  std::set<int64_t> current_;
  int64_t id_ = 0, read_start_ = 0, read_end_ = 49, pf_start_ = 0, pf_end_ = 0, n_active_ = 50;
  int64_t last_start_ = -2, last_end_ = -1, first_ = 0;
  bool first_seen_ = false, active_done_ = false;
  Trace trace_;
};

// SCALE-Sim's USER-mode read buffer, literally: fetch matrix in lines of bw words, hashed into
// sets of ceil(words/100) addresses, a wrapping active window.
class LiteralUserRead {
 public:
  LiteralUserRead(int64_t words, int64_t bw, const std::vector<int64_t>& prefetch) : bw_(bw) {
    active_ = cdiv(words, 2);
    pf_ = words - active_;
    lines_ = cdiv(static_cast<int64_t>(prefetch.size()), bw);
    std::vector<int64_t> fetch(static_cast<size_t>(lines_ * bw), -1);
    std::copy(prefetch.begin(), prefetch.end(), fetch.begin());
    const int64_t eps = cdiv(words, 100);
    std::set<int64_t> cur;
    int64_t ctr = 0;
    for (int64_t a : fetch) {
      if (a >= 0) cur.insert(a), ++ctr;
      if (ctr >= eps) sets_.push_back(cur), cur.clear(), ctr = 0;
    }
    sets_.push_back(cur);
    num_ = static_cast<int64_t>(sets_.size());
    nact_ = std::min(cdiv(active_, eps), num_);
    npf_ = std::min(cdiv(pf_, eps), num_ - nact_);
  }
  int64_t service(int64_t cycle, const std::vector<int64_t>& row) {
    if (!full_) {
      const int64_t n = std::min(cdiv(active_, bw_), lines_);
      trace_.words += n * bw_;
      for (int64_t i = 0; i < n; ++i) trace_.cycles.push_back(cycle - n + i);
      last_ = cycle - 1;
      as_ = 0, ae_ = nact_;
      full_ = true;
    }
    int64_t offset = 1;
    for (int64_t a : row) {
      if (a < 0) continue;
      while (!hit(a)) {
        as_ = (as_ + npf_) % num_;
        ae_ = (as_ + nact_) % num_;
        const int64_t n = cdiv(pf_, bw_);
        trace_.words += n * bw_;
        for (int64_t i = 0; i < n; ++i) trace_.cycles.push_back(last_ + i + 1 + 1);
        last_ = trace_.cycles.back();
        offset += std::max<int64_t>(0, last_ - (cycle + offset));
      }
    }
    return cycle + offset;
  }
  Trace finish() const { return trace_; }

 private:
  bool hit(int64_t a) const {
    std::vector<int64_t> ids;
    if (as_ < ae_) {
      for (int64_t i = as_; i < ae_; ++i) ids.push_back(i);
    } else {
      for (int64_t i = as_; i < num_; ++i) ids.push_back(i);
      for (int64_t i = 0; i < ae_; ++i) ids.push_back(i);
    }
    for (int64_t i : ids)
      if (sets_[i].count(a)) return true;
    return false;
  }
  int64_t bw_, active_, pf_, lines_, num_ = 0, nact_ = 0, npf_ = 0, as_ = 0, ae_ = 0, last_ = 0;
  bool full_ = false;
  std::vector<std::set<int64_t>> sets_;
  Trace trace_;
};

// SCALE-Sim's OFMAP write buffer, literally: words go into lines of bw, a drain of
// ceil(half/bw) lines starts when more than half is occupied.
class LiteralWrite {
 public:
  LiteralWrite(int64_t words, int64_t bw) : total_(words), bw_(bw), free_(words) {
    drain_ = words - cdiv(words, 2);
  }
  int64_t service(int64_t cycle, const std::vector<int64_t>& row) {
    int64_t offset = 0;
    int64_t current = cycle;
    for (int64_t a : row) {
      if (a < 0) continue;
      if (line_.empty()) line_.assign(static_cast<size_t>(bw_), -1), idx_ = 0;
      line_[idx_++] = a;
      --free_;
      if (idx_ == bw_) matrix_.push_back(line_), line_.clear();
      if (current < drain_end_) {
        if (free_ <= 0) offset += drain_end_ - current, current = drain_end_;
      } else if (free_ < total_ - drain_) {
        flush();
        drain_end_ = empty(current);
      }
    }
    return current;
  }
  Trace finish(int64_t cycle) {
    flush();
    while (start_line_ < static_cast<int64_t>(matrix_.size())) cycle = empty(cycle) + 1;
    return trace_;
  }

 private:
  void flush() {
    if (!line_.empty() && idx_ > 0) matrix_.push_back(line_);
    line_.clear();
  }
  int64_t empty(int64_t start) {
    const int64_t end =
        std::min(start_line_ + cdiv(drain_, bw_), static_cast<int64_t>(matrix_.size()));
    const int64_t n = end - start_line_;
    int64_t words = n * bw_;
    for (int64_t a : matrix_[end - 1])
      if (a == -1) --words;
    trace_.words += words;
    for (int64_t i = 0; i < n; ++i) trace_.cycles.push_back(start + i);
    free_ += words;
    start_line_ = end;
    return start + n - 1;
  }
  int64_t total_, bw_, free_, drain_, idx_ = 0, start_line_ = 0, drain_end_ = 0;
  std::vector<int64_t> line_;
  Mat matrix_;
  Trace trace_;
};

struct Span {
  int64_t first = -1, last = -1;
};
Span valid_rows(const Mat& m) {
  Span s;
  for (int64_t i = 0; i < static_cast<int64_t>(m.size()); ++i) {
    if (std::any_of(m[i].begin(), m[i].end(), [](int64_t a) { return a >= 0; })) {
      if (s.first < 0) s.first = i;
      s.last = i;
    }
  }
  return s;
}

LayerResult literal_run(const Config& cfg, const Layer& layer) {
  const Literal lit = build(cfg, layer);
  const bool user = cfg.bandwidth_mode == BandwidthMode::kUser;
  const int64_t bw = cfg.user_bandwidth_words;
  LiteralCalcRead ic(cfg.ifmap_sram_kb * 1024), fc(cfg.filter_sram_kb * 1024);
  LiteralUserRead iu(cfg.ifmap_sram_kb * 1024, bw, lit.ifmap_prefetch);
  LiteralUserRead fu(cfg.filter_sram_kb * 1024, bw, lit.filter_prefetch);
  LiteralWrite ow(cfg.ofmap_sram_kb * 1024, user ? bw : cfg.array_cols);
  const int64_t rows = static_cast<int64_t>(lit.ofmap_demand.size());
  EXPECT_EQ(static_cast<int64_t>(lit.ifmap_demand.size()), rows);
  EXPECT_EQ(static_cast<int64_t>(lit.filter_demand.size()), rows);
  std::vector<int64_t> iout, fout, oout;
  int64_t stalls = 0;
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t cycle = i + stalls;
    int64_t a = cycle + 1, b = cycle + 1;
    if (user) {
      a = iu.service(cycle, lit.ifmap_demand[i]);
      b = fu.service(cycle, lit.filter_demand[i]);
    } else {
      ic.service(cycle, lit.ifmap_demand[i]);
      fc.service(cycle, lit.filter_demand[i]);
    }
    const int64_t o = ow.service(cycle, lit.ofmap_demand[i]);
    iout.push_back(a), fout.push_back(b), oout.push_back(o);
    stalls += std::max({a - cycle - 1, b - cycle - 1, o - cycle});
  }
  LayerResult res;
  res.total_cycles = oout.back();
  res.stall_cycles = stalls;
  const auto sram = [](OperandAccess& acc, const Mat& m, const std::vector<int64_t>& out) {
    const Span s = valid_rows(m);
    acc.sram_start_cycle = out[s.first];
    acc.sram_stop_cycle = out[s.last];
  };
  sram(res.ifmap, lit.ifmap_demand, iout);
  sram(res.filter, lit.filter_demand, fout);
  sram(res.ofmap, lit.ofmap_demand, oout);
  const auto dram = [](OperandAccess& acc, const Trace& t) {
    acc.dram_accesses = t.words;
    acc.dram_start_cycle = t.cycles.front();
    acc.dram_stop_cycle = t.cycles.back();
  };
  dram(res.ifmap, user ? iu.finish() : ic.finish());
  dram(res.filter, user ? fu.finish() : fc.finish());
  dram(res.ofmap, ow.finish(res.total_cycles));
  return res;
}

void expect_same(const LayerResult& got, const LayerResult& want) {
  EXPECT_EQ(got.total_cycles, want.total_cycles);
  EXPECT_EQ(got.stall_cycles, want.stall_cycles);
  const char* names[] = {"ifmap", "filter", "ofmap"};
  const OperandAccess* g[] = {&got.ifmap, &got.filter, &got.ofmap};
  const OperandAccess* w[] = {&want.ifmap, &want.filter, &want.ofmap};
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE(names[i]);
    EXPECT_EQ(g[i]->sram_start_cycle, w[i]->sram_start_cycle);
    EXPECT_EQ(g[i]->sram_stop_cycle, w[i]->sram_stop_cycle);
    EXPECT_EQ(g[i]->dram_start_cycle, w[i]->dram_start_cycle);
    EXPECT_EQ(g[i]->dram_stop_cycle, w[i]->dram_stop_cycle);
    EXPECT_EQ(g[i]->dram_accesses, w[i]->dram_accesses);
  }
}

void run_random_cases(BandwidthMode mode, uint32_t seed, int cases) {
  std::mt19937 rng(seed);
  const auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  const Dataflow dataflows[] = {Dataflow::kOutputStationary, Dataflow::kWeightStationary,
                                Dataflow::kInputStationary};
  for (int i = 0; i < cases; ++i) {
    Layer l;
    l.name = "random";
    if (pick(0, 1) == 0) {  // GEMM as SCALE-Sim converts it
      const int64_t m = pick(1, 48), n = pick(1, 40), k = pick(1, 48);
      l.ifmap_h = m, l.ifmap_w = k, l.filter_h = 1, l.filter_w = k, l.channels = 1;
      l.num_filters = n, l.stride_h = l.stride_w = 1;
    } else {  // convolution, including windows that hang over the edge
      l.filter_h = pick(1, 4), l.filter_w = pick(1, 4);
      l.ifmap_h = pick(l.filter_h, 14), l.ifmap_w = pick(l.filter_w, 14);
      l.channels = pick(1, 4), l.num_filters = pick(1, 20);
      l.stride_h = pick(1, 3), l.stride_w = pick(1, 3);
    }
    Config cfg = testing::make_config(dataflows[pick(0, 2)], pick(1, 10), pick(1, 10), pick(1, 2),
                                      mode, pick(1, 9));
    cfg.ofmap_sram_kb = pick(1, 2);
    SCOPED_TRACE(::testing::Message()
                 << "case " << i << ": " << dataflow_name(cfg.dataflow) << " " << cfg.array_rows
                 << "x" << cfg.array_cols << " kB " << cfg.ifmap_sram_kb << "/" << cfg.ofmap_sram_kb
                 << " bw " << cfg.user_bandwidth_words << " layer " << l.ifmap_h << "x" << l.ifmap_w
                 << " f" << l.filter_h << "x" << l.filter_w << " c" << l.channels << " n"
                 << l.num_filters << " s" << l.stride_h << "," << l.stride_w);
    expect_same(simulate_layer(cfg, l), literal_run(cfg, l));
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(ScalesimLiteralModel, CalcModeRandomLayers) { run_random_cases(BandwidthMode::kCalc, 1, 150); }

TEST(ScalesimLiteralModel, UserModeRandomLayers) { run_random_cases(BandwidthMode::kUser, 2, 150); }

void expect_all_same(const LayerResult& got, const LayerResult& want) {
  expect_same(got, want);
  EXPECT_EQ(got.ifmap.sram_accesses, want.ifmap.sram_accesses);
  EXPECT_EQ(got.filter.sram_accesses, want.filter.sram_accesses);
  EXPECT_EQ(got.ofmap.sram_accesses, want.ofmap.sram_accesses);
  EXPECT_EQ(got.overall_util_pct, want.overall_util_pct);
  EXPECT_EQ(got.mapping_efficiency_pct, want.mapping_efficiency_pct);
  EXPECT_EQ(got.compute_util_pct, want.compute_util_pct);
}

TEST(ScalesimLiteralModel, RunsOfRowsMatchRowByRow) {
  // In CALC mode simulate_layer applies runs of identical rows in one step; with an observer it
  // goes row by row. Medium layers, small OFMAP buffers (frequent drains), GEMMs whose DRAM
  // estimate is counted per row: both must give the same report.
  std::mt19937 rng(3);
  const auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  const Dataflow dataflows[] = {Dataflow::kOutputStationary, Dataflow::kWeightStationary,
                                Dataflow::kInputStationary};
  const RowObserver ignore = [](const RowTiming&) {};
  for (int i = 0; i < 60; ++i) {
    Layer l;
    l.name = "random";
    if (pick(0, 2) > 0) {
      const int64_t m = pick(1, 400), n = pick(1, 300), k = pick(1, 400);
      l.ifmap_h = m, l.ifmap_w = k, l.filter_h = 1, l.filter_w = k, l.channels = 1;
      l.num_filters = n, l.stride_h = l.stride_w = 1;
    } else {
      l.filter_h = pick(1, 3), l.filter_w = pick(1, 3);
      l.ifmap_h = pick(l.filter_h, 30), l.ifmap_w = pick(l.filter_w, 30);
      l.channels = pick(1, 16), l.num_filters = pick(1, 64);
      l.stride_h = pick(1, 2), l.stride_w = pick(1, 2);
    }
    Config cfg = testing::make_config(dataflows[pick(0, 2)], pick(1, 64), pick(1, 64), pick(1, 8));
    cfg.ofmap_sram_kb = pick(1, 4);
    SCOPED_TRACE(::testing::Message() << "case " << i << ": " << dataflow_name(cfg.dataflow) << " "
                                      << cfg.array_rows << "x" << cfg.array_cols);
    expect_all_same(simulate_layer(cfg, l), simulate_layer(cfg, l, &ignore));
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(ScalesimLiteralModel, PeriodicIfmapEstimateMatchesFullWalk) {
  // os / ws convolutions whose IFMAP overflows half the SRAM, with many column folds: without an
  // observer, simulate_layer stops walking the IFMAP once its estimate repeats from one column
  // fold to the next; with one, it walks every request. Both must give the same report.
  std::mt19937 rng(4);
  const auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  const RowObserver ignore = [](const RowTiming&) {};
  for (int i = 0; i < 40; ++i) {
    Layer l;
    l.name = "conv";
    l.filter_h = pick(1, 3), l.filter_w = pick(2, 3);
    l.ifmap_h = pick(8, 24), l.ifmap_w = pick(8, 24);
    l.channels = pick(4, 12), l.num_filters = pick(16, 48);
    l.stride_h = pick(1, 2), l.stride_w = 1;
    const Dataflow df = pick(0, 1) ? Dataflow::kOutputStationary : Dataflow::kWeightStationary;
    Config cfg = testing::make_config(df, pick(2, 12), pick(2, 6), 1);
    cfg.ofmap_sram_kb = pick(1, 2);
    SCOPED_TRACE(::testing::Message() << "case " << i << ": " << dataflow_name(df) << " "
                                      << cfg.array_rows << "x" << cfg.array_cols);
    expect_all_same(simulate_layer(cfg, l), simulate_layer(cfg, l, &ignore));
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(ScalesimLiteralModel, ReferenceGemmAllModes) {
  // The GEMM of the real SCALE-Sim runs in tests/scalesim/data, here on several arrays.
  Layer l;
  l.name = "gemm";
  l.ifmap_h = 20, l.ifmap_w = 28, l.filter_h = 1, l.filter_w = 28, l.channels = 1;
  l.num_filters = 12;
  for (auto df :
       {Dataflow::kOutputStationary, Dataflow::kWeightStationary, Dataflow::kInputStationary}) {
    for (auto mode : {BandwidthMode::kCalc, BandwidthMode::kUser}) {
      for (int64_t size : {3, 8, 5}) {
        const Config cfg = testing::make_config(df, size, 8, 1, mode, 4);
        SCOPED_TRACE(::testing::Message() << dataflow_name(df) << " " << size);
        expect_same(simulate_layer(cfg, l), literal_run(cfg, l));
      }
    }
  }
}

}  // namespace
}  // namespace npusim::scalesim
