// The simulator's side of the host CPU of a heterogeneous system (docs/heterogeneous.md): the
// kernel that computes a host layer's values with the functional reference on the inputs it reads
// from simulated off-chip memory, and the host's and link's figures in stats.json.
#pragma once

#include "arch/hw_config.hpp"
#include "arch/program.hpp"
#include "compiler/ir/graph.hpp"
#include "models/host_unit.hpp"
#include "models/soc.hpp"
#include "support/stats.hpp"

namespace npusim {

// program.layers[i] is graph.layers[i]; both must outlive the kernel.
HostKernel host_reference_kernel(const Program& program, const Graph& graph);

// Per layer: on_host, host_cycles, link_bytes, link_cycles (columns of "layers"); with a host
// described, the totals under "host_cpu." and "link.".
void register_host_stats(stats::Registry& reg, const HwConfig& hw, const Program& program,
                         const Soc& soc);

}  // namespace npusim
