#include "arch/program.hpp"

#include <fmt/format.h>

#include <cstring>

#include "support/error.hpp"

namespace npusim {

namespace {
// Calls f(dram_addr, offset in the sample-order bytes, length) for each stored run of `t`.
template <class F>
void for_each_part(const TensorPlacement& t, F f) {
  if (t.parts.empty()) {
    f(t.dram_addr, 0, t.bytes());
    return;
  }
  uint64_t offset = 0;
  int samples = 0;
  for (const TensorPart& part : t.parts) {
    const uint64_t n = t.sample_bytes() * static_cast<uint64_t>(part.batch);
    f(part.dram_addr, offset, n);
    offset += n;
    samples += part.batch;
  }
  NPUSIM_CHECK(samples == t.batch, "tensor {}: its parts hold {} samples, the batch is {}", t.name,
               samples, t.batch);
}
}  // namespace

std::vector<uint8_t> read_tensor(const TensorPlacement& t, const uint8_t* memory) {
  std::vector<uint8_t> out(t.bytes());
  for_each_part(t, [&](uint64_t addr, uint64_t offset, uint64_t n) {
    std::memcpy(out.data() + offset, memory + addr, n);
  });
  return out;
}

void write_tensor(const TensorPlacement& t, const std::vector<uint8_t>& bytes, uint8_t* memory) {
  NPUSIM_CHECK(bytes.size() == t.bytes(), "tensor {}: {} bytes given, it has {}", t.name,
               bytes.size(), t.bytes());
  for_each_part(t, [&](uint64_t addr, uint64_t offset, uint64_t n) {
    std::memcpy(memory + addr, bytes.data() + offset, n);
  });
}

std::string describe_instruction(const Program& p, uint32_t id) {
  const Instruction& i = p.instructions[id];
  const std::string layer = i.layer < p.layers.size() ? p.layers[i.layer].name : "?";
  const std::string core = p.cores > 1 ? fmt::format("core{} ", i.core) : "";
  return fmt::format("instruction {} ({} on {}{}{}, layer {})", id, opcode_name(i), core,
                     to_string(i.unit), i.unit_index, layer);
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
  if (p.parallel != "single core") out += fmt::format("; parallel: {}\n", p.parallel);
  for (const auto& o : p.outputs) {
    out += fmt::format("; output {} at dram[{:#x}] {} int8 scale {:.6g}\n", o.name, o.dram_addr,
                       shape(o), o.scale);
  }
  for (const auto& layer : p.layers) {
    out += fmt::format(
        "\n; ---- layer {} ({}{}): {} MACs, dram read {} B, write {} B (bound {} B)\n", layer.name,
        layer.op, layer.fused.empty() ? "" : ", fused: " + layer.fused, layer.macs,
        layer.dram_read_bytes, layer.dram_write_bytes, layer.dram_bytes_lower_bound);
    if (!layer.tiling.empty()) out += fmt::format("; tiling: {}\n", layer.tiling);
    for (uint32_t i = layer.first_instruction; i < layer.end_instruction; ++i) {
      if (p.cores > 1) out += fmt::format("core{} ", p.instructions[i].core);
      out += to_assembly(p.instructions[i]);
      out += '\n';
    }
  }
  return out;
}

}  // namespace npusim
