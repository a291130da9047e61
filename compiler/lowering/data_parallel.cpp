#include "compiler/lowering/data_parallel.hpp"

#include <fmt/format.h>

#include <map>
#include <variant>

#include "compiler/lowering/pipeline_parallel.hpp"
#include "compiler/lowering/tensor_parallel.hpp"
#include "support/error.hpp"

namespace npusim {

namespace {

constexpr uint64_t kRegionAlignment = 4096;  // as the memory plan aligns tensors

uint64_t align_up(uint64_t x) {
  return (x + kRegionAlignment - 1) / kRegionAlignment * kRegionAlignment;
}

bool same_tables(const Program& a, const Program& b) {
  if (a.luts != b.luts || a.requant_tables.size() != b.requant_tables.size()) return false;
  for (size_t t = 0; t < a.requant_tables.size(); ++t) {
    const auto &x = a.requant_tables[t], &y = b.requant_tables[t];
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i) {
      if (x[i].multiplier != y[i].multiplier || x[i].shift != y[i].shift) return false;
    }
  }
  return true;
}

}  // namespace

// The parameters (dram_init) below the activations (which start at the input) are the same bytes
// at the same addresses on every core's program: they are shared. Those the lowering allocates
// after the tensors (a move's constants, move_lowering.cpp) lie in the core's own region and move
// with it.
void check_shared_parameters(const Program& first, const Program& p, int core) {
  const uint64_t base = first.input.dram_addr;
  NPUSIM_CHECK(p.input.dram_addr == base,
               "data parallel: core {}'s activations start at {:#x}, core 0's at {:#x}", core,
               p.input.dram_addr, base);
  auto shared = [&](const Program& q) {
    std::vector<const DramSegment*> out;
    for (const DramSegment& s : q.dram_init) {
      if (s.addr < base) out.push_back(&s);
    }
    return out;
  };
  const auto a = shared(first), b = shared(p);
  NPUSIM_CHECK(a.size() == b.size(),
               "data parallel: core {} has {} shared parameter segments, "
               "core 0 {}",
               core, b.size(), a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    NPUSIM_CHECK(a[i]->addr == b[i]->addr && a[i]->bytes == b[i]->bytes &&
                     a[i]->size() == b[i]->size() && a[i]->addr + a[i]->size() <= base,
                 "data parallel: parameter segment {} of core {} differs from core 0's or lies "
                 "among the activations",
                 i, core);
  }
  NPUSIM_CHECK(same_tables(first, p), "data parallel: core {}'s vector-unit tables differ", core);
}

