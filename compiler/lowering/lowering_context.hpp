// The state of one lowering run (compiler/lowering/lowering.hpp), shared by the files that emit
// each kind of layer: the program being built, the off-chip memory plan, the hazard tracker.
#pragma once

#include <compare>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "arch/hw_config.hpp"
#include "arch/program.hpp"
#include "compiler/ir/graph.hpp"
#include "compiler/lowering/hazards.hpp"
#include "compiler/lowering/lowering.hpp"
#include "compiler/lowering/tiling_math.hpp"
#include "compiler/lowering/ub_allocator.hpp"

namespace npusim::lowering {

// Elements of the layer's int8 or bf16 weight tensor (an embedding's table included) as the
// program lays it out. A timing-only compile leaves a matrix layer's weights empty
// (quantize_graph_for_timing, prepare_bf16 without weights): then reduction x filters, the size
// they would have.
inline uint64_t weight_elements(const Layer& l) {
  if (!l.qweights.empty() || !l.bf16_weights.empty()) {
    return l.qweights.size() + l.bf16_weights.size();
  }
  return l.has_weights() ? l.reduction() * uint64_t(l.filters) : 0;
}

// The vector-unit operation of a pool / add / mul layer, addresses and sizes left to the caller
// (the separate layer or a fused epilogue stage). `table`: the program's activation table or -1.
PoolOp pool_op(const Layer& l);
EltwiseOp eltwise_op(const Layer& l, int table);

// A box of a matrix layer's weights the lowering loads: rows [kc0, kc0 + k_cb) and columns
// [n0, n0 + n_cb) of the [reduction][ld] weight matrix.
struct WeightBox {
  int kc0 = 0, k_cb = 0, n0 = 0, n_cb = 0, ld = 0;
  auto operator<=>(const WeightBox&) const = default;
};
// Per layer marked compress_weights, the boxes its weights are loaded in, in order of first use.
using WeightBoxes = std::map<std::string, std::vector<WeightBox>>;

// A move whose operands may be resident in the unified buffer (memory_plan.cpp): not an
// embedding (its table and ids are off chip) nor a DMA transpose (compiler/ir/backward_rules.hpp).
bool resident_move(const Layer& l);

class Lowering {
 public:
  // Compressed weights (Layer::compress_weights, compiler/lowering/weight_compression.cpp) take
  // two runs: the first, with `boxes` and !compress, records the boxes each such layer loads (its
  // weights stay dense); the second, with the same boxes and `compress`, stores each layer's boxes
  // compressed off chip when that takes fewer bytes. The tiling does not depend on it, so both
  // runs load the same boxes.
  Lowering(const Graph& graph, const HwConfig& hw, const std::vector<LayerSplit>& splits,
           WeightBoxes* boxes = nullptr, bool compress = false)
      : graph_(graph),
        hw_(hw),
        es_(graph.dtype == DataType::kBf16 ? 2 : 1),
        splits_(splits),
        boxes_(boxes),
        compress_(compress) {}

  CompileResult run();
  int failed_layer() const { return failed_layer_; }
  // Moves copy between off-chip tensors only: their operands are never resident (the plan
  // compile() weighs against the one with resident moves, lowering.cpp).
  Lowering& keep_moves_off_chip() {
    moves_off_chip_ = true;
    return *this;
  }

