// The hardware description: what a user writes in configs/hw/*.json, validated and with every
// default filled in. docs/hardware_config.md documents each key.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "arch/dram/dram_config.hpp"
#include "arch/fp8.hpp"
#include "arch/types.hpp"

namespace npusim {

constexpr int kHwSchemaVersion = 1;

struct MatrixUnitConfig {
  MatrixUnitKind kind = MatrixUnitKind::kSystolic;
  int rows = 128;  // systolic: PE rows; cube: K0, the reduction depth of one block
  int cols = 128;  // systolic: PE columns; cube: N0, the output columns of one block
  // Systolic only. A cube is tiled like a weight-stationary array (K <= rows and N <= cols per
  // tile, M streams), so a cube keeps kWeightStationary here for the compiler's tiling.
  Dataflow dataflow = Dataflow::kWeightStationary;
  int count = 1;
  bool weight_double_buffer = true;  // systolic only
  // Systolic ws/is only ("weight_load": "wavefront"): a tile's weights shift into a bank row by row
  // as the previous tile's last reads leave each row, not only once the whole bank is read
  // (docs/systolic_array.md). false: "bank", a bank is rewritten only when no PE reads it.
  bool weight_load_wavefront = false;
  int block_m = 16;  // cube only: M0, rows of the activation block per cycle
  // Systolic ws only ("sparsity": "N:M"): the array also runs tiles whose weights have at most N
  // non-zeros in every M consecutive rows, in N slots per M rows (models/systolic/sparsity.hpp).
  // 0: dense only.
  int sparse_n = 0, sparse_m = 0;

