#include "compiler/lowering/tensor_parallel.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "compiler/ir/op_table.hpp"
#include "compiler/lowering/tiling.hpp"
#include "support/error.hpp"

namespace npusim {

namespace {

// The estimate of tensor_parallel.hpp for one matrix layer over `columns` (one range per core).
struct SplitEstimate {
  double compute = 0;  // cycles of the layer's MACs on one core at its peak
  double saved = 0;    // of those, what the split saves (the busiest core does its columns' share)
  double cost = 0;     // cycles the added traffic and the synchronization cost
  uint64_t added_bytes = 0;
};

SplitEstimate estimate(const Layer& l, const HwConfig& hw, int batch, int es,
                       const std::vector<ColumnRange>& columns) {
  const int n = conv_geometry(l, batch, es).n;
  const uint64_t input = l.in_shapes[0].elements() * uint64_t(batch) * es;
  const uint64_t output = l.last_stage().out_shape.elements() * uint64_t(batch) * es;
  int widest = 0;
  for (const ColumnRange& r : columns) widest = std::max(widest, r.end - r.begin);
  SplitEstimate e;
  e.compute = double(l.macs(batch)) / hw.peak_macs_per_cycle();
  e.saved = e.compute * (1.0 - double(widest) / n);
  // The weights are split, not repeated. Every core beyond the first loads the input again, and
  // the output crosses off-chip memory (stored by the cores, loaded by its readers) where one core
  // might keep it on chip; the next layer waits for the last store, then for its first load.
  e.added_bytes = (columns.size() - 1) * input + 2 * output;
  e.cost = double(e.added_bytes) / hw.memory_bytes_per_cycle() +
           2.0 * double(hw.memory_latency_cycles());
  return e;
}

std::string kib(uint64_t bytes) { return fmt::format("{:.0f} KiB", double(bytes) / 1024); }

}  // namespace

std::vector<ColumnRange> split_columns(int n, int tile, int cores) {
  NPUSIM_CHECK(n > 0 && tile > 0 && cores > 0, "split of {} columns in tiles of {} over {} cores",
               n, tile, cores);
  const int tiles = (n + tile - 1) / tile;
  const int used = std::min(cores, tiles);
  std::vector<ColumnRange> out;
  int next = 0;
  for (int c = 0; c < used; ++c) {
    const int share = tiles / used + (c < tiles % used ? 1 : 0);
    const int end = std::min(n, next + share * tile);
    out.push_back({next, end});
    next = end;
  }
  return out;
}

std::vector<LayerSplit> plan_tensor_parallel(const Graph& graph, const HwConfig& hw, bool forced) {
  const int es = graph.dtype == DataType::kBf16 ? 2 : 1;
  std::vector<LayerSplit> plan;
  for (const Layer& l : graph.layers) {
    LayerSplit s;
    if (l.on_host) {
      s.choice = "host (docs/heterogeneous.md)";
      plan.push_back(s);
      continue;
    }
    if (op_info(l.kind).lowering != OpLowering::kMatrix) {
      s.choice = op_info(l.kind).lowering == OpLowering::kFree ? "core 0 (no instructions)"
                                                               : "core 0 (vector layers run there)";
      plan.push_back(s);
      continue;
    }
    const int n = conv_geometry(l, graph.batch, es).n;
    const std::vector<ColumnRange> columns = split_columns(n, hw.matrix_unit.cols, hw.cores);
    if (columns.size() < 2) {
      s.choice = fmt::format("core 0 ({} output channels: one array-column tile)", n);
      plan.push_back(s);
      continue;
    }
    const SplitEstimate e = estimate(l, hw, graph.batch, es, columns);
    const std::string numbers = fmt::format(
        "saves an estimated {:.0f} of {:.0f} compute cycles, costs {:.0f} for {} more off-chip "
        "traffic and the synchronization",
        e.saved, e.compute, e.cost, kib(e.added_bytes));
    if (forced || e.saved > e.cost) {
      s.cores = int(columns.size());
      s.choice = fmt::format("tensor over {} cores ({}: {})", s.cores,
                             forced ? "--parallel tensor" : "auto", numbers);
    } else {
      s.choice = fmt::format("core 0 (auto: a split over {} cores {})", columns.size(), numbers);
    }
    plan.push_back(s);
  }
  return plan;
}

CompileResult compile_tensor_parallel(const Graph& graph, const HwConfig& hw, bool forced) {
  const std::vector<LayerSplit> plan = plan_tensor_parallel(graph, hw, forced);
  CompileResult r = compile(graph, hw, plan);
  if (!r.ok) return r;
  int split = 0, matrix = 0, cores = 1;
  for (size_t i = 0; i < plan.size(); ++i) {
    matrix += op_info(graph.layers[i].kind).lowering == OpLowering::kMatrix;
    split += plan[i].cores > 1;
    cores = std::max(cores, plan[i].cores);
  }
  Program& p = r.program;
  p.cores = cores;
  const std::string why =
      forced ? "tensor"
             : fmt::format("auto: batch {} on a chip of {} cores", graph.batch, hw.cores);
  p.parallel =
      split == 0
          ? fmt::format("single core ({}; {})", why,
                        forced ? "no matrix layer has two array-column tiles"
                               : "no layer gains from a split over cores")
          : fmt::format(
                "tensor parallel ({}): {} of {} matrix layers split over up to {} cores by output "
                "channels, gathered through off-chip memory; the other layers on core 0",
                why, split, matrix, cores);
  return r;
}

CompileResult compile_placed(const Graph& graph, const HwConfig& hw, const LayerCores& cores) {
  const int es = graph.dtype == DataType::kBf16 ? 2 : 1;
  std::vector<LayerSplit> plan;
  int used = 1;
  for (const Layer& l : graph.layers) {
    LayerSplit s;
    const int core = cores.core(l.name);
    if (core == LayerCores::kAllCores && op_info(l.kind).lowering == OpLowering::kMatrix) {
      const int n = conv_geometry(l, graph.batch, es).n;
      s.cores = int(split_columns(n, hw.matrix_unit.cols, hw.cores).size());
      s.choice = fmt::format("tensor over {} cores (its output channels)", s.cores);
    } else {
      NPUSIM_CHECK(core >= 0 && core < hw.cores, "layer {} placed on core {} of {}", l.name, core,
                   hw.cores);
      s.core = core;
      s.choice = fmt::format("core {} (placed by the graph's builder)", core);
    }
    used = std::max({used, s.cores, s.core + 1});
    plan.push_back(s);
  }
  CompileResult r = compile(graph, hw, plan);
  if (!r.ok) return r;
  r.program.cores = used;
  r.program.parallel = cores.summary;
  return r;
}

}  // namespace npusim