 private:
  uint32_t emit(UnitKind unit, int index, Operation op, std::vector<BufferAccess> accesses);
  uint64_t dram_alloc(uint64_t bytes) {
    uint64_t addr = dram_top_;
    dram_top_ = align_up(dram_top_ + bytes, 4096);
    return addr;
  }
  // A parameter segment of `bytes` bytes; `data` null: its contents were not kept (a timing-only
  // compile, weight_elements()), the segment has its size and no bytes.
  uint64_t dram_param(const void* data, uint64_t bytes) {
    const uint64_t addr = dram_alloc(bytes);
    DramSegment seg{addr, {}};
    if (data == nullptr) {
      seg.timing_only_bytes = bytes;
    } else {
      seg.bytes.resize(bytes);
      std::memcpy(seg.bytes.data(), data, bytes);
    }
    program_.dram_init.push_back(std::move(seg));
    return addr;
  }
  // A 1-D or 2-D copy (count1 rows of count0 bytes, DRAM rows stride0 apart); `unpack_int4`: a
  // load of packed int4 weights, twice the bytes in the buffer (DmaOp::unpack_int4).
  void dma(UnitKind unit, BufferId buffer, uint64_t buffer_addr, uint64_t dram_addr,
           uint64_t count0, uint64_t count1, uint64_t stride0, bool transpose = false,
           bool unpack_int4 = false);
  // The DmaOp of such a 2-D box, its counts checked (dma() emits it; an indexed load starts from
  // it).
  DmaOp dma_op(BufferId buffer, uint64_t buffer_addr, uint64_t dram_addr, uint64_t count0,
               uint64_t count1, uint64_t stride0, bool transpose = false) const;
  // A 3-D box of the unified buffer (packed) to or from DRAM (compiler/lowering/move_lowering.cpp).
  void dma_box(UnitKind unit, uint64_t ub_addr, uint64_t dram_addr, const uint32_t (&count)[3],
               const uint64_t (&stride)[2]);
  // A packed 1-D copy of any size, split into rows the DMA descriptor can hold.
  void dma_linear(UnitKind unit, uint64_t ub_addr, uint64_t dram_addr, uint64_t bytes);
  int requant_table(std::vector<QuantMultiplier> table) {
    program_.requant_tables.push_back(std::move(table));
    return static_cast<int>(program_.requant_tables.size() - 1);
  }
  int lut(const std::vector<int8_t>& table) {
    if (table.empty()) return -1;
    program_.luts.push_back(table);
    return static_cast<int>(program_.luts.size() - 1);
  }
  bool fail(std::string reason) {
    if (reason_.empty()) reason_ = std::move(reason);
    return false;
  }
  // The current layer's scratch range of the unified buffer (compiler/lowering/memory_plan.cpp).
  uint64_t ub_capacity() const { return scratch_.at(layer_index_).bytes(); }
  uint64_t scratch_base() const { return scratch_.at(layer_index_).begin; }
  // Whether a tensor stays in the unified buffer, and where (ub_addr) or off chip (dram_addr).
  bool resident(const std::string& name) const { return ub_addr_.count(name) > 0; }
  uint64_t ub_addr(const std::string& name) const { return ub_addr_.at(name); }
  uint64_t dram_addr(const std::string& name) const { return tensor_addr_.at(name); }