  // Multiply-accumulates one unit completes per cycle at full occupancy.
  double macs_per_cycle() const {
    const double plane = static_cast<double>(rows) * cols;
    return kind == MatrixUnitKind::kCube ? plane * block_m : plane;
  }
};

struct VectorUnitConfig {
  int lanes = 128;                  // elements per cycle for simple ops
  int pipeline_latency_cycles = 8;  // from first operand read to first result written
  int transcendental_cycles = 4;    // cycles per lane-group for exp / divide (1 for add, max)
};

// Banks are contiguous: bank b holds bytes [b * capacity / banks, (b + 1) * capacity / banks).
// Each bank has one port; models/onchip_buffers.hpp states the conflict rule.
struct BufferConfig {
  uint64_t capacity_bytes = 0;
  int banks = 1;
  uint64_t bank_bytes() const { return capacity_bytes / static_cast<uint64_t>(banks); }
};

enum class MemoryModel {
  kSimple,  // fixed latency + shared bandwidth (models/offchip_memory.hpp)
  kDram,    // the command-level model of models/dram/ running a memory preset
};
const char* to_string(MemoryModel model);  // "simple", "dram": memory.model in the JSON

// How the "dram" model simulates its preset (docs/memory_system.md, "Memory fidelity").
enum class MemoryFidelity {
  kCommand,  // command level: every burst through the controller (models/dram_memory.hpp)
  kBulk,     // each DMA row timed in closed form from the preset (models/bulk_dram_memory.hpp)
};
const char* to_string(MemoryFidelity fidelity);  // "command", "bulk": memory.fidelity

struct OffChipMemoryConfig {
  MemoryModel model = MemoryModel::kSimple;
  double bandwidth_gbps = 34.0;  // GB/s (10^9 bytes per second); for "dram", the preset's peak
  double latency_ns = 100.0;     // "simple" only
  // Default: 8 GiB for "simple", the preset's capacity (with `channels` applied) for "dram".
  uint64_t capacity_bytes = 8ull << 30;
  std::string preset;                // "dram" only: a configs/memory name or a .json path
  int channels = 0;                  // "dram" only: channels used; 0 keeps the preset's count
  int max_outstanding_bursts = 256;  // "dram" only: bursts in flight per DMA queue
  MemoryFidelity fidelity = MemoryFidelity::kCommand;  // "dram" only
  // DMA instructions (descriptors) in flight per DMA queue (models/dma_engine.hpp); 1: serial.
  int max_outstanding_transfers = 4;
  // "dram" only: the preset resolved while the description was read, `channels` applied and
  // checked against bandwidth_gbps and capacity_bytes.
  std::optional<dram::MemoryConfig> dram;
};

// The on-chip network between the cores of a multi-core chip (docs/multicore.md): COPY
// instructions move unified-buffer bytes over it (models/interconnect_timing.hpp: the timing rule).
enum class Topology { kRing, kCrossbar };
const char* to_string(Topology topology);  // "ring", "crossbar"

struct InterconnectConfig {
  Topology topology = Topology::kRing;
  int link_bytes_per_cycle = 64;  // per link and direction, core clock
  int hop_latency_cycles = 4;     // router + wire per hop
};

// The host CPU of a heterogeneous system (docs/heterogeneous.md): it runs the layers the
// accelerator cannot (or that --host-ops pins to it) from off-chip memory it reaches over a link.
// A layer's time on the host is max(flops / gflops, bytes / memory_gbps); each crossing of the
// link takes latency_ns + bytes / bandwidth_gbps.
enum class HostLinkKind { kPcie, kBandwidth };
struct HostLinkConfig {
  HostLinkKind kind = HostLinkKind::kPcie;
  int pcie_generation = 3;  // kPcie: 3, 4 or 5
  int pcie_lanes = 16;      // kPcie: 1 to 16
  // GB/s per direction: given (kBandwidth) or the PCIe generation's lane rate times lanes.
  double bandwidth_gbps = 0.0;
  double latency_ns = 1000.0;  // per crossing, one direction
};
// GB/s of one PCIe lane per direction after 128b/130b encoding: generation 3, 4, 5.
double pcie_lane_gbps(int generation);

struct HostConfig {
  double gflops = 1300.0;     // 10^9 operations per second
  double memory_gbps = 51.0;  // GB/s
  HostLinkConfig link;
};

struct DataTypeConfig {
  DataType activation = DataType::kInt8;
  DataType weight = DataType::kInt8;
  DataType accumulator = DataType::kInt32;
  // fp8 formats the matrix unit also multiplies (bf16 arrays; --dtype fp8-e4m3 / fp8-e5m2,
  // docs/quantization.md): "fp8": ["e4m3", "e5m2"]. Empty: none.
  std::vector<Fp8Format> fp8;
  bool has_fp8(Fp8Format f) const;
};

struct HwConfig {
  std::string origin;  // the file (or configs/hw/<preset>.json) it was read from, for messages
  std::string name;
  std::string description;
  std::string source;
  double clock_mhz = 700.0;
  // Copies of the core below (matrix units, vector unit, buffers, DMA queues) sharing the
  // off-chip memory; every per-unit figure of this struct is per core.
  int cores = 1;
  InterconnectConfig interconnect;
  // CMOS node of the chip, nm: picks configs/energy/<n>nm.json (docs/power.md).
  int technology_nm = 28;
  MatrixUnitConfig matrix_unit;
  VectorUnitConfig vector_unit;
  BufferConfig unified_buffer{24ull << 20, 16};
  BufferConfig weight_buffer{256ull << 10, 4};
  BufferConfig accumulators{4ull << 20, 8};
  OffChipMemoryConfig memory;
  DataTypeConfig data_types;
  std::optional<HostConfig> host;  // none: no host, every layer runs on the accelerator

  // Derived figures.
  double cycle_time_ns() const { return 1000.0 / clock_mhz; }
  double memory_bytes_per_cycle() const { return memory.bandwidth_gbps / (clock_mhz * 1e-3); }
  uint64_t memory_latency_cycles() const;
  // One core's peak.
  double peak_macs_per_cycle() const { return matrix_unit.macs_per_cycle() * matrix_unit.count; }
  double chip_peak_macs_per_cycle() const { return peak_macs_per_cycle() * cores; }
};

// Validates a parsed description, the memory preset it names included; every problem is reported
// at once (UserErrors) as "<origin>: /json/pointer: what was expected".
HwConfig parse_hw_config(const nlohmann::json& root, const std::string& origin);
// `spec` is a preset name or a path to a JSON file (support/presets.hpp).
HwConfig load_hw_config(const std::string& spec);
// The resolved description, every default filled in; parse_hw_config(to_json(c)) == c.
nlohmann::json to_json(const HwConfig& config);

}  // namespace npusim
