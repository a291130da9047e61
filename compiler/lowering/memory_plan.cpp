// The off-chip memory plan: parameters first, then the input, then every layer's output, each
// 4 KiB-aligned; a free op's output shares its input's bytes.
#include <fmt/format.h>

#include "compiler/ir/op_table.hpp"
#include "compiler/lowering/lowering_context.hpp"
#include "support/error.hpp"

namespace npusim::lowering {

bool Lowering::plan_memory() {
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
  tensor_addr_[graph_.input_name] = dram_alloc(graph_.input_shape.elements() * graph_.batch * es_);
  program_.input = placement(graph_.input_name);
  for (const auto& l : graph_.layers) {
    // A free op (reshape) keeps its input's bytes: the row-major element order does not change.
    tensor_addr_[l.output] =
        op_info(l.kind).lowering == OpLowering::kFree
            ? tensor_addr_.at(l.inputs[0])
            : dram_alloc(l.last_stage().out_shape.elements() * graph_.batch * es_);
  }
  program_.dram_bytes = dram_top_;
  if (dram_top_ > hw_.memory.capacity_bytes) {
    return fail(
        fmt::format("network '{}' needs {} bytes of off-chip memory (weights and "
                    "activations), the hardware has {}: raise "
                    "memory.capacity_bytes or lower the batch",
                    graph_.name, dram_top_, hw_.memory.capacity_bytes));
  }

  return true;
}

TensorPlacement Lowering::placement(const std::string& name) const {
  TensorShape s = graph_.shape_of(name);
  TensorPlacement p;
  p.name = name;
  p.dram_addr = tensor_addr_.at(name);
  p.batch = graph_.batch;
  p.dims = s.dims;
  p.scale = graph_.scale_of(name);
  p.element_bytes = es_;
  return p;
}

}  // namespace npusim::lowering
