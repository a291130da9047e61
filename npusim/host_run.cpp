#include "npusim/host_run.hpp"

#include <cstring>

#include "arch/activation.hpp"
#include "compiler/reference/reference.hpp"
#include "compiler/reference/reference_bf16.hpp"
#include "support/error.hpp"

namespace npusim {

namespace {

const TensorPlacement& placement_of(const Program& program, const std::string& name) {
  if (program.input.name == name) return program.input;
  for (const TensorPlacement& t : program.tensors) {
    if (t.name == name) return t;
  }
  NPUSIM_CHECK(false, "no placement for tensor {}", name);
  return program.input;
}

std::vector<uint8_t> run_int8(const Layer& l, int batch,
                              const std::vector<std::vector<uint8_t>>& bytes) {
  std::vector<Tensor8> inputs;
  for (const auto& b : bytes) inputs.emplace_back(b.begin(), b.end());
  std::vector<const Tensor8*> ptrs;
  for (const auto& t : inputs) ptrs.push_back(&t);
  const Tensor8 y = reference_layer(l, batch, ptrs);
  return std::vector<uint8_t>(y.begin(), y.end());
}

std::vector<uint8_t> run_bf16(const Layer& l, int batch,
                              const std::vector<std::vector<uint8_t>>& bytes) {
  std::vector<TensorF> inputs;
  for (const auto& b : bytes) {
    TensorF t(b.size() / 2);
    for (size_t i = 0; i < t.size(); ++i) {
      uint16_t bits;
      std::memcpy(&bits, &b[2 * i], 2);
      t[i] = bf16_bits_to_float(bits);
    }
    inputs.push_back(std::move(t));
  }
  std::vector<const TensorF*> ptrs;
  for (const auto& t : inputs) ptrs.push_back(&t);
  const TensorF y = reference_bf16_op(l, batch, ptrs);
  std::vector<uint8_t> out(y.size() * 2);
  for (size_t i = 0; i < y.size(); ++i) {
    const uint16_t bits = float_to_bf16_bits(y[i]);
    std::memcpy(&out[2 * i], &bits, 2);
  }
  return out;
}

}  // namespace

HostKernel host_reference_kernel(const Program& program, const Graph& graph) {
  NPUSIM_CHECK(program.layers.size() == graph.layers.size(),
               "the program has {} layers, the graph {}", program.layers.size(),
               graph.layers.size());
  return [&program, &graph](uint32_t layer, const uint8_t* memory) {
    const Layer& l = graph.layers.at(layer);
    NPUSIM_CHECK(program.layers[layer].name == l.name, "program layer {} is {}, the graph's {}",
                 layer, program.layers[layer].name, l.name);
    std::vector<std::vector<uint8_t>> inputs;
    for (const auto& name : l.inputs) {
      inputs.push_back(read_tensor(placement_of(program, name), memory));
    }
    return graph.dtype == DataType::kBf16 ? run_bf16(l, graph.batch, inputs)
                                          : run_int8(l, graph.batch, inputs);
  };
}

void register_host_stats(stats::Registry& reg, const HwConfig& hw, const Program& program,
                         const Soc& soc) {
  const size_t n = program.layers.size();
  const auto& recs = program.layers;
  const auto busy = [](const HostUnit* u, size_t i) {
    return u == nullptr ? uint64_t{0} : u->layer_busy_cycles()[i];
  };
  const HostUnit* cpu = soc.host_cpu.get();
  const HostUnit* up = soc.link_to_host.get();
  const HostUnit* down = soc.link_to_device.get();
  reg.column("layers", n, "on_host", "", "runs on the host CPU (--host-ops, or fallen back)",
             [&recs](size_t i) { return recs[i].on_host; });
  reg.column("layers", n, "host_cycles", "cycles", "cycles the host CPU computed it",
             [cpu, busy](size_t i) { return busy(cpu, i); });
  reg.column("layers", n, "link_bytes", "bytes",
             "bytes its inputs and output moved over the host link, both directions",
             [&recs](size_t i) { return recs[i].link_bytes; });
  reg.column("layers", n, "link_cycles", "cycles",
             "cycles of its link transfers, both directions, summed",
             [up, down, busy](size_t i) { return busy(up, i) + busy(down, i); });
  if (!hw.host) return;
  const HostConfig& h = *hw.host;
  reg.value("host_cpu.gflops", "GFLOP/s", "host CPU throughput (hardware host.gflops)", h.gflops);
  reg.value("host_cpu.memory_gbps", "GB/s", "host memory bandwidth (hardware host.memory_gbps)",
            h.memory_gbps);
  uint64_t layers = 0;
  for (const auto& r : recs) layers += r.on_host;
  reg.value("host_cpu.layers", "count", "layers the host CPU ran", layers);
  static const uint64_t kZero = 0;
  reg.counter("host_cpu.flops", "count", "operations the host CPU executed (the cost model's)",
              soc.host_cpu ? soc.host.flops : kZero);
  reg.counter("host_cpu.busy_cycles", "cycles", "cycles the host CPU computed",
              cpu ? cpu->stats().busy_cycles : kZero);
  reg.value("link.bandwidth_gbps", "GB/s", "host link bandwidth per direction",
            h.link.bandwidth_gbps);
  reg.value("link.latency_ns", "ns", "host link latency per crossing", h.link.latency_ns);
  reg.counter("link.to_host_bytes", "bytes", "bytes moved from off-chip memory to the host",
              soc.host_cpu ? soc.host.link_bytes[0] : kZero);
  reg.counter("link.to_device_bytes", "bytes", "bytes moved from the host into off-chip memory",
              soc.host_cpu ? soc.host.link_bytes[1] : kZero);
  reg.counter("link.to_host_busy_cycles", "cycles", "cycles the link towards the host was busy",
              up ? up->stats().busy_cycles : kZero);
  reg.counter("link.to_device_busy_cycles", "cycles", "cycles the link back was busy",
              down ? down->stats().busy_cycles : kZero);
}

}  // namespace npusim
