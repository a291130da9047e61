#include "npusim/host_ops.hpp"

#include <fmt/format.h>

#include <set>

#include "compiler/ir/op_table.hpp"
#include "support/error.hpp"

namespace npusim {

namespace {

// The operator type as `npusim compile` names it (compiler/lowering/lowering.cpp, LayerRecord::op).
std::string op_type(const Layer& l) {
  if (l.kind == OpKind::kConv) return l.in_shapes[0].rank() == 4 ? "conv3d" : "conv2d";
  if (l.kind == OpKind::kActivation) return to_string(l.activation);
  if (l.kind == OpKind::kMove && !l.move_op.empty()) return l.move_op;
  return to_string(l.kind);
}

std::string joined(const std::set<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

void pin_host_ops(Graph& graph, const HwConfig& hw, const std::string& spec,
                  const std::string& hw_spec) {
  if (spec.empty()) return;
  if (!hw.host) {
    throw UserError(
        fmt::format("--host-ops {}: the hardware '{}' describes no host: add a `host` section "
                    "(docs/heterogeneous.md)",
                    spec, hw_spec));
  }
  std::set<std::string> layer_names, op_names;
  for (const Layer& l : graph.layers) {
    if (op_info(l.kind).lowering == OpLowering::kFree) continue;
    layer_names.insert(l.name);
    op_names.insert(op_type(l));
  }
  size_t begin = 0;
  while (begin <= spec.size()) {
    const size_t comma = std::min(spec.find(',', begin), spec.size());
    const std::string name = spec.substr(begin, comma - begin);
    begin = comma + 1;
    if (name.empty()) throw UserError(fmt::format("--host-ops '{}': an empty name", spec));
    bool matched = false;
    for (Layer& l : graph.layers) {
      if (l.name != name && op_type(l) != name) continue;
      if (op_info(l.kind).lowering == OpLowering::kFree) {
        throw UserError(fmt::format(
            "--host-ops {}: layer '{}' ({}) runs no instructions (its output is its input's "
            "bytes), so there is nothing for the host to run",
            name, l.name, op_type(l)));
      }
      l.on_host = matched = true;
    }
    if (matched) continue;
    for (const Layer& l : graph.layers) {
      for (const auto& f : l.fused) {
        if (f == name) {
          throw UserError(fmt::format(
              "--host-ops {}: the layer was folded into layer '{}' ({}) before lowering; pin "
              "'{}' instead",
              name, l.name, op_type(l), l.name));
        }
      }
    }
    throw UserError(fmt::format(
        "--host-ops {}: no layer of '{}' is named so and no operator has that type (layers: {}; "
        "operators: {})",
        name, graph.name, joined(layer_names), joined(op_names)));
  }
}

}  // namespace npusim
