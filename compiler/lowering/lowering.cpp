#include "compiler/lowering/lowering.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "compiler/ir/op_table.hpp"
#include "compiler/lowering/lowering_context.hpp"
#include "support/error.hpp"

namespace npusim {
namespace lowering {

void Lowering::copy_resident_inputs(const Layer& l) {
  for (const std::string& input : l.inputs) {
    if (!resident(input)) continue;
    const std::string& root = root_.at(input);
    const int from = tensor_core_.at(root);
    if (from == core_ || !copied_.insert({root, core_}).second) continue;
    const uint64_t begin = ub_addr(root);
    const uint64_t bytes = shape_of(root).elements() * uint64_t(graph_.batch) * es_;
    Instruction copy;
    copy.id = static_cast<uint32_t>(program_.instructions.size());
    copy.unit = UnitKind::kLink;
    copy.layer = static_cast<uint32_t>(program_.layers.size() - 1);
    copy.core = from;
    copy.deps = hazards_.add(copy.id, unit_key(UnitKind::kLink, 0) + from * kUnitKeysPerCore,
                             {{BufferId::kUnified, begin, begin + bytes, false, from},
                              {BufferId::kUnified, begin, begin + bytes, true, core_}},
                             from);
    copy.op = CopyOp{core_, begin, begin, bytes};
    program_.instructions.push_back(std::move(copy));
  }
}

// The operator table says how each layer is lowered.
bool Lowering::lower_layer(const Layer& l) {
  if (l.on_host) {
    lower_host(l, *current_);
    return true;
  }
  switch (op_info(l.kind).lowering) {
    case OpLowering::kMatrix:
      return lower_matrix(l, *current_);
    case OpLowering::kPool:
      return lower_pool(l, *current_);
    case OpLowering::kRows:
      return lower_rows(l, *current_);
    case OpLowering::kEltwise:
      return lower_eltwise(l, *current_);
    case OpLowering::kConcat:
      return lower_concat(l, *current_);
    case OpLowering::kFree:
      current_->tiling = "no instructions: the row-major element order is unchanged";
      return true;
    case OpLowering::kMove:
      return l.kind == OpKind::kEmbedding ? lower_embedding(l, *current_)
                                          : lower_move(l, *current_);
    case OpLowering::kFolded:
      break;
  }
  NPUSIM_CHECK(false, "{} {} reached lowering unfolded", to_string(l.kind), l.name);
  return false;
}

CompileResult Lowering::run() {
  NPUSIM_CHECK(graph_.quantized, "graph {} must be quantized before lowering", graph_.name);
  program_.network = graph_.name;
  program_.batch = graph_.batch;
  program_.matrix_units = hw_.matrix_unit.count;
  program_.total_macs = 0;  // the matrix units': a host layer's MACs are the host's
  for (const auto& l : graph_.layers) program_.total_macs += l.on_host ? 0 : l.macs(graph_.batch);
  program_.dtype = graph_.dtype;
  for (const auto& l : graph_.layers) producer_.emplace(l.output, &l);

  if (!plan_memory()) return {false, {}, reason_};
  root_[graph_.input_name] = graph_.input_name;
  tensor_core_[graph_.input_name] = 0;

  for (const auto& l : graph_.layers) {
    layer_index_ = static_cast<int>(program_.layers.size());
    LayerRecord rec;
    rec.name = l.name;
    rec.op = to_string(l.kind);
    if (l.kind == OpKind::kConv) rec.op = l.in_shapes[0].rank() == 4 ? "conv3d" : "conv2d";
    if (l.kind == OpKind::kActivation) rec.op = to_string(l.activation);
    if (l.kind == OpKind::kMove && !l.move_op.empty()) rec.op = l.move_op;
    for (const auto& f : l.fused) rec.fused += (rec.fused.empty() ? "" : ",") + f;
    rec.macs = l.macs(graph_.batch);
    rec.first_instruction = static_cast<uint32_t>(program_.instructions.size());
    // Operands resident in the unified buffer cost no off-chip bytes; a fused epilogue's residual
    // operands are among the inputs, and the layer stores its last stage's output.
    // A host layer's parameters are the host's own (docs/heterogeneous.md).
    uint64_t bound = l.on_host ? 0 : stored_weight_bytes(l) + 4 * l.bias.size();
    const auto in_bytes = [&](size_t i) {
      return l.inputs[i] == graph_.input_name ? uint64_t(input_element_bytes()) : uint64_t(es_);
    };
    if (!resident(l.output)) bound += l.last_stage().out_shape.elements() * graph_.batch * es_;
    for (size_t i = 0; i < l.inputs.size(); ++i) {
      if (!resident(l.inputs[i])) bound += l.in_shapes[i].elements() * graph_.batch * in_bytes(i);
    }
    rec.dram_bytes_lower_bound = op_info(l.kind).lowering == OpLowering::kFree ? 0 : bound;
    rec.cores = layer_cores(size_t(layer_index_));
    if (size_t(layer_index_) < splits_.size()) rec.parallel = splits_[layer_index_].choice;
    program_.layers.push_back(rec);
    current_ = &program_.layers.back();
    core_ = rec.cores > 1 ? 0 : layer_core(size_t(layer_index_));
    NPUSIM_CHECK(core_ >= 0 && core_ < std::max(1, hw_.cores), "layer {} placed on core {} of {}",
                 l.name, core_, hw_.cores);
    const bool free = op_info(l.kind).lowering == OpLowering::kFree;
    root_[l.output] = free ? root_.at(l.inputs[0]) : l.output;
    if (!free) tensor_core_[l.output] = core_;
    if (!l.on_host && !free) copy_resident_inputs(l);
    const bool ok = lower_layer(l);
    core_ = 0;
    if (!ok) {
      failed_layer_ = layer_index_;
      return {false, {}, reason_, failed_layer_};
    }
    current_->end_instruction = static_cast<uint32_t>(program_.instructions.size());
  }
  for (const auto& name : graph_.outputs) program_.outputs.push_back(placement(name));
  for (const auto& l : graph_.layers) program_.tensors.push_back(placement(l.output));
  return {true, std::move(program_), ""};
}

}  // namespace lowering

namespace {

// One lowering run, or the two that compressed weights take (lowering_context.hpp).
CompileResult lower_once(const Graph& graph, const HwConfig& hw,
                         const std::vector<LayerSplit>& splits, bool moves_off_chip) {
  const bool compress =
      std::any_of(graph.layers.begin(), graph.layers.end(), [&graph](const Layer& l) {
        return (l.compress_weights && (!l.qweights.empty() || !l.bf16_weights.empty())) ||
               (l.int4_weights && (l.weight_group > 0 || graph.dtype == DataType::kBf16) &&
                !l.on_host) ||
               (l.fp8 != Fp8Format::kNone && !l.on_host);
      });
  auto lowering = [&](lowering::WeightBoxes* boxes, bool second) {
    lowering::Lowering l(graph, hw, splits, boxes, second);
    if (moves_off_chip) l.keep_moves_off_chip();
    return l.run();
  };
  if (!compress) return lowering(nullptr, false);
  lowering::WeightBoxes boxes;
  CompileResult first = lowering(&boxes, false);
  if (!first.ok) return first;
  return lowering(&boxes, true);
}

// A graph with moves is lowered with their operands allowed on chip and kept off chip, and the
// program that moves fewer off-chip bytes is kept (the on-chip one on a tie): a resident operand
// saves a move's round trip, but the unified buffer it takes can shrink the blocks of the layers
// around it (the allocator does not weigh that, ub_allocator.hpp). One program at a time: the
// off-chip plan's bytes are counted first, and it is lowered again only when it wins.
CompileResult lower(const Graph& graph, const HwConfig& hw, const std::vector<LayerSplit>& splits) {
  if (std::none_of(graph.layers.begin(), graph.layers.end(), lowering::resident_move)) {
    return lower_once(graph, hw, splits, false);
  }
  std::optional<uint64_t> off_chip;  // its bytes, when it lowers
  {
    const CompileResult r = lower_once(graph, hw, splits, true);
    if (r.ok) off_chip = off_chip_bytes(r.program);
  }
  CompileResult on_chip = lower_once(graph, hw, splits, false);
  if (off_chip && (!on_chip.ok || *off_chip < off_chip_bytes(on_chip.program))) {
    on_chip = CompileResult{};  // its memory back before the other is built
    return lower_once(graph, hw, splits, true);
  }
  return on_chip;
}

}  // namespace

uint64_t off_chip_bytes(const Program& p) {
  uint64_t bytes = 0;
  for (const LayerRecord& r : p.layers) bytes += r.dram_read_bytes + r.dram_write_bytes;
  return bytes;
}

CompileResult compile(const Graph& graph, const HwConfig& hw,
                      const std::vector<LayerSplit>& splits) {
  NPUSIM_CHECK(splits.empty() || splits.size() == graph.layers.size(),
               "{} layer splits for the {} layers of {}", splits.size(), graph.layers.size(),
               graph.name);
  CompileResult r = lower(graph, hw, splits);
  if (r.ok || !hw.host || r.failed_layer < 0) return r;
  // Fallback: the layer that could not be lowered moves to the host (on core 0's side of the
  // chip, unsplit) and the whole graph is lowered again (its operands now live off chip, which
  // changes the memory plan). Each round moves one more layer, so this ends.
  Graph g = graph;
  std::vector<LayerSplit> s = splits;
  std::vector<std::string> fallen;
  while (!r.ok && r.failed_layer >= 0 && !g.layers[r.failed_layer].on_host) {
    g.layers[r.failed_layer].on_host = true;
    if (!s.empty()) s[r.failed_layer] = LayerSplit{};
    fallen.push_back(g.layers[r.failed_layer].name);
    r = lower(g, hw, s);
  }
  if (!r.ok) return r;
  for (LayerRecord& rec : r.program.layers) {
    for (const auto& name : fallen) {
      if (rec.name == name) rec.tiling = "host (fallback: the accelerator cannot run it)";
    }
  }
  return r;
}

}  // namespace npusim
