// A compiled program: the instruction stream plus where every tensor lives in off-chip memory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "arch/isa.hpp"

namespace npusim {

// A tensor of `batch` NHWC samples in off-chip memory, int8 with a real-value scale.
struct TensorPlacement {
  std::string name;
  uint64_t dram_addr = 0;
  int batch = 1;
  int h = 1, w = 1, c = 1;
  float scale = 1.0f;
  uint64_t bytes() const { return uint64_t(batch) * h * w * c; }
};

struct LayerRecord {
  std::string name;
  std::string op;
  uint64_t macs = 0;
  uint32_t first_instruction = 0;  // [first, end) in Program::instructions
  uint32_t end_instruction = 0;
  uint64_t dram_read_bytes = 0;
  uint64_t dram_write_bytes = 0;
  // The least off-chip traffic the layer could have: each input, weight and output byte once.
  uint64_t dram_bytes_lower_bound = 0;
  std::string tiling;  // a line describing the chosen tiles, for reports and assembly
};

struct DramSegment {
  uint64_t addr = 0;
  std::vector<uint8_t> bytes;
};

struct Program {
  std::string network;
  int batch = 1;
  int matrix_units = 1;
  std::vector<Instruction> instructions;
  std::vector<LayerRecord> layers;
  std::vector<DramSegment> dram_init;  // weights and biases
  uint64_t dram_bytes = 0;             // size of the off-chip address space used
  TensorPlacement input;
  std::vector<TensorPlacement> outputs;
  uint64_t total_macs = 0;
};

// The whole program as readable assembly with one section per layer.
std::string to_assembly(const Program& program);

}  // namespace npusim
