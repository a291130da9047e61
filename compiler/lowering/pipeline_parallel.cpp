#include "compiler/lowering/pipeline_parallel.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <variant>

#include "compiler/lowering/data_parallel.hpp"
#include "support/error.hpp"

namespace npusim {

namespace {

constexpr uint64_t kRegionAlignment = 4096;  // as the memory plan aligns tensors
constexpr uint32_t kNotEmitted = UINT32_MAX;

uint64_t align_up(uint64_t x) {
  return (x + kRegionAlignment - 1) / kRegionAlignment * kRegionAlignment;
}

uint64_t ceil_div(uint64_t a, uint64_t b) { return b == 0 ? 0 : (a + b - 1) / b; }

// Elements a vector instruction produces (or, for a pool, reads).
struct VectorElements {
  uint64_t operator()(const RequantOp& r) const { return uint64_t(r.m) * r.n; }
  uint64_t operator()(const PoolOp& p) const {
    return uint64_t(p.out_h) * p.out_w * p.c * p.window_d * p.window_h * p.window_w;
  }
  uint64_t operator()(const SoftmaxOp& s) const { return uint64_t(s.rows) * s.length; }
  uint64_t operator()(const LayerNormOp& l) const { return uint64_t(l.rows) * l.length; }
  uint64_t operator()(const LutOp& l) const { return l.elements; }
  uint64_t operator()(const EltwiseOp& e) const { return uint64_t(e.rows) * e.cols; }
  uint64_t operator()(const Fp32Op& f) const { return uint64_t(f.rows) * f.cols; }
  uint64_t operator()(const DmaOp&) const { return 0; }
  uint64_t operator()(const MatmulOp&) const { return 0; }
  uint64_t operator()(const CopyOp&) const { return 0; }
  uint64_t operator()(const HostOp&) const { return 0; }
};

// Merges micro-batch programs into one pipeline Program (the protocol is in the header).
class PipelineMerge {
 public:
  PipelineMerge(const std::vector<const Program*>& micro, std::vector<PipelineStage> stages)
      : micro_(micro), stages_(std::move(stages)), k_(int(micro.size())), s_(int(stages_.size())) {
    const Program& first = *micro_[0];
    base_ = first.input.dram_addr;
    uint64_t top = base_;
    for (int k = 0; k < k_; ++k) {
      check_shared_parameters(first, *micro_[size_t(k)], k);
      NPUSIM_CHECK(micro_[size_t(k)]->layers.size() == first.layers.size() &&
                       micro_[size_t(k)]->tensors.size() == first.tensors.size(),
                   "pipeline: micro-batch {}'s program has other layers", k);
      offset_.push_back(top - base_);
      top = align_up(top + micro_[size_t(k)]->dram_bytes - base_);
    }
    m_.dram_bytes = top;
    for (int s = 0; s < s_; ++s) {
      for (int l = stages_[size_t(s)].first; l < stages_[size_t(s)].end; ++l)
        stage_of_.push_back(s);
    }
    NPUSIM_CHECK(stage_of_.size() == first.layers.size(), "pipeline: stages cover {} of {} layers",
                 stage_of_.size(), first.layers.size());
    new_id_.resize(size_t(k_));
    record_.assign(size_t(k_), std::vector<int>(first.layers.size(), -1));
    last_.assign(size_t(k_), std::vector<std::vector<uint32_t>>(size_t(s_)));
    copies_in_ = last_;
  }

  Program run() {
    const Program& first = *micro_[0];
    m_.network = first.network;
    m_.dtype = first.dtype;
    m_.matrix_units = first.matrix_units;
    m_.cores = s_;
    m_.batch = 0;
    m_.requant_tables = first.requant_tables;
    m_.luts = first.luts;
    for (const DramSegment& seg : first.dram_init) {
      if (seg.addr < base_) m_.dram_init.push_back(seg);
    }
    for (int k = 0; k < k_; ++k) {
      const Program& p = *micro_[size_t(k)];
      for (const DramSegment& seg : p.dram_init) {
        if (seg.addr < base_) continue;
        DramSegment moved = seg;
        moved.addr += offset_[size_t(k)];
        m_.dram_init.push_back(std::move(moved));
      }
      new_id_[size_t(k)].assign(p.instructions.size(), kNotEmitted);
      m_.batch += p.batch;
      m_.total_macs += p.total_macs;
    }
    for (int d = 0; d <= k_ + s_ - 2; ++d) {
      for (int s = s_ - 1; s >= 0; --s) {
        const int k = d - s;
        if (k >= 0 && k < k_) emit_block(k, s);
      }
    }
    place_tensors();
    return std::move(m_);
  }

