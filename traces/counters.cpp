#include "traces/counters.hpp"

#include <algorithm>
#include <cmath>
#include <variant>

#include "support/error.hpp"

namespace npusim::traces {

namespace {

using timeline::InstructionRecord;
using timeline::Timeline;
using timeline::TrackKind;

// Adds `weight` x (cycles of [start, end) inside each window) to `acc`.
void spread(std::vector<double>& acc, uint64_t window, uint64_t start, uint64_t end,
            double weight) {
  for (uint64_t w = start / window; start < end && w < acc.size(); ++w) {
    const uint64_t hi = std::min(end, (w + 1) * window);
    acc[w] += weight * double(hi - start);
    start = hi;
  }
}

// Bytes instruction `instr` writes into `buffer`, 0 if none.
uint64_t bytes_written(const Instruction& instr, BufferId buffer, uint64_t eb) {
  if (const auto* d = std::get_if<DmaOp>(&instr.op)) {
    if (instr.unit != UnitKind::kDmaLoad || d->buffer != buffer) return 0;
    return d->format != WeightFormat::kDense ? d->buffer_bytes() : d->bytes();
  }
  if (buffer != BufferId::kUnified) return 0;
  if (const auto* o = std::get_if<RequantOp>(&instr.op)) return uint64_t(o->m) * o->n * eb;
  if (const auto* o = std::get_if<PoolOp>(&instr.op)) {
    return uint64_t(o->out_h) * o->out_w * o->c * eb;
  }
  if (const auto* o = std::get_if<SoftmaxOp>(&instr.op)) return uint64_t(o->rows) * o->length * eb;
  if (const auto* o = std::get_if<LayerNormOp>(&instr.op)) {
    return uint64_t(o->rows) * o->length * eb;
  }
  if (const auto* o = std::get_if<LutOp>(&instr.op)) return o->elements * eb;
  if (const auto* o = std::get_if<EltwiseOp>(&instr.op)) return uint64_t(o->rows) * o->cols * eb;
  if (const auto* o = std::get_if<Fp32Op>(&instr.op)) {
    return uint64_t(o->rows) * o->cols * uint64_t(o->out_bytes());
  }
  return 0;
}

}  // namespace

uint64_t counter_window_cycles(uint64_t total_cycles) {
  const uint64_t b = Timeline::kBucketCycles;
  const uint64_t buckets = (total_cycles / 400 + b - 1) / b;
  return std::max<uint64_t>(1, buckets) * b;
}

uint64_t cycle_to_ns(const Timeline& timeline, uint64_t cycle) {
  const uint64_t period_ps = uint64_t(std::llround(1e6 / timeline.clock_mhz()));
  return (cycle * period_ps + 500) / 1000;
}

std::vector<Series> counter_series(const Timeline& timeline, const Program& program,
                                   uint64_t total_cycles, uint64_t window_cycles) {
  NPUSIM_CHECK(window_cycles > 0 && window_cycles % Timeline::kBucketCycles == 0,
               "trace counters: window of {} cycles", window_cycles);
  const size_t windows = size_t((total_cycles + window_cycles - 1) / window_cycles);
  const auto window_len = [&](size_t w) {
    return double(std::min<uint64_t>(total_cycles, (w + 1) * window_cycles) - w * window_cycles);
  };
  const auto& rec = timeline.instructions();
  NPUSIM_CHECK(rec.size() == program.instructions.size(),
               "trace counters: {} recorded instructions, the program has {}", rec.size(),
               program.instructions.size());
  for (size_t i = 0; i < rec.size(); ++i) {
    NPUSIM_CHECK(rec[i].track != InstructionRecord::kNone && rec[i].start <= rec[i].end,
                 "trace counters: instruction {} was not recorded", i);
  }
  std::vector<Series> out;
  if (windows == 0) return out;
  const auto& tracks = timeline.tracks();
  const double ns_per_cycle = 1e3 / timeline.clock_mhz();

  for (uint32_t t = 0; t < tracks.size(); ++t) {
    if (tracks[t].kind != TrackKind::kMemoryChannel) continue;
    Series s{tracks[t].name + " bandwidth", "GB/s", std::vector<double>(windows, 0.0)};
    const auto& buckets = timeline.memory_buckets(t);
    const uint64_t per_window = window_cycles / Timeline::kBucketCycles;
    for (size_t b = 0; b < buckets.size(); ++b) {
      s.values[std::min(windows - 1, size_t(b / per_window))] += double(buckets[b]);
    }
    for (size_t w = 0; w < windows; ++w) s.values[w] /= window_len(w) * ns_per_cycle;  // B/ns
    out.push_back(std::move(s));
  }

  // Instructions of each unit in start order; their union per window.
  std::vector<std::vector<uint32_t>> by_track(tracks.size());
  for (uint32_t i = 0; i < rec.size(); ++i) by_track[rec[i].track].push_back(i);
  for (uint32_t t = 0; t < tracks.size(); ++t) {
    const TrackKind k = tracks[t].kind;
    if (k == TrackKind::kMemoryChannel || k == TrackKind::kBursts) continue;
    auto& ids = by_track[t];
    std::sort(ids.begin(), ids.end(),
              [&](uint32_t a, uint32_t b) { return rec[a].start < rec[b].start; });
    Series s{tracks[t].name + " utilization", "%", std::vector<double>(windows, 0.0)};
    uint64_t covered = 0;
    for (uint32_t i : ids) {
      const uint64_t lo = std::max(covered, rec[i].start);
      if (rec[i].end > lo) spread(s.values, window_cycles, lo, rec[i].end, 1.0);
      covered = std::max(covered, rec[i].end);
    }
    for (size_t w = 0; w < windows; ++w) s.values[w] *= 100.0 / window_len(w);
    out.push_back(std::move(s));
  }

  std::vector<uint64_t> last_use(rec.size());
  for (size_t i = 0; i < rec.size(); ++i) last_use[i] = rec[i].end;
  for (const Instruction& instr : program.instructions) {
    for (uint32_t d : instr.deps) last_use[d] = std::max(last_use[d], rec[instr.id].end);
  }
  const uint64_t eb = program.dtype == DataType::kBf16 ? 2 : 1;
  for (const auto& [buffer, name] : {std::pair{BufferId::kUnified, "unified buffer in use"},
                                     std::pair{BufferId::kWeight, "weight buffer in use"}}) {
    Series s{name, "bytes", std::vector<double>(windows, 0.0)};
    for (const Instruction& instr : program.instructions) {
      const uint64_t bytes = bytes_written(instr, buffer, eb);
      if (bytes > 0)
        spread(s.values, window_cycles, rec[instr.id].start, last_use[instr.id], double(bytes));
    }
    for (size_t w = 0; w < windows; ++w) s.values[w] /= window_len(w);
    out.push_back(std::move(s));
  }

  const std::vector<double>& energy = timeline.instruction_energy_pj();
  if (!energy.empty()) {
    NPUSIM_CHECK(energy.size() == rec.size(), "trace counters: {} instruction energies, {} records",
                 energy.size(), rec.size());
    Series s{"power", "W", std::vector<double>(windows, 0.0)};
    for (size_t i = 0; i < rec.size(); ++i) {
      const uint64_t end = std::max(rec[i].end, rec[i].start + 1);
      spread(s.values, window_cycles, rec[i].start, end, energy[i] / double(end - rec[i].start));
    }
    for (size_t w = 0; w < windows; ++w) {
      s.values[w] =
          s.values[w] / window_len(w) * timeline.clock_mhz() * 1e-6 + timeline.constant_power_w();
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace npusim::traces
