#include "compiler/lowering/lowering.hpp"

#include <fmt/format.h>

#include "compiler/ir/op_table.hpp"
#include "compiler/lowering/lowering_context.hpp"
#include "support/error.hpp"

namespace npusim {
namespace lowering {

// The operator table says how each layer is lowered.
bool Lowering::lower_layer(const Layer& l) {
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
  program_.total_macs = graph_.total_macs();
  program_.dtype = graph_.dtype;

  if (!plan_memory()) return {false, {}, reason_};

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
    uint64_t bound = (l.qweights.size() + l.bf16_weights.size()) * es_ + 4 * l.bias.size();
    const auto in_bytes = [&](size_t i) {
      return l.inputs[i] == graph_.input_name ? uint64_t(input_element_bytes()) : uint64_t(es_);
    };
    if (!resident(l.output)) bound += l.last_stage().out_shape.elements() * graph_.batch * es_;
    for (size_t i = 0; i < l.inputs.size(); ++i) {
      if (!resident(l.inputs[i])) bound += l.in_shapes[i].elements() * graph_.batch * in_bytes(i);
    }
    rec.dram_bytes_lower_bound = op_info(l.kind).lowering == OpLowering::kFree ? 0 : bound;
    program_.layers.push_back(rec);
    current_ = &program_.layers.back();
    if (!lower_layer(l)) return {false, {}, reason_};
    current_->end_instruction = static_cast<uint32_t>(program_.instructions.size());
  }
  for (const auto& name : graph_.outputs) program_.outputs.push_back(placement(name));
  for (const auto& l : graph_.layers) program_.tensors.push_back(placement(l.output));
  return {true, std::move(program_), ""};
}

}  // namespace lowering

CompileResult compile(const Graph& graph, const HwConfig& hw) {
  return lowering::Lowering(graph, hw).run();
}

}  // namespace npusim