 private:
  // Core `s`'s unified-buffer ranges of micro-batch k's resident tensors that a layer of stage s
  // or later reads and an earlier stage wrote: they must arrive before the stage starts.
  std::vector<std::pair<uint64_t, uint64_t>> crossing_ranges(int k, int s) const {
    const Program& p = *micro_[size_t(k)];
    const int first = stages_[size_t(s)].first;
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    for (const TensorPlacement& t : p.tensors) {
      if (t.buffer != BufferId::kUnified || t.first_layer < 0 || t.first_layer >= first ||
          t.last_layer < first) {
        continue;
      }
      ranges.push_back({t.ub_addr, t.ub_addr + t.bytes()});
    }
    std::sort(ranges.begin(), ranges.end());
    std::vector<std::pair<uint64_t, uint64_t>> merged;
    for (const auto& r : ranges) {
      if (!merged.empty() && r.first <= merged.back().second) {
        merged.back().second = std::max(merged.back().second, r.second);
      } else {
        merged.push_back(r);
      }
    }
    return merged;
  }

  uint32_t push(Instruction instr, std::vector<uint32_t> deps) {
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    instr.id = uint32_t(m_.instructions.size());
    for (uint32_t dep : deps) {
      NPUSIM_CHECK(dep < instr.id, "pipeline: instruction {} would wait for {}", instr.id, dep);
    }
    instr.deps = std::move(deps);
    m_.instructions.push_back(std::move(instr));
    return m_.instructions.back().id;
  }

  void append(std::vector<uint32_t>& to, const std::vector<uint32_t>& from) {
    to.insert(to.end(), from.begin(), from.end());
  }

  void emit_copies(int k, int s, uint32_t record) {
    std::vector<uint32_t> deps = last_[size_t(k)][size_t(s - 1)];
    if (k > 0) {
      append(deps, last_[size_t(k - 1)][size_t(s)]);
      // Micro-batch k - 1's copies relayed onward out of core s read what these overwrite.
      if (s + 1 < s_) append(deps, copies_in_[size_t(k - 1)][size_t(s + 1)]);
    }
    for (const auto& [begin, end] : crossing_ranges(k, s)) {
      Instruction copy;
      copy.unit = UnitKind::kLink;
      copy.core = s - 1;
      copy.layer = record;
      copy.op = CopyOp{s, begin, begin, end - begin};
      copies_in_[size_t(k)][size_t(s)].push_back(push(std::move(copy), deps));
    }
  }

  void emit_block(int k, int s) {
    const Program& p = *micro_[size_t(k)];
    const PipelineStage& stage = stages_[size_t(s)];
    // What a root of the block waits for, beyond its own dependencies.
    std::vector<uint32_t> roots;
    std::map<std::pair<int, int>, uint32_t> unit_last;  // (unit, index) -> last instruction
    for (int li = stage.first; li < stage.end; ++li) {
      const LayerRecord& l = p.layers[size_t(li)];
      LayerRecord rec = l;
      if (k_ > 1) rec.name = fmt::format("{}@mb{}", l.name, k);
      rec.first_instruction = uint32_t(m_.instructions.size());
      const uint32_t record = uint32_t(m_.layers.size());
      record_[size_t(k)][size_t(li)] = int(record);
      if (li == stage.first) {
        if (s > 0) emit_copies(k, s, record);
        roots = copies_in_[size_t(k)][size_t(s)];
        if (k > 0) {
          append(roots, last_[size_t(k - 1)][size_t(s)]);
          if (s + 1 < s_) append(roots, copies_in_[size_t(k - 1)][size_t(s + 1)]);
        }
      }
      for (uint32_t i = l.first_instruction; i < l.end_instruction; ++i) {
        Instruction instr = p.instructions[i];
        instr.core = s;
        instr.layer = record;
        std::vector<uint32_t> deps;
        bool in_block = false;
        for (uint32_t d : instr.deps) {
          const uint32_t nd = new_id_[size_t(k)].at(d);
          NPUSIM_CHECK(nd != kNotEmitted,
                       "pipeline: instruction {} of micro-batch {} depends on "
                       "{}, not placed yet",
                       i, k, d);
          in_block = in_block || stage_of_[p.instructions[d].layer] == s;
          deps.push_back(nd);
        }
        if (!in_block) append(deps, roots);
        if (auto* dma = std::get_if<DmaOp>(&instr.op); dma != nullptr) {
          // Activations (and an embedding lookup's token ids) move with the micro-batch.
          if (dma->dram_addr >= base_) dma->dram_addr += offset_[size_t(k)];
          if (dma->indexed && dma->index_addr >= base_) dma->index_addr += offset_[size_t(k)];
        }
        const auto key = std::pair(int(instr.unit), instr.unit_index);
        const uint32_t id = push(std::move(instr), std::move(deps));
        new_id_[size_t(k)][i] = id;
        unit_last[key] = id;
      }
      rec.end_instruction = uint32_t(m_.instructions.size());
      m_.layers.push_back(std::move(rec));
    }
    std::vector<uint32_t>& last = last_[size_t(k)][size_t(s)];
    for (const auto& [key, id] : unit_last) last.push_back(id);
    append(last, copies_in_[size_t(k)][size_t(s)]);
    if (unit_last.empty() && s > 0) append(last, last_[size_t(k)][size_t(s - 1)]);
  }

