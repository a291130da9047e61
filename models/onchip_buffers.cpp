#include "models/onchip_buffers.hpp"

#include <algorithm>

#include "models/scoreboard.hpp"
#include "support/error.hpp"

namespace npusim {

namespace {
void init(ZeroedBytes& data, uint64_t& bank_bytes, int& banks, const BufferConfig& c) {
  data.resize(c.capacity_bytes);
  banks = c.banks;
  bank_bytes = c.bank_bytes();
}
}  // namespace

OnChipBuffers::OnChipBuffers(const HwConfig& hw) {
  init(unified_.data, unified_.bank_bytes, unified_.banks, hw.unified_buffer);
  init(weight_.data, weight_.bank_bytes, weight_.banks, hw.weight_buffer);
  init(accumulators_.data, accumulators_.bank_bytes, accumulators_.banks, hw.accumulators);
}

void OnChipBuffers::track_conflicts(const Program* program, const Scoreboard* scoreboard,
                                    const CoreClock* clock) {
  program_ = program;
  scoreboard_ = scoreboard;
  clock_ = clock;
}

OnChipBuffers::Buffer& OnChipBuffers::slot(BufferId id) {
  switch (id) {
    case BufferId::kUnified:
      return unified_;
    case BufferId::kWeight:
      return weight_;
    case BufferId::kAccumulator:
      return accumulators_;
    case BufferId::kDram:
      break;
  }
  NPUSIM_CHECK(false, "off-chip memory is not an on-chip buffer");
  return unified_;
}

uint64_t OnChipBuffers::capacity(BufferId id) const { return slot(id).data.size(); }
int OnChipBuffers::banks(BufferId id) const { return slot(id).banks; }

uint8_t* OnChipBuffers::bytes(BufferId id, uint64_t addr, uint64_t size, uint32_t instruction) {
  Buffer& b = slot(id);
  NPUSIM_CHECK(addr <= b.data.size() && size <= b.data.size() - addr,
               "instruction {} accesses {}[{:#x}, {:#x}) beyond its {} bytes", instruction,
               to_string(id), addr, addr + size, b.data.size());
  if (program_ != nullptr && size > 0 && instruction < program_->instructions.size()) {
    const UnitKind unit = program_->instructions[instruction].unit;
    if (unit == UnitKind::kMatrix || unit == UnitKind::kVector) {
      prune(b);
      b.uses.push_back({instruction, clock_->now(), uint32_t(addr / b.bank_bytes),
                        uint32_t((addr + size - 1) / b.bank_bytes)});
    }
  }
  return b.data.data() + addr;
}

// A compute instruction cannot complete at cycle 0, so a zero end means "not reported yet".
bool OnChipBuffers::reported(uint32_t instruction) const {
  return scoreboard_->timings()[instruction].end_cycle > 0;
}

void OnChipBuffers::prune(Buffer& b) const {
  // A use whose reported window ended by now holds no bank at any later cycle.
  const uint64_t now = clock_->now();
  while (!b.uses.empty() && reported(b.uses.front().instruction) &&
         scoreboard_->timings()[b.uses.front().instruction].end_cycle <= now) {
    b.uses.pop_front();
  }
}

uint64_t OnChipBuffers::dma_write_conflicts(BufferId id, uint64_t addr, uint64_t size,
                                            uint64_t cycle) {
  Buffer& b = slot(id);
  if (scoreboard_ == nullptr || size == 0 || b.uses.empty()) return 0;
  prune(b);
  const auto& timings = scoreboard_->timings();
  const uint32_t first = uint32_t(addr / b.bank_bytes);
  const uint32_t last = uint32_t((addr + size - 1) / b.bank_bytes);
  uint64_t held = 0;  // bitmask over the burst's banks (a burst spans few banks)
  for (const Use& u : b.uses) {
    if (u.last_bank < first || u.first_bank > last) continue;
    uint64_t start = u.start, end = UINT64_MAX;
    if (reported(u.instruction)) {
      start = timings[u.instruction].start_cycle;
      end = timings[u.instruction].end_cycle;
    }
    if (cycle < start || cycle >= end) continue;
    for (uint32_t k = std::max(first, u.first_bank); k <= std::min(last, u.last_bank); ++k) {
      if (k - first < 64) held |= uint64_t{1} << (k - first);
    }
  }
  const uint64_t extra = uint64_t(__builtin_popcountll(held));
  b.conflicts += extra;
  return extra;
}

}  // namespace npusim
