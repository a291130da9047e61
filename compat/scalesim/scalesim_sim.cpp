#include "compat/scalesim/scalesim_sim.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <optional>

#include "compat/scalesim/scalesim_layer.hpp"
#include "compat/scalesim/scalesim_memory.hpp"
#include "support/error.hpp"

namespace npusim::scalesim {

namespace {

struct RowRange {
  int64_t first = -1;  // global demand row of the first / last valid request
  int64_t last = -1;
};

// First and last demand rows holding a request, found by scanning from both ends (the scan
// stops at the first row with a request, so it is short).
template <class HasRequest>
RowRange request_rows(const LayerModel& lm, HasRequest&& has_request) {
  RowRange out;
  const int64_t l = lm.cycles_per_fold();
  const int64_t rows = lm.demand_rows();
  for (int64_t g = 0; g < rows; ++g) {
    const int64_t f = g / l;
    if (has_request(f % lm.row_folds(), f / lm.row_folds(), g % l)) {
      out.first = g;
      break;
    }
  }
  for (int64_t g = rows - 1; g >= 0; --g) {
    const int64_t f = g / l;
    if (has_request(f % lm.row_folds(), f / lm.row_folds(), g % l)) {
      out.last = g;
      break;
    }
  }
  return out;
}

}  // namespace

LayerResult simulate_layer(const Config& config, const Layer& layer, const RowObserver* observer) {
  const LayerModel lm(config, layer);
  LayerResult res;
  res.name = layer.name;
  res.macs = lm.macs();
  const int64_t r = lm.rows();
  const int64_t c = lm.cols();
  const bool user = config.bandwidth_mode == BandwidthMode::kUser;

  // --- Compute-side statistics (closed form, in SCALE-Sim's fold order and float arithmetic).
  double mapping_sum = 0;
  double util_sum = 0;
  const int64_t util_cycles = lm.dataflow() == Dataflow::kOutputStationary
                                  ? lm.t() + r + c - 2
                                  : 2 * r + 2 * c + lm.t() - 3;
  for (int64_t fc = 0; fc < lm.col_folds(); ++fc) {
    for (int64_t fr = 0; fr < lm.row_folds(); ++fr) {
      const int64_t used = lm.rows_used(fr) * lm.cols_used(fc);
      mapping_sum += static_cast<double>(used) / static_cast<double>(r * c);
      util_sum += static_cast<double>(used * lm.t()) / static_cast<double>(r * c * util_cycles);
    }
  }
  const double folds = static_cast<double>(lm.folds());
  res.mapping_efficiency_pct = mapping_sum / folds * 100;
  res.compute_util_pct = util_sum / folds * 100;

  const int64_t m = lm.m(), n = lm.n(), k = lm.k();
  switch (lm.dataflow()) {
    case Dataflow::kOutputStationary:
      res.ifmap.sram_accesses = m * k * lm.col_folds();
      res.filter.sram_accesses = k * n * lm.row_folds();
      // SCALE-Sim adds rows + cols of every fold's output block to the OS write count.
      res.ofmap.sram_accesses = m * n + lm.folds() * (r + c);
      break;
    case Dataflow::kWeightStationary:
      res.ifmap.sram_accesses = m * k * lm.col_folds();
      res.filter.sram_accesses = k * n;
      res.ofmap.sram_accesses = m * n * lm.row_folds();
      break;
    case Dataflow::kInputStationary:
      res.ifmap.sram_accesses = m * k;
      res.filter.sram_accesses = k * n * lm.col_folds();
      res.ofmap.sram_accesses = m * n * lm.row_folds();
      break;
  }

  // --- Which rows hold requests (for the SRAM start / stop cycles).
  const RowRange ifmap_rows = request_rows(lm, [&](int64_t fr, int64_t fc, int64_t i) {
    bool any = false;
    lm.for_each_ifmap(fr, fc, i, [&](int64_t) { any = true; });
    return any;
  });
  const RowRange filter_rows = request_rows(lm, [&](int64_t fr, int64_t fc, int64_t i) {
    bool any = false;
    lm.for_each_filter(fr, fc, i, [&](int64_t) { any = true; });
    return any;
  });
  const RowRange ofmap_rows = request_rows(
      lm, [&](int64_t fr, int64_t fc, int64_t i) { return lm.ofmap_writes(fr, fc, i) > 0; });
  NPUSIM_CHECK(ifmap_rows.first >= 0 && filter_rows.first >= 0 && ofmap_rows.first >= 0,
               "layer '{}': an operand has no request at all", layer.name);

  // --- Memory models.
  const int64_t ifmap_words = config.ifmap_sram_kb * 1024;
  const int64_t filter_words = config.filter_sram_kb * 1024;
  const int64_t ofmap_words = config.ofmap_sram_kb * 1024;
  WriteBuffer ofmap_buffer(ofmap_words, user ? config.user_bandwidth_words : c);

  std::optional<CalcReadEstimator> ifmap_calc, filter_calc;
  std::optional<UserReadBuffer> ifmap_user, filter_user;
  bool walk_ifmap = false;
  bool walk_filter = false;
  bool count_ifmap = false;
  bool count_filter = false;
  bool os_filter_blocks = false;
  if (user) {
    // Requests are looked up by their position in the prefetch order (a demand row reads
    // consecutive positions); IFMAPs with overlapping windows also by address.
    ifmap_user.emplace(ifmap_words, config.user_bandwidth_words, lm.ifmap_offset(),
                       lm.ifmap_words(), lm.ifmap_prefetch_order(),
                       lm.ifmap_is_dense_and_distinct());
    filter_user.emplace(filter_words, config.user_bandwidth_words, lm.filter_offset(),
                        lm.filter_words(), lm.filter_prefetch_order(), true);
  } else {
    // An operand with fewer distinct addresses than one epoch is fetched once, before cycle 0:
    // no need to walk its requests.
    const int64_t ifmap_epoch = 50 * (ifmap_words / 100);
    const int64_t filter_epoch = 50 * (filter_words / 100);
    walk_ifmap = lm.ifmap_footprint() >= ifmap_epoch;
    walk_filter = lm.filter_footprint() >= filter_epoch;
    // When an address can only come back after at least one epoch's worth of requests, every
    // request is new and only the number of requests per row matters.
    count_ifmap =
        walk_ifmap && lm.ifmap_is_dense_and_distinct() && lm.ifmap_repeat_distance() >= ifmap_epoch;
    count_filter = walk_filter && lm.filter_repeat_distance() >= filter_epoch;
    // os re-reads each column fold's K x cu weight block once per row fold. A block smaller
    // than an epoch: its first pass is all new; if an epoch completes during that pass at
    // request p, the next pass brings the p+1 requests before it back as new, and nothing else
    // is new until the next block (no further epoch can complete on one block).
    os_filter_blocks = walk_filter && !count_filter && lm.dataflow() == Dataflow::kOutputStationary;
    if (os_filter_blocks) count_filter = true;
    ifmap_calc.emplace(ifmap_words, lm.ifmap_offset(),
                       walk_ifmap && !count_ifmap ? lm.ifmap_words() : 0);
    filter_calc.emplace(filter_words, lm.filter_offset(),
                        walk_filter && !count_filter ? lm.filter_words() : 0);
  }
  const int64_t filter_epoch_words = user ? 0 : filter_calc->epoch_words();
  // Whether this fold's FILTER requests are counted (all new) in the CALC estimate.
  bool filter_counts = count_filter;
  int64_t block_start_in_epoch = 0;
  int64_t block_start_completions = 0;
  if (!user) {
    if (!walk_ifmap) ifmap_calc->set_unique_without_walk(lm.ifmap_footprint());
    if (!walk_filter) filter_calc->set_unique_without_walk(lm.filter_footprint());
  }

  // --- Walk the demand rows.
  const int64_t l = lm.cycles_per_fold();
  // os / ws read the same IFMAP stream in every column fold (one "pass"). Right after an epoch
  // completes nothing is remembered, so if the first epoch of two consecutive passes completes
  // at the same request of the pass, the estimate is periodic from there on: every later pass
  // completes its epochs on the same rows as the last one walked, and ends in the same state.
  // The walk then stops; without an observer (which asks for the plain walk).
  const bool ifmap_may_repeat = !user && walk_ifmap && !count_ifmap && !observer &&
                                lm.dataflow() != Dataflow::kInputStationary && lm.col_folds() >= 3;
  const int64_t pass_rows = lm.row_folds() * l;
  bool ifmap_periodic = false;
  std::vector<int64_t> ifmap_completion_rows;  // demand row of each walked completion
  std::vector<int64_t> ifmap_pending_rows;     // demand rows of the completions still to come
  size_t next_pending = 0;
  int64_t pass_requests = 0, pass_completions = 0, last_phase = -1;
  int64_t stalls = 0;
  int64_t last_out = 0;
  int64_t g = 0;
  // One demand row, request by request.
  const auto step = [&](int64_t fr, int64_t fc, int64_t i) {
    const int64_t cycle = g + stalls;
    int64_t ifmap_out = cycle + 1;
    int64_t filter_out = cycle + 1;
    if (user) {
      const LayerModel::Span ispan = lm.ifmap_prefetch_span(fr, fc, i);
      ifmap_out = ifmap_user->service_positions(cycle, ispan.first, ispan.count);
      const LayerModel::Span span = lm.filter_prefetch_span(fr, fc, i);
      filter_out = filter_user->service_positions(cycle, span.first, span.count);
    } else {
      if (count_ifmap) {
        ifmap_calc->request_new(lm.ifmap_lanes(fr, fc, i), cycle);
      } else if (walk_ifmap && !ifmap_periodic) {
        lm.for_each_ifmap(fr, fc, i, [&](int64_t a) { ifmap_calc->request(a, cycle); });
        while (static_cast<int64_t>(ifmap_completion_rows.size()) < ifmap_calc->completions())
          ifmap_completion_rows.push_back(g);
      } else if (walk_ifmap) {
        while (next_pending < ifmap_pending_rows.size() && ifmap_pending_rows[next_pending] == g) {
          ifmap_calc->add_completion(cycle);
          ++next_pending;
        }
      }
      if (filter_counts) {
        filter_calc->request_new(lm.filter_lanes(fr, fc, i), cycle);
      } else if (walk_filter && !count_filter) {
        lm.for_each_filter(fr, fc, i, [&](int64_t a) { filter_calc->request(a, cycle); });
      }
    }
    const int64_t writes = lm.ofmap_writes(fr, fc, i);
    const int64_t ofmap_out = writes > 0 ? ofmap_buffer.service_row(cycle, writes) : cycle;

    if (g == ifmap_rows.first) res.ifmap.sram_start_cycle = ifmap_out;
    if (g == ifmap_rows.last) res.ifmap.sram_stop_cycle = ifmap_out;
    if (g == filter_rows.first) res.filter.sram_start_cycle = filter_out;
    if (g == filter_rows.last) res.filter.sram_stop_cycle = filter_out;
    if (g == ofmap_rows.first) res.ofmap.sram_start_cycle = ofmap_out;
    if (g == ofmap_rows.last) res.ofmap.sram_stop_cycle = ofmap_out;

    if (observer) (*observer)(RowTiming{g, cycle, ifmap_out, filter_out, ofmap_out});
    const int64_t stall =
        std::max({ifmap_out - cycle - 1, filter_out - cycle - 1, ofmap_out - cycle});
    stalls += stall;
    last_out = ofmap_out;
    ++g;
  };

  // In CALC mode without per-address walks, runs of identical rows (same number of writes and
  // requests) that trigger no drain and no stall are applied in one step. Rows whose timing is
  // reported (first / last requests, the last row) always go through `step`.
  const auto runs_now = [&] {
    return !user && !observer && (count_ifmap || !walk_ifmap || ifmap_periodic) &&
           (count_filter || !walk_filter);
  };
  const int64_t special[] = {ifmap_rows.first,    ifmap_rows.last,  filter_rows.first,
                             filter_rows.last,    ofmap_rows.first, ofmap_rows.last,
                             lm.demand_rows() - 1};
  std::vector<int64_t> cuts;
  for (int64_t fc = 0; fc < lm.col_folds(); ++fc) {
    if (ifmap_may_repeat && !ifmap_periodic) {
      if (fc > 0) {
        // Phase (request index within the pass) of the last pass's first completion.
        const int64_t phase = ifmap_calc->completions() > pass_completions
                                  ? ifmap_calc->completion_request(pass_completions) - pass_requests
                                  : -1;
        if (phase >= 0 && phase == last_phase) {
          ifmap_periodic = true;
          const int64_t first = pass_completions;
          const int64_t count = ifmap_calc->completions() - first;
          for (int64_t t = 1; t < lm.col_folds() - fc + 1; ++t)
            for (int64_t j = 0; j < count; ++j)
              ifmap_pending_rows.push_back(ifmap_completion_rows[static_cast<size_t>(first + j)] +
                                           t * pass_rows);
        }
        last_phase = phase;
      }
      pass_requests = ifmap_calc->requests();
      pass_completions = ifmap_calc->completions();
    }
    for (int64_t fr = 0; fr < lm.row_folds(); ++fr) {
      if (os_filter_blocks) {
        if (lm.k() * lm.cols_used(fc) >= filter_epoch_words) {
          filter_counts = true;  // a repeat is an epoch or more away: every request is new
        } else {
          if (fr == 0) {
            block_start_in_epoch = filter_calc->in_epoch();
            block_start_completions = filter_calc->completions();
          } else if (fr == 1 && filter_calc->completions() > block_start_completions) {
            filter_calc->add_new_untimed(filter_epoch_words - block_start_in_epoch);
          }
          filter_counts = fr == 0;
        }
      }
      if (!runs_now()) {
        for (int64_t i = 0; i < l; ++i) step(fr, fc, i);
        continue;
      }
      const int64_t base = g;
      cuts.clear();
      lm.row_breakpoints(fr, fc, cuts);
      const auto cut_at = [&](int64_t row) {
        if (row >= base && row < base + l) {
          cuts.push_back(row - base);
          cuts.push_back(row - base + 1);
        }
      };
      for (int64_t sp : special) cut_at(sp);
      for (size_t p = next_pending; p < ifmap_pending_rows.size(); ++p) {
        if (ifmap_pending_rows[p] >= base + l) break;
        cut_at(ifmap_pending_rows[p]);
      }
      cuts.push_back(0);
      cuts.push_back(l);
      for (auto& x : cuts) x = std::clamp<int64_t>(x, 0, l);
      std::sort(cuts.begin(), cuts.end());
      cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
      for (size_t ci = 0; ci + 1 < cuts.size(); ++ci) {
        int64_t i = cuts[ci];
        const int64_t end = cuts[ci + 1];
        // Between breakpoints every per-row count is affine in i: equal ends mean constant.
        const int64_t w = lm.ofmap_writes(fr, fc, i);
        const int64_t li = count_ifmap ? lm.ifmap_lanes(fr, fc, i) : 0;
        const int64_t lf = filter_counts ? lm.filter_lanes(fr, fc, i) : 0;
        const bool constant = end - i >= 2 && w == lm.ofmap_writes(fr, fc, end - 1) &&
                              li == (count_ifmap ? lm.ifmap_lanes(fr, fc, end - 1) : 0) &&
                              lf == (filter_counts ? lm.filter_lanes(fr, fc, end - 1) : 0);
        while (i < end) {
          const int64_t cycle = g + stalls;
          const int64_t run = constant ? ofmap_buffer.bulk_rows(cycle, w, end - i) : 0;
          if (run == 0) {
            step(fr, fc, i);
            ++i;
            continue;
          }
          if (count_ifmap) ifmap_calc->request_new_rows(li, run, cycle);
          if (filter_counts) filter_calc->request_new_rows(lf, run, cycle);
          last_out = cycle + run - 1;
          g += run;
          i += run;
        }
      }
    }
  }
  res.total_cycles = last_out;
  res.stall_cycles = stalls;
  res.compute_cycles = res.total_cycles - res.stall_cycles;
  NPUSIM_CHECK(res.compute_cycles == lm.demand_rows() - 1,
               "layer '{}': compute cycles {} differ from folds * cycles_per_fold - 1 = {}",
               layer.name, res.compute_cycles, lm.demand_rows() - 1);
  res.overall_util_pct =
      static_cast<double>(res.macs * 100) / static_cast<double>(res.total_cycles * r * c);

  ofmap_buffer.finish(res.total_cycles);
  const DramActivity ifmap_dram = user ? ifmap_user->finish() : ifmap_calc->finish();
  const DramActivity filter_dram = user ? filter_user->finish() : filter_calc->finish();
  const DramActivity& ofmap_dram = ofmap_buffer.dram();
  res.ifmap.dram_accesses = ifmap_dram.accesses;
  res.ifmap.dram_start_cycle = ifmap_dram.start_cycle;
  res.ifmap.dram_stop_cycle = ifmap_dram.stop_cycle;
  res.filter.dram_accesses = filter_dram.accesses;
  res.filter.dram_start_cycle = filter_dram.start_cycle;
  res.filter.dram_stop_cycle = filter_dram.stop_cycle;
  res.ofmap.dram_accesses = ofmap_dram.accesses;
  res.ofmap.dram_start_cycle = ofmap_dram.start_cycle;
  res.ofmap.dram_stop_cycle = ofmap_dram.stop_cycle;
  return res;
}

}  // namespace npusim::scalesim
