// A layer on the host CPU of a heterogeneous system (docs/heterogeneous.md): three instructions,
// its inputs across the link to the host, the host's computation, its output back across the link
// into off-chip memory. The memory plan keeps every operand of a host layer off chip, so the link
// reads and writes whole tensors there; the hazard tracker orders them with the accelerator's work
// on those tensors, and the host's own steps are chained by explicit tokens.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "compiler/ir/op_table.hpp"
#include "compiler/lowering/lowering_context.hpp"
#include "support/error.hpp"

namespace npusim {

uint64_t layer_flops(const Layer& l, int batch) {
  const uint64_t out = l.last_stage().out_shape.elements() * uint64_t(batch);
  const uint64_t elements = l.out_shape.elements() * uint64_t(batch);
  switch (l.kind) {
    case OpKind::kConv:
    case OpKind::kDense:
    case OpKind::kMatMul: {
      uint64_t n = 2 * l.macs(batch) + elements;  // the epilogue: one operation per output
      for (const Layer& s : l.epilogue) n += layer_flops(s, batch);
      return n;
    }
    case OpKind::kMaxPool:
    case OpKind::kAvgPool:
      return out * uint64_t(l.kernel[0]) * l.kernel[1] * l.kernel[2];
    case OpKind::kSoftmax:
      return 5 * elements;
    case OpKind::kLayerNorm:
      return 8 * elements;
    default:
      return out;
  }
}

namespace lowering {

void Lowering::lower_host(const Layer& l, LayerRecord& rec) {
  NPUSIM_CHECK(hw_.host.has_value(), "layer {} is on the host, the hardware describes none",
               l.name);
  NPUSIM_CHECK(op_info(l.kind).lowering != OpLowering::kFree,
               "layer {} runs no instructions and cannot be on the host", l.name);
  rec.on_host = true;
  rec.macs = 0;  // the matrix units' MACs: this layer's are the host's
  HostOp up{HostPhase::kToHost, 0, 0, {}};
  std::vector<BufferAccess> reads;
  std::set<std::string> seen;
  for (size_t i = 0; i < l.inputs.size(); ++i) {
    if (!seen.insert(l.inputs[i]).second) continue;  // a tensor read twice crosses once
    NPUSIM_CHECK(!resident(l.inputs[i]), "host layer {}: input {} is resident on chip", l.name,
                 l.inputs[i]);
    const uint64_t begin = dram_addr(l.inputs[i]);
    const uint64_t bytes = l.in_shapes[i].elements() * graph_.batch * es_;
    up.dram.push_back({begin, begin + bytes});
    up.bytes += bytes;
    reads.push_back({BufferId::kDram, begin, begin + bytes, false});
  }
  NPUSIM_CHECK(!resident(l.output), "host layer {}: its output is resident on chip", l.name);
  const uint64_t out_bytes = l.last_stage().out_shape.elements() * graph_.batch * es_;
  const uint64_t out_begin = dram_addr(l.output);
  const uint64_t params = weight_elements(l) * es_ + 4 * l.bias.size();

  HostOp compute{
      HostPhase::kCompute, up.bytes + out_bytes + params, layer_flops(l, graph_.batch), {}};
  HostOp down{HostPhase::kToDevice, out_bytes, 0, {{out_begin, out_begin + out_bytes}}};
  rec.link_bytes = up.bytes + out_bytes;
  rec.tiling = "host";

  const uint32_t a = emit(UnitKind::kHostLink, 0, std::move(up), reads);
  const uint32_t b = emit(UnitKind::kHost, 0, std::move(compute), {});
  program_.instructions[b].deps.push_back(a);
  const uint32_t c = emit(UnitKind::kHostLink, 1, std::move(down),
                          {{BufferId::kDram, out_begin, out_begin + out_bytes, true}});
  auto& deps = program_.instructions[c].deps;
  if (std::find(deps.begin(), deps.end(), b) == deps.end()) deps.push_back(b);
  std::sort(deps.begin(), deps.end());
}

}  // namespace lowering
}  // namespace npusim
