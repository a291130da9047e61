// A ring all-reduce of tensors that every core of a data-parallel program holds a part of
// (docs/training.md, "Data parallel"): the cores' partial gradients of a training step, each in
// the core's own off-chip region, summed over the on-chip interconnect as a chip's collective
// library sums them (Patarasuk and Yuan, "Bandwidth optimal all-reduce algorithms for clusters of
// workstations", JPDC 2009; the ring of NCCL and of TPU ICI collectives).
//
// For each tensor (in pieces of at most piece_bytes, one after the other), with N cores:
//   1. every core loads its partial from off-chip memory into its unified buffer (one DMA load:
//      the link copies read on-chip memory, as a TPU's ICI DMA is fed from its memory);
//   2. the piece is cut into N chunks; reduce-scatter, steps s = 0 .. N-2: core c sends chunk
//      (c - s) mod N to core c + 1 (a COPY over the interconnect into a receive slot), which adds
//      it to its own chunk on its vector unit (bf16 in, fp32 add, bf16 out). After N - 1 steps
//      core c holds the whole sum of chunk (c + 1) mod N;
//   3. each core stores the chunk it completed to the tensor's reduced copy off chip (where the
//      optimizer's update reads it, compiler/lowering/optimizer_update.hpp, or the host's);
//   4. all-gather, steps s = 0 .. N-2: core c sends chunk (c + 1 - s) mod N to core c + 1, into
//      the same place of its buffer: every core ends with the whole sum.
// Each core sends 2 (N - 1) chunks, 2 (N - 1) / N of the tensor; the links carry 2 (N - 1) times
// the tensor in all. Chunk k's sum is ((p_k + p_(k+1)) + p_(k+2)) + ... + p_(k+N-1), cores
// modulo N, rounded to bf16 after each add (ring_sum_bf16 computes the same on the host).
//
// The all-reduce starts when the program before it has ended on every core (every instruction
// without another dependency inside it waits for each unit's last instruction): the whole unified
// buffer is free then. Overlapping it with the backward pass is not built.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "arch/hw_config.hpp"
#include "arch/program.hpp"

namespace npusim {

struct AllReduceSummary {
  uint64_t tensor_bytes = 0;  // of the tensors reduced, once
  uint64_t link_bytes = 0;    // copied over the interconnect, all cores together
  uint64_t max_core_link_bytes = 0;
  uint64_t dram_read_bytes = 0, dram_write_bytes = 0;
  std::vector<size_t> reduced_outputs;  // per tensor, its index in Program::outputs
};

// Appends to `p` (a data-parallel program over p.cores cores whose outputs `outputs` have one
// off-chip part per core, one sample each) one layer record per tensor, named "allreduce <name>",
// with the instructions above, and one output per tensor, "<name>.allreduced": the sum, one
// sample, off chip in new space at the top of p's off-chip memory.
AllReduceSummary append_ring_allreduce(Program& p, const HwConfig& hw,
                                       const std::vector<size_t>& outputs);

// The ring's sum of `parts` (N partial tensors of bf16 bits, equal sizes) with the chunks of
// append_ring_allreduce, rounded as the vector unit rounds: the bits the all-reduce stores.
std::vector<uint16_t> ring_sum_bf16(const std::vector<std::vector<uint16_t>>& parts,
                                    uint64_t piece_bytes);

// The largest piece of a tensor the all-reduce reduces at once on `hw` (fits the unified buffer
// with its receive slots).
uint64_t allreduce_piece_bytes(const HwConfig& hw);

}  // namespace npusim
