#include "arch/program.hpp"

#include <fmt/format.h>

namespace npusim {

std::string describe_instruction(const Program& p, uint32_t id) {
  const Instruction& i = p.instructions[id];
  const std::string layer = i.layer < p.layers.size() ? p.layers[i.layer].name : "?";
  return fmt::format("instruction {} ({} on {}{}, layer {})", id, opcode_name(i), to_string(i.unit),
                     i.unit_index, layer);
}

std::string memory_plan(const Program& p) {
  auto layer = [&](int i) { return i < 0 ? std::string("input") : p.layers.at(i).name; };
  std::string out =
      "; memory plan: tensor, where it lives, live from the layer writing it to the last "
      "reading it\n";
  for (const auto& t : p.tensors) {
    const std::string where =
        t.buffer == BufferId::kUnified
            ? fmt::format("ub[{:#x}, {:#x})", t.ub_addr, t.ub_addr + t.bytes())
            : fmt::format("dram[{:#x}, {:#x})", t.dram_addr, t.dram_addr + t.bytes());
    out += fmt::format(";   {:<24} {:>10} B  {:<28} layers {} .. {}\n", t.name, t.bytes(), where,
                       layer(t.first_layer), layer(t.last_layer));
  }
  return out;
}

std::string to_assembly(const Program& p) {
  auto shape = [](const TensorPlacement& t) {
    std::string s = std::to_string(t.batch);
    for (int d : t.dims) {
      s += 'x';
      s += std::to_string(d);
    }
    return s;
  };
  std::string out = fmt::format(
      "; npusim program for '{}', batch {}, {} instructions, {} matrix unit(s)\n"
      "; input  {} at dram[{:#x}] {} int8 scale {:.6g}\n",
      p.network, p.batch, p.instructions.size(), p.matrix_units, p.input.name, p.input.dram_addr,
      shape(p.input), p.input.scale);
  for (const auto& o : p.outputs) {
    out += fmt::format("; output {} at dram[{:#x}] {} int8 scale {:.6g}\n", o.name, o.dram_addr,
                       shape(o), o.scale);
  }
  out += memory_plan(p);
  for (const auto& layer : p.layers) {
    out += fmt::format(
        "\n; ---- layer {} ({}{}): {} MACs, dram read {} B, write {} B (bound {} B)\n", layer.name,
        layer.op, layer.fused.empty() ? "" : ", fused: " + layer.fused, layer.macs,
        layer.dram_read_bytes, layer.dram_write_bytes, layer.dram_bytes_lower_bound);
    if (!layer.tiling.empty()) out += fmt::format("; tiling: {}\n", layer.tiling);
    for (uint32_t i = layer.first_instruction; i < layer.end_instruction; ++i) {
      out += to_assembly(p.instructions[i]);
      out += '\n';
    }
  }
  return out;
}

}  // namespace npusim
