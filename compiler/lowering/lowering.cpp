#include "compiler/lowering/lowering.hpp"

#include <fmt/format.h>

#include "compiler/lowering/lowering_context.hpp"
#include "support/error.hpp"

namespace npusim {
namespace lowering {

CompileResult Lowering::run() {
  NPUSIM_CHECK(graph_.quantized, "graph {} must be quantized before lowering", graph_.name);
  program_.network = graph_.name;
  program_.batch = graph_.batch;
  program_.matrix_units = hw_.matrix_unit.count;
  program_.total_macs = graph_.total_macs();
  program_.dtype = graph_.dtype;

  // Off-chip memory: parameters first, then the input, then every layer's output.
  for (const auto& l : graph_.layers) {
    Params p;
    if (l.has_weights() && es_ == 1) {
      NPUSIM_CHECK(l.qweights.size() == l.reduction() * l.filters, "layer {}: no int8 weights",
                   l.name);
      p.weights = dram_param(l.qweights.data(), l.qweights.size());
      p.bias = dram_param(l.qbias.data(), l.qbias.size() * 4);
    } else if (l.has_weights()) {
      NPUSIM_CHECK(l.bf16_weights.size() == l.reduction() * l.filters, "layer {}: no bf16 weights",
                   l.name);
      p.weights = dram_param(l.bf16_weights.data(), l.bf16_weights.size() * 2);
      p.bias = dram_param(l.bias.data(), l.bias.size() * 4);
    }
    if (l.kind == OpKind::kLayerNorm) {
      std::vector<float> gb(l.gamma);
      gb.insert(gb.end(), l.beta.begin(), l.beta.end());
      p.norm = dram_param(gb.data(), gb.size() * 4);
    }
    params_[l.name] = p;
  }
  auto placement = [&](const std::string& name) {
    TensorShape s = graph_.shape_of(name);
    TensorPlacement p;
    p.name = name;
    p.dram_addr = tensor_addr_.at(name);
    p.batch = graph_.batch;
    p.dims = s.dims;
    p.scale = graph_.scale_of(name);
    p.element_bytes = es_;
    return p;
  };
  tensor_addr_[graph_.input_name] = dram_alloc(graph_.input_shape.elements() * graph_.batch * es_);
  program_.input = placement(graph_.input_name);
  for (const auto& l : graph_.layers) {
    // Reshape is free: the row-major element order does not change.
    tensor_addr_[l.output] = l.kind == OpKind::kReshape
                                 ? tensor_addr_.at(l.inputs[0])
                                 : dram_alloc(l.out_shape.elements() * graph_.batch * es_);
  }
  program_.dram_bytes = dram_top_;
  if (dram_top_ > hw_.memory.capacity_bytes) {
    return {false,
            {},
            fmt::format("network '{}' needs {} bytes of off-chip memory (weights and "
                        "activations), the hardware has {}: raise "
                        "memory.capacity_bytes or lower the batch",
                        graph_.name, dram_top_, hw_.memory.capacity_bytes)};
  }

  for (const auto& l : graph_.layers) {
    LayerRecord rec;
    rec.name = l.name;
    rec.op = to_string(l.kind);
    if (l.kind == OpKind::kConv) rec.op = l.in_shapes[0].rank() == 4 ? "conv3d" : "conv2d";
    if (l.kind == OpKind::kActivation) rec.op = to_string(l.activation);
    for (const auto& f : l.fused) rec.fused += (rec.fused.empty() ? "" : ",") + f;
    rec.macs = l.macs(graph_.batch);
    rec.first_instruction = static_cast<uint32_t>(program_.instructions.size());
    uint64_t bound =
        (l.out_shape.elements() * graph_.batch + l.qweights.size() + l.bf16_weights.size()) * es_ +
        4 * l.bias.size();
    for (const auto& s : l.in_shapes) bound += s.elements() * graph_.batch * es_;
    rec.dram_bytes_lower_bound = l.kind == OpKind::kReshape ? 0 : bound;
    program_.layers.push_back(rec);
    current_ = &program_.layers.back();
    bool ok = true;
    switch (l.kind) {
      case OpKind::kConv:
      case OpKind::kDense:
      case OpKind::kMatMul:
        ok = lower_matrix(l, *current_);
        break;
      case OpKind::kMaxPool:
      case OpKind::kAvgPool:
        ok = lower_pool(l, *current_);
        break;
      case OpKind::kSoftmax:
      case OpKind::kLayerNorm:
      case OpKind::kActivation:
        ok = lower_rows(l, *current_);
        break;
      case OpKind::kAdd:
      case OpKind::kMul:
        ok = lower_eltwise(l, *current_);
        break;
      case OpKind::kConcat:
        ok = lower_concat(l, *current_);
        break;
      case OpKind::kReshape:
        current_->tiling = "no instructions: the row-major element order is unchanged";
        break;
      case OpKind::kBatchNorm:
        NPUSIM_CHECK(false, "batch norm {} reached lowering unfolded", l.name);
    }
    if (!ok) return {false, {}, reason_};
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
