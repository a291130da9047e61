// A core's link queue: executes its COPY instructions (arch/isa.hpp) in order, each one write
// transaction over a TLM-2.0 initiator socket bound to the interconnect (models/interconnect.hpp),
// beside the core's DMA and compute units, so a copy overlaps with compute.
//
// Timing rule: the copy issues when its dependency tokens are in and completes when the
// interconnect says its last byte arrived (models/interconnect_timing.hpp); the queue is busy,
// and takes its next copy, from issue to completion.
#pragma once

#include <tlm_utils/simple_initiator_socket.h>

#include <tlm>

#include "models/execution_unit.hpp"
#include "models/interconnect.hpp"
#include "models/onchip_buffers.hpp"

namespace npusim {

class LinkQueue : public ExecutionUnit {
 public:
  tlm_utils::simple_initiator_socket<LinkQueue> socket;

  LinkQueue(sc_core::sc_module_name name, const Program& program, std::vector<uint32_t> stream,
            Scoreboard& scoreboard, const CoreClock& clock, OnChipBuffers& buffers);

  uint64_t bytes_sent() const { return bytes_; }
  void register_stats(stats::Registry& reg, const std::string& prefix) const override;

 protected:
  void execute(const Instruction& instr) override;

 private:
  OnChipBuffers& buffers_;
  tlm::tlm_generic_payload payload_;
  uint64_t bytes_ = 0;
};

}  // namespace npusim
