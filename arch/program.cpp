#include "arch/program.hpp"

#include <fmt/format.h>

#include <cstring>

#include "support/error.hpp"

namespace npusim {

namespace {
// Calls f(part, offset in the sample-order bytes, length, index in t.parts) for each stored run of
// `t` (a tensor without parts is one part of core 0, index 0).
template <class F>
void for_each_part(const TensorPlacement& t, F f) {
  if (t.parts.empty()) {
    f(part_on_core(t, 0), 0, t.bytes(), size_t{0});
    return;
  }
  uint64_t offset = 0;
  int samples = 0;
  for (size_t i = 0; i < t.parts.size(); ++i) {
    const TensorPart& part = t.parts[i];
    const uint64_t n = t.sample_bytes() * static_cast<uint64_t>(part.batch);
    f(part, offset, n, i);
    offset += n;
    samples += part.batch;
  }
  NPUSIM_CHECK(samples == t.batch, "tensor {}: its parts hold {} samples, the batch is {}", t.name,
               samples, t.batch);
}
}  // namespace

TensorPart part_on_core(const TensorPlacement& t, int core) {
  if (t.parts.empty()) {
    return core == 0 ? TensorPart{t.dram_addr, t.batch, 0, t.buffer, t.ub_addr} : TensorPart{};
  }
  for (const TensorPart& part : t.parts) {
    if (part.core == core) return part;
  }
  return TensorPart{};
}

std::vector<uint8_t> read_tensor(const TensorPlacement& t, const uint8_t* memory,
                                 const std::function<const uint8_t*(int, size_t)>& resident) {
  std::vector<uint8_t> out(t.bytes());
  for_each_part(t, [&](const TensorPart& part, uint64_t offset, uint64_t n, size_t index) {
    const uint8_t* from = memory + part.dram_addr;
    if (part.buffer == BufferId::kUnified) {
      NPUSIM_CHECK(resident, "tensor {} is resident on core {}: no copy of it to read", t.name,
                   part.core);
      from = resident(part.core, index);
      NPUSIM_CHECK(from != nullptr, "tensor {}: core {} captured no copy of it", t.name, part.core);
    }
    std::memcpy(out.data() + offset, from, n);
  });
  return out;
}

void write_tensor(const TensorPlacement& t, const std::vector<uint8_t>& bytes, uint8_t* memory) {
  NPUSIM_CHECK(bytes.size() == t.bytes(), "tensor {}: {} bytes given, it has {}", t.name,
               bytes.size(), t.bytes());
  for_each_part(t, [&](const TensorPart& part, uint64_t offset, uint64_t n, size_t) {
    NPUSIM_CHECK(part.buffer == BufferId::kDram, "tensor {}: core {}'s part is not off chip",
                 t.name, part.core);
    std::memcpy(memory + part.dram_addr, bytes.data() + offset, n);
  });
}

std::string describe_instruction(const Program& p, uint32_t id) {
  const Instruction& i = p.instructions[id];
  const std::string layer = i.layer < p.layers.size() ? p.layers[i.layer].name : "?";
  const std::string core = p.cores > 1 ? fmt::format("core{} ", i.core) : "";
  return fmt::format("instruction {} ({} on {}{}{}, layer {})", id, opcode_name(i), core,
                     to_string(i.unit), i.unit_index, layer);
}

std::string memory_plan(const Program& p) {
  auto layer = [&](int i) { return i < 0 ? std::string("input") : p.layers.at(i).name; };
  std::string out =
      "; memory plan: tensor, where it lives, live from the layer writing it to the last "
      "reading it\n";
  for (const auto& t : p.tensors) {
    // On a data-parallel program, each core's part (core<c>: where its samples are).
    std::string where;
    for_each_part(t, [&](const TensorPart& part, uint64_t, uint64_t n, size_t) {
      if (!t.parts.empty()) where += fmt::format("{}core{} ", where.empty() ? "" : " ", part.core);
      where += part.buffer == BufferId::kUnified
                   ? fmt::format("ub[{:#x}, {:#x})", part.ub_addr, part.ub_addr + n)
                   : fmt::format("dram[{:#x}, {:#x})", part.dram_addr, part.dram_addr + n);
    });
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
      "; input  {} at dram[{:#x}] {} {}\n",
      p.network, p.batch, p.instructions.size(), p.matrix_units, p.input.name, p.input.dram_addr,
      shape(p.input),
      p.input.element_bytes == 4 ? std::string("int32 token ids")
                                 : fmt::format("int8 scale {:.6g}", p.input.scale));
  if (p.parallel != "single core") out += fmt::format("; parallel: {}\n", p.parallel);
  for (const std::string& stage : p.parallel_stages) out += fmt::format(";   {}\n", stage);
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
    if (p.parallel != "single core") out += fmt::format("; cores: {}\n", layer.parallel);
    for (uint32_t i = layer.first_instruction; i < layer.end_instruction; ++i) {
      if (p.cores > 1) out += fmt::format("core{} ", p.instructions[i].core);
      out += to_assembly(p.instructions[i]);
      out += '\n';
    }
  }
  return out;
}

}  // namespace npusim
