#include "models/host_unit.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "support/error.hpp"

namespace npusim {

uint64_t host_cycles(const HostOp& op, const HostConfig& host, double clock_mhz) {
  // GB/s are bytes per ns and GFLOP/s operations per ns.
  const double bytes = static_cast<double>(op.bytes);
  const double ns =
      op.phase == HostPhase::kCompute
          ? std::max(static_cast<double>(op.flops) / host.gflops, bytes / host.memory_gbps)
          : host.link.latency_ns + bytes / host.link.bandwidth_gbps;
  return static_cast<uint64_t>(std::ceil(ns * clock_mhz * 1e-3 - 1e-9));
}

HostUnit::HostUnit(sc_core::sc_module_name name, const Program& program,
                   std::vector<uint32_t> stream, Scoreboard& scoreboard, const CoreClock& clock,
                   const HostConfig& config, double clock_mhz, HostState& state,
                   ZeroedBytes& memory)
    : ExecutionUnit(name, program, std::move(stream), scoreboard, clock),
      config_(config),
      clock_mhz_(clock_mhz),
      state_(state),
      memory_(memory) {}

void HostUnit::execute(const Instruction& instr) {
  const auto* op = std::get_if<HostOp>(&instr.op);
  NPUSIM_CHECK(op != nullptr, "{}: instruction {} is not a host operation", name(), instr.id);
  const uint64_t start = clock_.now();
  const uint64_t cycles = host_cycles(*op, config_, clock_mhz_);
  switch (op->phase) {
    case HostPhase::kToHost:
      state_.link_bytes[0] += op->bytes;
      break;
    case HostPhase::kCompute:
      state_.flops += op->flops;
      if (state_.kernel) state_.results[instr.layer] = state_.kernel(instr.layer, memory_.data());
      break;
    case HostPhase::kToDevice:
      state_.link_bytes[1] += op->bytes;
      break;
  }
  add_busy(instr, cycles);
  wait(clock_.cycles(cycles));
  if (op->phase == HostPhase::kToDevice && state_.kernel) {
    // The output lands in off-chip memory when its last byte has crossed.
    const auto it = state_.results.find(instr.layer);
    NPUSIM_CHECK(it != state_.results.end(), "{}: layer {} was not computed before instruction {}",
                 name(), instr.layer, instr.id);
    uint64_t offset = 0;
    for (const DramRange& r : op->dram) {
      const uint64_t n = r.end - r.begin;
      NPUSIM_CHECK(offset + n <= it->second.size() && r.end <= memory_.size(),
                   "{}: instruction {} writes past layer {}'s {} output bytes", name(), instr.id,
                   instr.layer, it->second.size());
      std::memcpy(memory_.data() + r.begin, it->second.data() + offset, n);
      offset += n;
    }
    state_.results.erase(it);
  }
  complete(instr, start, start + cycles);
}

}  // namespace npusim
