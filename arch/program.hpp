// A compiled program: the instruction stream plus where every tensor lives in off-chip memory.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "arch/isa.hpp"
#include "arch/quant.hpp"
#include "arch/types.hpp"

namespace npusim {

// Consecutive samples of a batched tensor stored together: on a data-parallel program each core
// keeps its samples in its own off-chip region, or resident in its own unified buffer (each core's
// copy at ub_addr of that core's buffer).
struct TensorPart {
  uint64_t dram_addr = 0;
  int batch = 0;
  int core = 0;
  BufferId buffer = BufferId::kDram;
  uint64_t ub_addr = 0;
  // The LayerRecord whose instructions write this part, when it is not the tensor's first_layer: a
  // pipeline has one record per micro-batch and layer, and a core's micro-batches of a resident
  // tensor take turns at the same ub_addr (compiler/lowering/pipeline_parallel.hpp). -1:
  // first_layer.
  int layer = -1;
};

// A tensor of `batch` channels-last samples, int8 (or bf16) with a real-value scale, in off-chip
// memory or resident in the unified buffer for its live range. Without `parts` the samples lie
// contiguously at dram_addr (or ub_addr of core 0); with them, part by part in sample order
// (dram_addr, buffer and ub_addr are then the first part's).
struct TensorPlacement {
  std::string name;
  BufferId buffer = BufferId::kDram;  // kUnified: at ub_addr from first_layer to last_layer
  uint64_t dram_addr = 0;
  uint64_t ub_addr = 0;
  // Live range: the layer that writes it (-1: the graph input) to the last layer that reads it.
  int first_layer = -1, last_layer = -1;
  int batch = 1;
  std::vector<int> dims;  // one sample
  float scale = 1.0f;
  int element_bytes = 1;
  uint64_t elements() const {
    uint64_t n = static_cast<uint64_t>(batch);
    for (int d : dims) n *= static_cast<uint64_t>(d);
    return n;
  }
  uint64_t bytes() const { return elements() * element_bytes; }
  uint64_t sample_bytes() const { return batch == 0 ? 0 : bytes() / static_cast<uint64_t>(batch); }
  std::vector<TensorPart> parts;
};

// The tensor's bytes in sample order, gathered from its parts: off chip from `memory` (off-chip
// contents), resident in core c's unified buffer from resident(c, p) (that core's captured copy of
// part p of t.parts, or of the whole tensor when it has no parts and p is 0,
// models/tensor_shadows.hpp), which is required when a part is resident.
std::vector<uint8_t> read_tensor(
    const TensorPlacement& t, const uint8_t* memory,
    const std::function<const uint8_t*(int core, size_t part)>& resident = {});
// Core `core`'s part of `t` (a tensor without parts is core 0's, whole); batch 0 when the core
// holds none of its samples.
TensorPart part_on_core(const TensorPlacement& t, int core);
// Stores `bytes` (the whole batch, sample order) into its parts in `memory`.
void write_tensor(const TensorPlacement& t, const std::vector<uint8_t>& bytes, uint8_t* memory);

struct LayerRecord {
  std::string name;
  std::string op;
  std::string fused;  // layers folded or fused into this one, comma-separated
  uint64_t macs = 0;
  uint32_t first_instruction = 0;  // [first, end) in Program::instructions
  uint32_t end_instruction = 0;
  uint64_t dram_read_bytes = 0;
  uint64_t dram_write_bytes = 0;
  // The least off-chip traffic the layer could have: each input, weight and output byte once.
  uint64_t dram_bytes_lower_bound = 0;
  std::string tiling;  // a line describing the chosen tiles, for reports and assembly
  // Run by the host CPU (docs/heterogeneous.md): its inputs and output cross the link, link_bytes
  // in both directions together.
  bool on_host = false;
  uint64_t link_bytes = 0;
  // The cores its instructions run on, and how it was spread over them (docs/multicore.md):
  // "core 0", "data", "tensor" (its output channels split over `cores` cores), with the estimate
  // behind an `auto` choice.
  int cores = 1;
  std::string parallel = "core 0";
};

struct DramSegment {
  uint64_t addr = 0;
  std::vector<uint8_t> bytes;
  // A program compiled for timing only (--values off) keeps no weight contents: such a segment
  // has empty `bytes` and occupies `timing_only_bytes`, which nothing reads (docs/performance.md).
  uint64_t timing_only_bytes = 0;
  uint64_t size() const { return bytes.empty() ? timing_only_bytes : bytes.size(); }
  bool has_contents() const { return timing_only_bytes == 0; }
};

struct Program {
  std::string network;
  DataType dtype = DataType::kInt8;  // activations and weights: int8 or bf16
  int batch = 1;
  int matrix_units = 1;  // per core
  int cores = 1;         // cores the instructions run on (Instruction::core < cores)
  // How the work was spread over the cores: "single core" or "data parallel: ..."
  // (compiler/lowering/data_parallel.hpp).
  std::string parallel = "single core";
  // A pipeline's stages, one line each (compiler/lowering/pipeline_parallel.hpp); printed by
  // `npusim compile`.
  std::vector<std::string> parallel_stages;
  std::vector<Instruction> instructions;
  std::vector<LayerRecord> layers;
  std::vector<DramSegment> dram_init;  // weights and biases
  uint64_t dram_bytes = 0;             // size of the off-chip address space used
  TensorPlacement input;
  std::vector<TensorPlacement> outputs;
  std::vector<TensorPlacement> tensors;  // every layer's output, in layer order
  // The vector unit's parameter registers: per-channel requantization multipliers and int8
  // tables, referenced by index from REQUANT, LUT and ELTWISE instructions.
  std::vector<std::vector<QuantMultiplier>> requant_tables;
  std::vector<std::vector<int8_t>> luts;
  uint64_t total_macs = 0;
};

// Per tensor: where it lives (unified-buffer or off-chip range) and its live range, one line each.
std::string memory_plan(const Program& program);
// The whole program as readable assembly: the memory plan, then one section per layer.
std::string to_assembly(const Program& program);
// "instruction 17 (MATMUL on matrix0, layer conv1)": how messages name an instruction.
std::string describe_instruction(const Program& p, uint32_t id);

}  // namespace npusim