  // Micro-batch k's samples of a tensor of its program, written by stage `core`.
  TensorPart part_of(const TensorPlacement& t, int k) const {
    const int stage = t.first_layer < 0 ? 0 : stage_of_[size_t(t.first_layer)];
    const int layer = t.first_layer < 0 ? -1 : record_[size_t(k)][size_t(t.first_layer)];
    if (t.buffer == BufferId::kUnified) {
      return {0, t.batch, stage, BufferId::kUnified, t.ub_addr, layer};
    }
    NPUSIM_CHECK(t.dram_addr >= base_, "pipeline: tensor {} at {:#x} lies below the activations",
                 t.name, t.dram_addr);
    return {t.dram_addr + offset_[size_t(k)], t.batch, stage, BufferId::kDram, 0, layer};
  }

  void add_parts(TensorPlacement& merged, const TensorPlacement& t, int k) const {
    NPUSIM_CHECK(t.parts.empty(), "pipeline: tensor {} already has parts", t.name);
    if (k == 0) {
      merged = t;
      merged.batch = 0;
      if (t.first_layer >= 0) merged.first_layer = record_[0][size_t(t.first_layer)];
      if (t.last_layer >= 0) merged.last_layer = record_[0][size_t(t.last_layer)];
    }
    NPUSIM_CHECK(merged.name == t.name && merged.dims == t.dims,
                 "pipeline: tensor {} differs between micro-batches", t.name);
    merged.parts.push_back(part_of(t, k));
    merged.batch += t.batch;
    if (k == 0) merged.dram_addr = merged.parts[0].dram_addr;
  }

  void place_tensors() {
    m_.outputs.resize(micro_[0]->outputs.size());
    m_.tensors.resize(micro_[0]->tensors.size());
    for (int k = 0; k < k_; ++k) {
      const Program& p = *micro_[size_t(k)];
      add_parts(m_.input, p.input, k);
      for (size_t i = 0; i < p.outputs.size(); ++i) add_parts(m_.outputs[i], p.outputs[i], k);
      for (size_t i = 0; i < p.tensors.size(); ++i) add_parts(m_.tensors[i], p.tensors[i], k);
    }
  }