  // The cores layer i of the graph runs on (tensor_parallel.hpp): 1 is one core, layer_core(i).
  int layer_cores(size_t i) const { return i < splits_.size() ? splits_[i].cores : 1; }
  int layer_core(size_t i) const { return i < splits_.size() ? splits_[i].core : 0; }
  // Before layer l runs on core_: a COPY over the interconnect of each input resident in another
  // core's unified buffer into the same range of core_'s (LayerSplit), once per tensor and core.
  void copy_resident_inputs(const Layer& l);
  // Bytes per input element: 4 for int32 ids (Graph::input_ids), else es_.
  int input_element_bytes() const { return graph_.input_ids ? 4 : es_; }
  bool plan_memory();  // false (with reason_) when the network does not fit off-chip memory
  // Stores l's weights compressed off chip if that is smaller (the second run); true if it did.
  bool plan_compressed_weights(const Layer& l);
  // int4 weights with scales off chip: group scales of an int8 run (--weight-group), bf16 scales
  // of a bf16 run (W4A16, per group or per channel).
  void plan_int4_groups(const Layer& l);
  void plan_fp8_weights(const Layer& l);  // fp8 weights (--dtype fp8-*), one byte a weight
  // Loads box b of l's weights into the weight buffer at wb from their compressed store and
  // returns true; false if l's weights are dense (the caller loads them), recording b in the first
  // run.
  bool load_compressed_weights(const Layer& l, uint64_t wb, const WeightBox& b);
  // Off-chip bytes of l's weights as stored (dense, int4 or compressed).
  uint64_t stored_weight_bytes(const Layer& l) const;
  void plan_unified_buffer();
  // Scratch the layer needs at least, given which tensors are resident.
  uint64_t scratch_min(const Layer& l, const std::function<bool(const std::string&)>& res) const;
  // How many of the fused residual operands of l's epilogue are resident.
  static int resident_residuals(const Layer& l, const std::function<bool(const std::string&)>& res);
  TensorPlacement placement(const std::string& name) const;
  // The layer that writes `tensor`, or null for the graph input (Graph::producer without its scan
  // of every layer: producer_ is built once per lowering).
  const Layer* producer(const std::string& tensor) const {
    const auto it = producer_.find(tensor);
    return it == producer_.end() ? nullptr : it->second;
  }
  TensorShape shape_of(const std::string& tensor) const {
    const Layer* p = producer(tensor);
    return p ? p->last_stage().out_shape : graph_.input_shape;
  }
  bool lower_layer(const Layer& l);
  class MatrixLayer;  // compiler/lowering/matrix_lowering.cpp
  bool lower_matrix(const Layer& l, LayerRecord& rec);
  bool lower_pool(const Layer& l, LayerRecord& rec);
  bool lower_rows(const Layer& l, LayerRecord& rec);
  bool lower_eltwise(const Layer& l, LayerRecord& rec);
  bool lower_concat(const Layer& l, LayerRecord& rec);
  bool lower_move(const Layer& l, LayerRecord& rec);
  bool lower_transpose_move(const Layer& l, LayerRecord& rec, uint64_t slot);
  void lower_host(const Layer& l, LayerRecord& rec);       // compiler/lowering/host_lowering.cpp
  bool lower_embedding(const Layer& l, LayerRecord& rec);  // compiler/lowering/move_lowering.cpp

  const Graph& graph_;
  const HwConfig& hw_;
  const int es_;  // bytes per activation / weight element
  Program program_;
  HazardTracker hazards_;
  const std::vector<LayerSplit>& splits_;
  int core_ = 0;  // the core emit() puts instructions on
  LayerRecord* current_ = nullptr;
  uint64_t dram_top_ = 0;
  std::map<std::string, const Layer*> producer_;     // per tensor: the layer writing it
  std::map<std::string, uint64_t> tensor_addr_;      // tensors off chip
  std::map<std::string, uint64_t> ub_addr_;          // tensors resident in the unified buffer
  std::map<std::string, std::pair<int, int>> live_;  // per tensor: first and last layer
  std::vector<UbRange> scratch_;                     // per layer
  // Per tensor: the core whose layer wrote it, and the tensor whose bytes it is (a free op's
  // output is its input's); the (tensor, core) pairs a COPY brought to another core.
  std::map<std::string, int> tensor_core_;
  std::map<std::string, std::string> root_;
  std::set<std::pair<std::string, int>> copied_;
  int layer_index_ = 0;
  struct Params {
    uint64_t weights = 0, bias = 0, norm = 0;
  };
  std::map<std::string, Params> params_;
  int weight_half_ = 0;  // resident weights alternate between the halves of the weight buffer
  WeightBoxes* boxes_;
  bool compress_;
  bool moves_off_chip_ = false;
  struct StoredBox {
    uint64_t addr = 0, bytes = 0;  // bytes: padded to whole rows of the dense box
    WeightFormat format = WeightFormat::kDense;
  };
  struct CompressedWeights {
    WeightFormat format = WeightFormat::kDense;  // of its boxes that are not stored dense
    uint64_t bytes = 0, dense_bytes = 0;
    std::map<WeightBox, StoredBox> boxes;
  };
  std::map<std::string, CompressedWeights> compressed_;
  std::string reason_;
  int failed_layer_ = -1;
};

}  // namespace npusim::lowering