namespace {

// Core c's part of a batched tensor placement: its samples resident in its own unified buffer,
// or at `offset` past where its program put them off chip.
TensorPart part_of(const TensorPlacement& t, int core, uint64_t base, uint64_t offset) {
  NPUSIM_CHECK(t.parts.empty(), "data parallel: tensor {} already has parts", t.name);
  if (t.buffer == BufferId::kUnified) return {0, t.batch, core, BufferId::kUnified, t.ub_addr};
  NPUSIM_CHECK(t.dram_addr >= base,
               "data parallel: tensor {} at {:#x} lies below the activations ({:#x})", t.name,
               t.dram_addr, base);
  return {t.dram_addr + offset, t.batch, core, BufferId::kDram, 0};
}

void add_part(TensorPlacement& merged, const TensorPlacement& t, int core, uint64_t base,
              uint64_t offset) {
  const TensorPart part = part_of(t, core, base, offset);
  if (core == 0) {
    merged = t;
    merged.batch = 0;
    merged.dram_addr = part.dram_addr;
  }
  // The live range is the layers' (the same on every core); where a part lives may differ (a
  // smaller share of the batch may fit the unified buffer where a larger one did not).
  NPUSIM_CHECK(merged.name == t.name && merged.dims == t.dims,
               "data parallel: tensor {} differs between cores", t.name);
  merged.parts.push_back(part);
  merged.batch += part.batch;
}

// One Program from the per-core programs: each layer's instructions core by core (so a layer's
// instructions stay one range and every dependency still names an earlier instruction), each
// core's activation addresses moved into its own region.
Program merge(const std::vector<const Program*>& per_core, const std::vector<int>& images) {
  const Program& first = *per_core[0];
  const uint64_t base = first.input.dram_addr;
  const int cores = int(per_core.size());
  std::vector<uint64_t> offset(cores, 0);
  uint64_t top = base;
  for (int c = 0; c < cores; ++c) {
    check_shared_parameters(first, *per_core[c], c);
    offset[c] = top - base;
    top = align_up(top + per_core[c]->dram_bytes - base);
  }

  Program m;
  m.network = first.network;
  m.dtype = first.dtype;
  m.matrix_units = first.matrix_units;
  m.cores = cores;
  m.batch = 0;
  for (const DramSegment& seg : first.dram_init) {
    if (seg.addr < base) m.dram_init.push_back(seg);
  }
  for (int c = 0; c < cores; ++c) {
    for (const DramSegment& seg : per_core[c]->dram_init) {
      if (seg.addr < base) continue;
      DramSegment moved = seg;
      moved.addr += offset[c];
      m.dram_init.push_back(std::move(moved));
    }
  }
  m.requant_tables = first.requant_tables;
  m.luts = first.luts;
  m.dram_bytes = top;
  std::vector<std::vector<uint32_t>> new_id(cores);
  for (int c = 0; c < cores; ++c) {
    const Program& p = *per_core[c];
    NPUSIM_CHECK(p.layers.size() == first.layers.size(), "data parallel: core {} has {} layers", c,
                 p.layers.size());
    uint32_t next = 0;
    for (const LayerRecord& l : p.layers) {
      NPUSIM_CHECK(l.first_instruction == next,
                   "data parallel: layer {} of core {} does not "
                   "follow the previous one",
                   l.name, c);
      next = l.end_instruction;
    }
    NPUSIM_CHECK(next == p.instructions.size(),
                 "data parallel: core {} has instructions outside its layers", c);
    new_id[c].assign(p.instructions.size(), 0);
    m.batch += p.batch;
    m.total_macs += p.total_macs;
  }
  for (size_t li = 0; li < first.layers.size(); ++li) {
    LayerRecord rec = first.layers[li];
    rec.first_instruction = uint32_t(m.instructions.size());
    rec.macs = rec.dram_read_bytes = rec.dram_write_bytes = rec.dram_bytes_lower_bound = 0;
    rec.cores = cores;
    rec.parallel = "data";
    for (int c = 0; c < cores; ++c) {
      const Program& p = *per_core[c];
      const LayerRecord& l = p.layers[li];
      rec.macs += l.macs;
      rec.dram_read_bytes += l.dram_read_bytes;
      rec.dram_write_bytes += l.dram_write_bytes;
      rec.dram_bytes_lower_bound += l.dram_bytes_lower_bound;
      for (uint32_t i = l.first_instruction; i < l.end_instruction; ++i) {
        Instruction instr = p.instructions[i];
        instr.id = uint32_t(m.instructions.size());
        instr.core = c;
        new_id[c][i] = instr.id;
        for (uint32_t& d : instr.deps) {
          NPUSIM_CHECK(d < i, "data parallel: instruction {} of core {} depends on a later one", i,
                       c);
          d = new_id[c][d];
        }
        if (auto* dma = std::get_if<DmaOp>(&instr.op); dma != nullptr && dma->dram_addr >= base) {
          dma->dram_addr += offset[c];
        }
        if (auto* dma = std::get_if<DmaOp>(&instr.op); dma != nullptr && dma->indexed) {
          if (dma->index_addr >= base) dma->index_addr += offset[c];
        }
        m.instructions.push_back(std::move(instr));
      }
    }
    rec.end_instruction = uint32_t(m.instructions.size());
    m.layers.push_back(std::move(rec));
  }
  for (int c = 0; c < cores; ++c) {
    const Program& p = *per_core[c];
    add_part(m.input, p.input, c, base, offset[c]);
    m.outputs.resize(p.outputs.size());
    m.tensors.resize(p.tensors.size());
    for (size_t i = 0; i < p.outputs.size(); ++i) {
      add_part(m.outputs[i], p.outputs[i], c, base, offset[c]);
    }
    for (size_t i = 0; i < p.tensors.size(); ++i) {
      add_part(m.tensors[i], p.tensors[i], c, base, offset[c]);
    }
  }
  std::string split;
  for (int b : images) {
    if (!split.empty()) split += '+';
    split += std::to_string(b);
  }
  m.parallel = fmt::format(
      "data parallel: batch {} over {} cores ({} images), weights shared in off-chip memory and "
      "loaded by each core",
      m.batch, cores, split);
  return m;
}

}  // namespace

