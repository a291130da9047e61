// The host CPU of a heterogeneous system and its link to the accelerator (docs/heterogeneous.md).
// Three units run a host layer's three instructions (arch/isa.hpp, HostOp): the link towards the
// host, the host CPU, the link back; the link is full duplex, one unit per direction. Timing rule:
// a crossing takes latency_ns + bytes / bandwidth_gbps, a computation max(flops / gflops,
// bytes / memory_gbps), each rounded up to whole core cycles. The link moves bytes between the
// accelerator's off-chip memory and the host without going through the accelerator's DMA queues
// or memory model (so it does not contend with them: an assumption the docs state).
//
// Values: the host computes a layer's output with a kernel the simulator supplies (the functional
// reference on the inputs it reads from off-chip memory); the link back writes it into off-chip
// memory. Without a kernel (timing only) no byte moves.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "arch/hw_config.hpp"
#include "models/execution_unit.hpp"
#include "support/zeroed_bytes.hpp"

namespace npusim {

// Core cycles of one host instruction at `clock_mhz`.
uint64_t host_cycles(const HostOp& op, const HostConfig& host, double clock_mhz);

// A host layer's output bytes computed from off-chip memory (`memory`: its contents).
using HostKernel = std::function<std::vector<uint8_t>(uint32_t layer, const uint8_t* memory)>;

// What the three host units share: the kernel and the outputs computed but not yet sent back.
struct HostState {
  HostKernel kernel;
  std::map<uint32_t, std::vector<uint8_t>> results;  // by layer
  uint64_t link_bytes[2] = {0, 0};                   // to the host, to the device
  uint64_t flops = 0;
};

class HostUnit : public ExecutionUnit {
 public:
  HostUnit(sc_core::sc_module_name name, const Program& program, std::vector<uint32_t> stream,
           Scoreboard& scoreboard, const CoreClock& clock, const HostConfig& config,
           double clock_mhz, HostState& state, ZeroedBytes& memory);

 protected:
  void execute(const Instruction& instr) override;

 private:
  HostConfig config_;
  double clock_mhz_;
  HostState& state_;
  ZeroedBytes& memory_;
};

}  // namespace npusim
