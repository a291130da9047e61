// The memory plan. Unified buffer (plan_unified_buffer): every activation tensor stays on chip for
// its live range when it fits (compiler/lowering/ub_allocator.hpp), except the graph's input and
// outputs, the second operand of a matmul of two activations (it streams through the weight
// buffer, which the DMA fills from off-chip memory) and the operands of embeddings and DMA
// transposes; each layer gets a scratch range for its own blocks. Off-chip memory: parameters
// first, then the input, then every tensor not resident, each 4 KiB-aligned. A free op's output
// shares its input's bytes, on or off chip. A layer split over cores (tensor_parallel.hpp) has its
// input, residuals and output off chip.
#include <fmt/format.h>

#include <algorithm>
#include <tuple>

#include "compiler/ir/backward_rules.hpp"
#include "compiler/ir/op_table.hpp"
#include "compiler/lowering/lowering_context.hpp"
#include "support/error.hpp"

namespace npusim::lowering {

bool Lowering::plan_memory() {
  for (const auto& l : graph_.layers) {
    Params p;
    if (l.on_host) {
      // The host keeps its own copy of the layer's parameters (docs/heterogeneous.md).
    } else if (l.has_weights()) {
      // Empty weights: a timing-only compile, whose segment keeps the size and no contents.
      const std::vector<int8_t>& q = l.qweights;
      const std::vector<uint16_t>& h = l.bf16_weights;
      const uint64_t n = l.reduction() * uint64_t(l.filters);
      NPUSIM_CHECK((es_ == 1 ? q.size() : h.size()) == n || (q.empty() && h.empty()),
                   "layer {}: {} {} weights, expected {}", l.name, es_ == 1 ? q.size() : h.size(),
                   es_ == 1 ? "int8" : "bf16", n);
      const void* contents = q.empty() && h.empty() ? nullptr
                             : es_ == 1             ? static_cast<const void*>(q.data())
                                                    : static_cast<const void*>(h.data());
      if (plan_compressed_weights(l)) {
        // Boxes in their compressed store (weight_compression.cpp); p.weights is not read.
      } else if (l.int4_weights && l.weight_group == 0 && es_ == 1) {
        // Two int4 weights to a byte, the lower nibble first, in the int8 layout's order
        // ([reduction][filters], an even number of filters); the DMA widens them on the way in.
        NPUSIM_CHECK(es_ == 1 && l.filters % 2 == 0, "layer {}: int4 weights of {} filters", l.name,
                     l.filters);
        std::vector<uint8_t> packed(q.size() / 2);
        for (size_t i = 0; i < packed.size(); ++i) {
          NPUSIM_CHECK(q[2 * i] >= -8 && q[2 * i] <= 7 && q[2 * i + 1] >= -8 && q[2 * i + 1] <= 7,
                       "layer {}: weight {} or {} outside int4", l.name, 2 * i, 2 * i + 1);
          packed[i] = uint8_t((uint8_t(q[2 * i]) & 0x0f) | (uint8_t(q[2 * i + 1]) << 4));
        }
        p.weights = dram_param(q.empty() ? nullptr : packed.data(), weight_elements(l) / 2);
      } else {
        p.weights = dram_param(contents, weight_elements(l) * es_);
      }
      p.bias = es_ == 1 ? dram_param(l.qbias.data(), l.qbias.size() * 4)
                        : dram_param(l.bias.data(), l.bias.size() * 4);
    }
    if (l.kind == OpKind::kEmbedding) {  // the table, on its own scale or in bf16
      p.weights = es_ == 1 ? dram_param(l.qweights.data(), l.qweights.size())
                           : dram_param(l.bf16_weights.data(), l.bf16_weights.size() * 2);
    }
    if (l.kind == OpKind::kLayerNorm) {
      std::vector<float> gb(l.gamma);
      gb.insert(gb.end(), l.beta.begin(), l.beta.end());
      p.norm = dram_param(gb.data(), gb.size() * 4);
    }
    params_[l.name] = p;
  }
  plan_unified_buffer();
  tensor_addr_[graph_.input_name] =
      dram_alloc(graph_.input_shape.elements() * graph_.batch * input_element_bytes());
  program_.input = placement(graph_.input_name);
  for (const auto& l : graph_.layers) {
    if (ub_addr_.count(l.output)) continue;
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

bool resident_move(const Layer& l) {
  return op_info(l.kind).lowering == OpLowering::kMove && l.kind != OpKind::kEmbedding &&
         l.move_op != kTransposeRowsMove;
}

void Lowering::plan_unified_buffer() {
  // A move whose operands stay off chip: an embedding (its table and ids are there), a DMA
  // transpose (compiler/ir/backward_rules.hpp), every move when so asked.
  auto off_chip_move = [&](const Layer& l) {
    return op_info(l.kind).lowering == OpLowering::kMove && (moves_off_chip_ || !resident_move(l));
  };
  // One allocator buffer per tensor, shared by the outputs of free ops with their input.
  std::map<std::string, int> buffer_of;
  std::vector<UbBuffer> buffers;
  std::vector<int> consumers;
  std::vector<std::string> names;  // of each buffer's producing tensor
  auto new_buffer = [&](const std::string& name, uint64_t elements, int step) {
    buffer_of[name] = static_cast<int>(buffers.size());
    buffers.push_back({elements * graph_.batch * es_, step, step, true, 0});
    consumers.push_back(0);
    names.push_back(name);
  };
  new_buffer(graph_.input_name, graph_.input_shape.elements(), 0);
  buffers[0].bytes = graph_.input_shape.elements() * graph_.batch * input_element_bytes();
  buffers[0].may_reside = false;
  const int steps = static_cast<int>(graph_.layers.size());
  for (int i = 0; i < steps; ++i) {
    const Layer& l = graph_.layers[i];
    // A layer split over cores reads and writes off chip: every core loads the input, and the
    // output's slices are gathered there (tensor_parallel.hpp).
    const bool split = layer_cores(size_t(i)) > 1;
    for (size_t k = 0; k < l.inputs.size(); ++k) {
      const int b = buffer_of.at(l.inputs[k]);
      buffers[b].last = std::max(buffers[b].last, i);
      ++consumers[b];
      if ((l.kind == OpKind::kMatMul && k == 1) || split) buffers[b].may_reside = false;
      // An embedding reads its ids, a transposing move its input, from off-chip memory
      // (move_lowering.cpp); other moves copy boxes wherever their operands are.
      if (off_chip_move(l)) buffers[b].may_reside = false;
      // The host reaches only off-chip memory (docs/heterogeneous.md).
      if (l.on_host) buffers[b].may_reside = false;
    }
    if (op_info(l.kind).lowering == OpLowering::kFree) {
      buffer_of[l.output] = buffer_of.at(l.inputs[0]);
    } else {
      new_buffer(l.output, l.last_stage().out_shape.elements(), i);  // what the layer stores
      if (off_chip_move(l) || l.on_host || split) {
        buffers.back().may_reside = false;
      }
    }
  }
  for (const auto& name : graph_.outputs) buffers[buffer_of.at(name)].may_reside = false;
  for (size_t b = 0; b < buffers.size(); ++b) {
    // Resident, the producer's store and each consumer's load of the tensor disappear.
    buffers[b].traffic_saved = buffers[b].bytes * (1 + consumers[b]);
  }
  auto need = [&](int step, const std::vector<bool>& resident) {
    return scratch_min(graph_.layers[step],
                       [&](const std::string& name) { return resident[buffer_of.at(name)]; });
  };
  const uint64_t capacity = hw_.unified_buffer.capacity_bytes;
  UbPlan plan = npusim::lowering::plan_unified_buffer(capacity, steps, buffers, need, kAlign);
  if (!plan.ok) {
    // Not even one layer's least scratch fits: everything off chip, every layer gets the whole
    // buffer, and the tiler of the layer that cannot fit explains what to change.
    plan.offset.assign(buffers.size(), std::nullopt);
    plan.scratch.assign(steps, UbRange{0, capacity});
  }
  const std::string violation = check_ub_plan(capacity, buffers, plan);
  NPUSIM_CHECK(violation.empty(), "unified-buffer plan of {}: {}", graph_.name, violation);
  scratch_ = plan.scratch;
  for (const auto& [name, b] : buffer_of) {
    live_[name] = {name == graph_.input_name ? -1 : buffers[b].first, buffers[b].last};
    if (plan.offset[b]) ub_addr_[name] = *plan.offset[b];
  }
}

uint64_t Lowering::scratch_min(const Layer& l,
                               const std::function<bool(const std::string&)>& res) const {
  if (l.on_host) return 0;  // no instruction of the accelerator touches the unified buffer
  const bool in = res(l.inputs[0]), out = res(l.output);
  auto twice = [](uint64_t bytes) { return 2 * align_up(bytes); };
  switch (op_info(l.kind).lowering) {
    case OpLowering::kMatrix:
      return conv_scratch_min(hw_, conv_geometry(l, graph_.batch, es_),
                              ConvOperands{0, in, out, resident_residuals(l, res)});
    case OpLowering::kPool: {
      const TensorShape& s = l.in_shapes[0];
      const uint64_t pixel = uint64_t(s.last()) * es_;
      const uint64_t slab =
          uint64_t(std::min(s.d(), l.kernel[0])) * std::min(s.h(), l.kernel[1]) * s.w() * pixel;
      return (in ? 0 : twice(slab)) + (out ? 0 : twice(l.out_shape.w() * pixel));
    }
    case OpLowering::kRows: {
      const uint64_t row = (l.kind == OpKind::kActivation ? 1 : uint64_t(l.out_shape.last())) * es_;
      const uint64_t params =
          l.kind == OpKind::kLayerNorm ? align_up(8ull * l.out_shape.last()) : 0;
      return (in ? 0 : twice(row)) + (out ? 0 : twice(row)) + params;
    }
    case OpLowering::kEltwise: {
      const int off_chip = !in + !res(l.inputs[1]) + !out;
      return off_chip * twice(kEltwiseMinChunk);
    }
    case OpLowering::kConcat: {
      uint64_t widest = 0;
      for (size_t i = 0; i < l.inputs.size(); ++i) {
        if (!res(l.inputs[i])) widest = std::max<uint64_t>(widest, l.in_shapes[i].last());
      }
      return (twice(widest * es_) + (out ? 0 : twice(uint64_t(l.out_shape.last()) * es_)));
    }
    case OpLowering::kMove:
      // Two slots of one embedding row; two loaded and two rescaled boxes of one element.
      return l.kind == OpKind::kEmbedding ? twice(uint64_t(l.filters) * es_) : 4 * kAlign;
    case OpLowering::kFree:
    case OpLowering::kFolded:
      break;
  }
  return 0;
}

int Lowering::resident_residuals(const Layer& l,
                                 const std::function<bool(const std::string&)>& res) {
  int n = 0;
  for (const Layer& s : l.epilogue) n += s.kind == OpKind::kAdd && res(l.inputs[s.residual_input]);
  return n;
}

TensorPlacement Lowering::placement(const std::string& name) const {
  const Layer* producer_layer = producer(name);
  TensorShape s = producer_layer ? producer_layer->last_stage().out_shape : graph_.input_shape;
  TensorPlacement p;
  p.name = name;
  if (ub_addr_.count(name)) {
    p.buffer = BufferId::kUnified;
    p.ub_addr = ub_addr_.at(name);
    // Resident in another core's buffer (LayerSplit::core): one part, on that core.
    const auto root = root_.find(name);
    const int core = root == root_.end() ? 0 : tensor_core_.at(root->second);
    if (core != 0) {
      TensorPart part;
      part.batch = graph_.batch;
      part.core = core;
      part.buffer = BufferId::kUnified;
      part.ub_addr = p.ub_addr;
      p.parts.push_back(part);
    }
  } else {
    p.dram_addr = tensor_addr_.at(name);
  }
  std::tie(p.first_layer, p.last_layer) = live_.at(name);
  p.batch = graph_.batch;
  p.dims = s.dims;
  p.scale = producer_layer ? producer_layer->last_stage().out_scale : graph_.input_scale;
  p.element_bytes = name == graph_.input_name ? input_element_bytes() : es_;
  return p;
}

}  // namespace npusim::lowering