std::optional<Parallelism> parse_parallelism(const std::string& text) {
  if (text == "auto") return Parallelism::kAuto;
  if (text == "data") return Parallelism::kData;
  if (text == "tensor") return Parallelism::kTensor;
  if (text == "pipeline") return Parallelism::kPipeline;
  return std::nullopt;
}

namespace {
bool has_host_layers(const Program& p) {
  for (const LayerRecord& l : p.layers) {
    if (l.on_host) return true;
  }
  return false;
}
}  // namespace

CompileResult compile_parallel(const Graph& graph, const HwConfig& hw, Parallelism mode,
                               int micro_batch) {
  if (hw.cores > 1 &&
      (mode == Parallelism::kTensor || (mode == Parallelism::kAuto && graph.batch < hw.cores))) {
    return compile_tensor_parallel(graph, hw, mode == Parallelism::kTensor);
  }
  // docs/onnx.md "Rank mapping": a model in the whole-tensor mode carries the batch it declares
  // (axis 0 of its input) inside every tensor, where operators move it; its samples cannot be
  // dealt to cores.
  const auto& in = graph.input_shape.dims;
  if (graph.io_without_batch && mode == Parallelism::kData && hw.cores > 1 && in.size() > 1 &&
      in[0] > 1) {
    throw UserError(fmt::format(
        "--parallel data: network '{}' runs as one whole tensor (an operator works along its "
        "batch axis; docs/onnx.md \"Rank mapping\"): its batch of {} is axis 0 of the input "
        "tensor, not separate samples, and is not split over cores; use --parallel tensor, "
        "pipeline or auto",
        graph.name, in[0]));
  }
  const int cores = std::min(hw.cores, graph.batch);
  const bool data = hw.cores > 1 && (mode == Parallelism::kData || graph.batch >= hw.cores);
  auto single_core = [&](const char* why) {
    CompileResult r = compile(graph, hw);
    if (r.ok && hw.cores > 1) {
      r.program.parallel = fmt::format("single core ({}: batch {} on a chip of {} cores{})",
                                       mode == Parallelism::kAuto       ? "auto"
                                       : mode == Parallelism::kPipeline ? "pipeline"
                                                                        : "data",
                                       graph.batch, hw.cores, why);
    }
    return r;
  };
  // Host layers (docs/heterogeneous.md) run on one core's program: the merges relocate and place
  // the accelerator's instructions only.
  bool host = false;
  for (const Layer& l : graph.layers) host = host || l.on_host;
  if (mode == Parallelism::kPipeline) {
    if (host) return single_core("; host layers run with a single-core program");
    return compile_pipeline(graph, hw, micro_batch);
  }
  if (!data || cores == 1) return single_core("");
  if (host) return single_core("; host layers run with a single-core program");
  std::vector<int> images(cores, graph.batch / cores);
  for (int c = 0; c < graph.batch % cores; ++c) ++images[c];
  // One compilation per distinct share of the batch (at most two).
  std::map<int, Program> by_batch;
  for (int b : images) {
    if (by_batch.count(b)) continue;
    Graph g = graph;
    g.batch = b;
    CompileResult r = compile(g, hw);
    if (!r.ok)
      return {false, {}, fmt::format("data parallel, {} images per core: {}", b, r.reason)};
    if (has_host_layers(r.program))
      return single_core("; host layers run with a single-core program");
    by_batch.emplace(b, std::move(r.program));
  }
  std::vector<const Program*> per_core;
  for (int b : images) per_core.push_back(&by_batch.at(b));
  Program merged = merge(per_core, images);
  if (merged.dram_bytes > hw.memory.capacity_bytes) {
    return {false,
            {},
            fmt::format("network '{}' data parallel over {} cores needs {} bytes of off-chip "
                        "memory (shared weights, each core's activations), the hardware has {}: "
                        "raise memory.capacity_bytes or lower the batch",
                        graph.name, cores, merged.dram_bytes, hw.memory.capacity_bytes)};
  }
  return {true, std::move(merged), ""};
}

}  // namespace npusim
