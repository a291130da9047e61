#include "compiler/passes/pruning.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <numeric>

#include "compiler/passes/parameters.hpp"
#include "support/error.hpp"

namespace npusim {

namespace {

constexpr int kMaxGroup = 64;

bool parse_number(const std::string& s, double& v) {
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, v);
  return !s.empty() && ec == std::errc() && p == end && std::isfinite(v);
}

bool parse_int(const std::string& s, int& v) {
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, v);
  return !s.empty() && ec == std::errc() && p == end;
}

// The k smallest magnitudes of `weights` (ties: the earlier index first) set to zero.
void zero_smallest(std::vector<float>& weights, uint64_t k) {
  if (k == 0) return;
  std::vector<uint32_t> order(weights.size());
  std::iota(order.begin(), order.end(), 0u);
  std::nth_element(order.begin(), order.begin() + long(k - 1), order.end(),
                   [&](uint32_t a, uint32_t b) {
                     const float ma = std::fabs(weights[a]), mb = std::fabs(weights[b]);
                     return ma < mb || (ma == mb && a < b);
                   });
  for (uint64_t i = 0; i < k; ++i) weights[order[i]] = 0.0f;
}

// Element (r, o) of a layer's weights: reduction row r, output channel o.
size_t at(size_t r, size_t o, size_t filters) { return r * filters + o; }

// At most n non-zeros in each run of m consecutive reduction rows of every output channel: the
// largest magnitudes stay (ties: the earlier row).
void keep_n_of_m(std::vector<float>& w, size_t rows, size_t filters, int n, int m) {
  std::vector<std::pair<float, size_t>> group;
  for (size_t o = 0; o < filters; ++o) {
    for (size_t r0 = 0; r0 < rows; r0 += size_t(m)) {
      group.clear();
      for (size_t r = r0; r < std::min(rows, r0 + size_t(m)); ++r) {
        group.emplace_back(std::fabs(w[at(r, o, filters)]), r);
      }
      if (group.size() <= size_t(n)) continue;
      std::stable_sort(group.begin(), group.end(),
                       [](const auto& a, const auto& b) { return a.first > b.first; });
      for (size_t g = size_t(n); g < group.size(); ++g) w[at(group[g].second, o, filters)] = 0.0f;
    }
  }
}

}  // namespace

PruneSpec parse_prune_spec(const std::string& text) {
  PruneSpec s;
  s.text = text;
  const auto colon = text.find(':');
  const std::string head = text.substr(0, colon);
  const std::string tail = colon == std::string::npos ? "" : text.substr(colon + 1);
  const std::string expected = fmt::format(
      "--prune '{}': expected magnitude:F (each layer's fraction F of its weights, the smallest "
      "in magnitude, set to zero), global:F (the fraction F of all weights), with 0 <= F < 1, or "
      "N:M (at most N non-zeros in every M consecutive weights along the reduction axis, 1 <= N "
      "< M <= {})",
      text, kMaxGroup);
  if (head == "magnitude" || head == "global") {
    if (!parse_number(tail, s.fraction) || s.fraction < 0 || s.fraction >= 1) {
      throw UserError(expected);
    }
    s.kind = head == "magnitude" ? PruneSpec::Kind::kMagnitude : PruneSpec::Kind::kGlobal;
    return s;
  }
  if (!parse_int(head, s.n) || !parse_int(tail, s.m) || s.n < 1 || s.n >= s.m || s.m > kMaxGroup) {
    throw UserError(expected);
  }
  s.kind = PruneSpec::Kind::kStructured;
  return s;
}

bool prunable(const Layer& l) {
  return (l.kind == OpKind::kConv || l.kind == OpKind::kDense) &&
         (!l.weights.empty() || l.weight_draw.pending);
}

void prune_weights(Graph& graph, const PruneSpec& spec) {
  if (spec.kind == PruneSpec::Kind::kNone) return;
  std::vector<Layer*> layers;
  for (Layer& l : graph.layers) {
    if (!prunable(l)) continue;
    if (l.weight_draw.pending) draw_weights(l, std::numeric_limits<uint64_t>::max());
    NPUSIM_CHECK(l.weights.size() == l.reduction() * uint64_t(l.filters),
                 "layer {}: {} weights for {} rows of {} channels", l.name, l.weights.size(),
                 l.reduction(), l.filters);
    NPUSIM_CHECK(l.weights.size() < (uint64_t(1) << 32), "layer {}: {} weights", l.name,
                 l.weights.size());
    layers.push_back(&l);
  }
  switch (spec.kind) {
    case PruneSpec::Kind::kMagnitude:
      for (Layer* l : layers) {
        zero_smallest(l->weights, uint64_t(spec.fraction * double(l->weights.size())));
      }
      break;
    case PruneSpec::Kind::kStructured:
      for (Layer* l : layers) {
        keep_n_of_m(l->weights, l->reduction(), size_t(l->filters), spec.n, spec.m);
      }
      break;
    case PruneSpec::Kind::kGlobal: {
      // One threshold over every layer: the k-th smallest magnitude; below it all go, at it the
      // first ones in (layer, index) order until k are gone.
      uint64_t total = 0;
      for (const Layer* l : layers) total += l->weights.size();
      const auto k = uint64_t(spec.fraction * double(total));
      if (k == 0) break;
      std::vector<float> mags;
      mags.reserve(total);
      for (const Layer* l : layers) {
        for (float w : l->weights) mags.push_back(std::fabs(w));
      }
      std::nth_element(mags.begin(), mags.begin() + long(k - 1), mags.end());
      const float threshold = mags[k - 1];
      std::vector<float>().swap(mags);
      uint64_t below = 0;
      for (const Layer* l : layers) {
        for (float w : l->weights) below += std::fabs(w) < threshold;
      }
      uint64_t ties = k - below;
      for (Layer* l : layers) {
        for (float& w : l->weights) {
          if (std::fabs(w) < threshold) {
            w = 0.0f;
          } else if (std::fabs(w) == threshold && ties > 0) {
            w = 0.0f;
            --ties;
          }
        }
      }
      break;
    }
    case PruneSpec::Kind::kNone:
      break;
  }
}

std::vector<WeightSparsity> weight_sparsity(const Graph& graph) {
  std::vector<WeightSparsity> out;
  for (const Layer& l : graph.layers) {
    if (!prunable(l) || l.weights.empty()) continue;
    WeightSparsity s;
    s.layer = l.name;
    s.weights = l.weights.size();
    for (float w : l.weights) s.nonzeros += w != 0.0f;
    const size_t rows = l.reduction(), filters = size_t(l.filters);
    int most = 0;
    for (size_t o = 0; o < filters && most < 4; ++o) {
      for (size_t r0 = 0; r0 < rows; r0 += 4) {
        int nz = 0;
        for (size_t r = r0; r < std::min(rows, r0 + 4); ++r)
          nz += l.weights[at(r, o, filters)] != 0;
        most = std::max(most, nz);
      }
    }
    s.nonzeros_per_4 = std::max(most, 1);
    out.push_back(s);
  }
  return out;
}

}  // namespace npusim
