// The unified-buffer allocator: which activation tensors stay on chip, where, and the scratch range
// each layer gets for its own blocks. Pure arithmetic on live ranges (no graph, no SystemC), so it
// is unit-tested on its own (tests/core/ub_allocator_test.cpp).
//
// A step is one layer in program order. A buffer lives from its first to its last step inclusive
// (an activation: from the layer that writes it to the last layer that reads it). Every step also
// needs a contiguous scratch range of at least scratch_min(step, resident) bytes, which depends on
// which buffers are resident (a layer whose input is off chip needs slabs to load it into).
//
// Placement: the resident buffers and each step's minimal scratch are placed greedily by size, each
// at the lowest offset not used by an already placed item whose live range overlaps. When an item
// does not fit, one spillable buffer live during that item's steps moves off chip: the one whose
// residency saves the fewest off-chip bytes per byte of buffer per step it occupies
// (traffic_saved / (bytes x steps)), the largest on ties; then placement starts over. Once all fit,
// each step's scratch grows to the largest free range at that step (the tiler then has as much room
// as the buffer allows).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace npusim::lowering {

struct UbBuffer {
  uint64_t bytes = 0;
  int first = 0, last = 0;     // live steps, inclusive
  bool may_reside = true;      // false: off chip by rule (graph input / outputs, ...)
  uint64_t traffic_saved = 0;  // off-chip bytes its residency saves
};

struct UbRange {
  uint64_t begin = 0, end = 0;  // bytes, end exclusive
  uint64_t bytes() const { return end - begin; }
};

struct UbPlan {
  bool ok = false;                              // false: even the minimal scratch does not fit
  int failed_step = -1;                         // when !ok: the step whose scratch did not fit
  std::vector<std::optional<uint64_t>> offset;  // per buffer: its address, or off chip
  std::vector<UbRange> scratch;                 // per step
  int spills = 0;                               // buffers moved off chip to make room
};

using ScratchNeed = std::function<uint64_t(int step, const std::vector<bool>& resident)>;

// `alignment` applies to every offset and size.
UbPlan plan_unified_buffer(uint64_t capacity, int steps, const std::vector<UbBuffer>& buffers,
                           const ScratchNeed& scratch_min, uint64_t alignment = 64);

// Always-on check of a plan: no two resident buffers with overlapping live ranges overlap in
// bytes, none crosses the capacity, and each step's scratch overlaps no buffer live at that step.
// Returns a description of the first violation, or empty.
std::string check_ub_plan(uint64_t capacity, const std::vector<UbBuffer>& buffers,
                          const UbPlan& plan);

}  // namespace npusim::lowering