  const std::vector<const Program*>& micro_;
  std::vector<PipelineStage> stages_;
  int k_, s_;
  uint64_t base_ = 0;
  std::vector<uint64_t> offset_;
  std::vector<int> stage_of_;                  // per layer
  std::vector<std::vector<uint32_t>> new_id_;  // [k][instruction of its program]
  std::vector<std::vector<int>> record_;       // [k][layer] -> LayerRecord of the merge
  // [k][s]: the block's last instruction per unit (and its incoming copies); the copies into it.
  std::vector<std::vector<std::vector<uint32_t>>> last_, copies_in_;
  Program m_;
};

}  // namespace

std::vector<uint64_t> estimate_layer_cycles(const Program& program, const HwConfig& hw) {
  const double bytes_per_cycle = std::max(hw.memory_bytes_per_cycle(), 1e-9);
  std::vector<uint64_t> out;
  for (const LayerRecord& l : program.layers) {
    uint64_t matrix = 0, vector = 0;
    for (uint32_t i = l.first_instruction; i < l.end_instruction; ++i) {
      const Instruction& instr = program.instructions[i];
      if (const auto* m = std::get_if<MatmulOp>(&instr.op)) {
        matrix += uint64_t(m->m) + uint64_t(hw.matrix_unit.rows) + uint64_t(hw.matrix_unit.cols);
      } else {
        vector += ceil_div(std::visit(VectorElements{}, instr.op), uint64_t(hw.vector_unit.lanes));
      }
    }
    matrix = ceil_div(matrix, uint64_t(std::max(1, hw.matrix_unit.count)));
    const auto memory = uint64_t(double(l.dram_read_bytes + l.dram_write_bytes) / bytes_per_cycle);
    out.push_back(std::max({matrix, vector, memory}));
  }
  return out;
}

std::vector<PipelineStage> balance_stages(const std::vector<uint64_t>& cycles, int stages) {
  const int n = int(cycles.size());
  NPUSIM_CHECK(stages >= 1 && stages <= n, "pipeline: {} stages for {} layers", stages, n);
  std::vector<uint64_t> prefix(size_t(n) + 1, 0);
  for (int i = 0; i < n; ++i) prefix[size_t(i) + 1] = prefix[size_t(i)] + cycles[size_t(i)];
  // best[s][i]: the least largest stage of layers [0, i) in s stages; cut[s][i]: its last start.
  const uint64_t kInf = UINT64_MAX;
  std::vector<std::vector<uint64_t>> best(size_t(stages) + 1,
                                          std::vector<uint64_t>(size_t(n) + 1, kInf));
  std::vector<std::vector<int>> cut(size_t(stages) + 1, std::vector<int>(size_t(n) + 1, 0));
  best[0][0] = 0;
  for (int s = 1; s <= stages; ++s) {
    for (int i = s; i <= n; ++i) {
      for (int j = s - 1; j < i; ++j) {
        if (best[size_t(s - 1)][size_t(j)] == kInf) continue;
        const uint64_t worst =
            std::max(best[size_t(s - 1)][size_t(j)], prefix[size_t(i)] - prefix[size_t(j)]);
        if (worst < best[size_t(s)][size_t(i)]) {  // ties: the earliest cut, stages fill in order
          best[size_t(s)][size_t(i)] = worst;
          cut[size_t(s)][size_t(i)] = j;
        }
      }
    }
  }
  std::vector<PipelineStage> out(static_cast<size_t>(stages));
  for (int s = stages, i = n; s >= 1; --s) {
    const int j = cut[size_t(s)][size_t(i)];
    out[size_t(s - 1)] = {j, i, prefix[size_t(i)] - prefix[size_t(j)]};
    i = j;
  }
  return out;
}

CompileResult compile_pipeline(const Graph& graph, const HwConfig& hw, int micro_batch) {
  NPUSIM_CHECK(micro_batch >= 1, "pipeline: micro-batch of {} images", micro_batch);
  const int mb = std::min(micro_batch, graph.batch);
  const int count = (graph.batch + mb - 1) / mb;
  std::vector<int> sizes(size_t(count), mb);
  sizes.back() = graph.batch - mb * (count - 1);
  std::map<int, Program> by_size;  // one compilation per distinct micro-batch size (at most two)
  for (int b : sizes) {
    if (by_size.count(b)) continue;
    Graph g = graph;
    g.batch = b;
    CompileResult r = compile(g, hw);
    if (!r.ok) return {false, {}, fmt::format("pipeline, micro-batch of {}: {}", b, r.reason)};
    by_size.emplace(b, std::move(r.program));
  }
  const Program& full = by_size.at(mb);
  // A layer without instructions (a reshape) is no work of its own: it stays with the layer
  // before it, so no core is left a stage of nothing. Stages are balanced over these groups.
  const std::vector<uint64_t> cycles = estimate_layer_cycles(full, hw);
  std::vector<int> group_first;
  std::vector<uint64_t> group_cycles;
  for (size_t l = 0; l < full.layers.size(); ++l) {
    const LayerRecord& rec = full.layers[l];
    if (group_first.empty() || rec.end_instruction > rec.first_instruction) {
      group_first.push_back(int(l));
      group_cycles.push_back(0);
    }
    group_cycles.back() += cycles[l];
  }
  const int stages = std::max(1, std::min(hw.cores, int(group_first.size())));
  std::vector<PipelineStage> plan = balance_stages(group_cycles, stages);
  for (PipelineStage& st : plan) {
    st.first = group_first[size_t(st.first)];
    st.end =
        size_t(st.end) < group_first.size() ? group_first[size_t(st.end)] : int(full.layers.size());
  }
  std::vector<const Program*> micro;
  for (int b : sizes) micro.push_back(&by_size.at(b));
  Program merged = PipelineMerge(micro, plan).run();
  if (merged.dram_bytes > hw.memory.capacity_bytes) {
    return {false,
            {},
            fmt::format("network '{}' as a pipeline of {} micro-batches needs {} bytes of "
                        "off-chip memory (shared weights, each micro-batch's activations), the "
                        "hardware has {}: raise memory.capacity_bytes or the micro-batch",
                        graph.name, count, merged.dram_bytes, hw.memory.capacity_bytes)};
  }
  merged.parallel = fmt::format("pipeline: batch {} in {} micro-batches of {} over {} cores",
                                graph.batch, count, mb, stages);
  for (int s = 0; s < stages; ++s) {
    const PipelineStage& st = plan[size_t(s)];
    merged.parallel_stages.push_back(fmt::format(
        "stage {} on core {}: layers {} .. {} ({} layers, estimated {} cycles per micro-batch)", s,
        s, full.layers[size_t(st.first)].name, full.layers[size_t(st.end - 1)].name,
        st.end - st.first, st.estimated_cycles));
  }
  return {true, std::move(merged), ""};
}

}  // namespace npusim
