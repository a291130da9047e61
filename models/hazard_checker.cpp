#include "models/hazard_checker.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <memory_resource>
#include <variant>

#include "support/error.hpp"

namespace npusim {

namespace {

struct Extents {
  std::vector<Access>& out;
  int eb;  // bytes per unified-buffer element: 1 (int8) or 2 (bf16)
  void add(BufferId space, uint64_t begin, uint64_t bytes, bool write, int core = -1) const {
    if (bytes == 0) return;
    // Emplace, then assign: GCC 12 warns falsely (-Wstringop-overflow) on push_back({...}) here.
    Access& a = out.emplace_back();
    a = {space, begin, begin + bytes, write, core};
  }
  // rows x cols elements with a row pitch of `ld` elements, as one span.
  static uint64_t span(int rows, int cols, int ld) {
    return rows <= 0 || cols <= 0 ? 0 : uint64_t(rows - 1) * uint64_t(ld) + uint64_t(cols);
  }
};

struct AccessVisitor {
  const Instruction& instr;
  Extents x;
  void operator()(const DmaOp& d) const {
    const bool load = instr.unit == UnitKind::kDmaLoad;
    x.add(d.buffer, d.buffer_addr, d.buffer_bytes(), load);
    if (d.indexed) {  // the ids, then any row of the table
      x.add(BufferId::kDram, d.index_addr, d.index_bytes(), false);
      if (d.index_rows > 0) {
        x.add(BufferId::kDram, d.dram_addr,
              uint64_t(d.index_rows - 1) * d.dram_stride[0] + d.count[0], false);
      }
      return;
    }
    // The off-chip side, row by row, contiguous rows merged.
    uint64_t run_begin = 0, run_end = 0;
    bool open = false;
    for (uint32_t i2 = 0; i2 < d.count[2] && d.count[0] > 0; ++i2) {
      for (uint32_t i1 = 0; i1 < d.count[1]; ++i1) {
        const uint64_t row = d.dram_addr + i2 * d.dram_stride[1] + i1 * d.dram_stride[0];
        if (open && row == run_end) {
          run_end += d.count[0];
          continue;
        }
        if (open) x.add(BufferId::kDram, run_begin, run_end - run_begin, !load);
        run_begin = row;
        run_end = row + d.count[0];
        open = true;
      }
    }
    if (open) x.add(BufferId::kDram, run_begin, run_end - run_begin, !load);
  }
  void operator()(const MatmulOp& m) const {
    const ActivationView& v = m.a;
    x.add(BufferId::kUnified, v.ub_addr, uint64_t(v.slab_d) * v.slab_h * v.slab_w * v.slab_c * x.eb,
          false);
    x.add(BufferId::kWeight, m.wb_addr, Extents::span(m.k, m.n, m.w_ld) * x.eb, false);
    const uint64_t acc = Extents::span(m.m, m.n, m.acc_ld) * 4;
    if (m.accumulate) x.add(BufferId::kAccumulator, m.acc_addr, acc, false);
    x.add(BufferId::kAccumulator, m.acc_addr, acc, true);
  }
  void operator()(const RequantOp& r) const {
    x.add(BufferId::kAccumulator, r.acc_addr, Extents::span(r.m, r.n, r.acc_ld) * 4, false);
    if (r.has_bias) x.add(BufferId::kUnified, r.bias_ub_addr, uint64_t(r.n) * 4, false);
    x.add(BufferId::kUnified, r.out_ub_addr, Extents::span(r.m, r.n, r.out_ld) * x.eb, true);
  }
  void operator()(const PoolOp& p) const {
    x.add(BufferId::kUnified, p.in_ub_addr, uint64_t(p.slab_d) * p.slab_h * p.slab_w * p.c * x.eb,
          false);
    x.add(BufferId::kUnified, p.out_ub_addr, p.out_span() * x.eb, true);
  }
  void operator()(const SoftmaxOp& s) const {
    const uint64_t n = uint64_t(s.rows) * s.length * x.eb;
    x.add(BufferId::kUnified, s.in_ub_addr, n, false);
    x.add(BufferId::kUnified, s.out_ub_addr, n, true);
  }
  void operator()(const LayerNormOp& l) const {
    const uint64_t n = uint64_t(l.rows) * l.length * x.eb;
    x.add(BufferId::kUnified, l.params_ub_addr, uint64_t(l.length) * 8, false);
    x.add(BufferId::kUnified, l.in_ub_addr, n, false);
    x.add(BufferId::kUnified, l.out_ub_addr, n, true);
  }
  void operator()(const LutOp& l) const {
    x.add(BufferId::kUnified, l.in_ub_addr, l.elements * x.eb, false);
    x.add(BufferId::kUnified, l.out_ub_addr, l.elements * x.eb, true);
  }
  void operator()(const CopyOp& c) const {
    x.add(BufferId::kUnified, c.src_addr, c.bytes, false);
    x.add(BufferId::kUnified, c.dst_addr, c.bytes, true, c.dst_core);
  }
  void operator()(const EltwiseOp& e) const {
    x.add(BufferId::kUnified, e.a_ub_addr, Extents::span(e.rows, e.cols, e.a_ld) * x.eb, false);
    if (e.kind != EltwiseKind::kRescale) {
      x.add(BufferId::kUnified, e.b_ub_addr, Extents::span(e.rows, e.cols, e.b_ld) * x.eb, false);
    }
    x.add(BufferId::kUnified, e.out_ub_addr, Extents::span(e.rows, e.cols, e.out_ld) * x.eb, true);
  }
  void operator()(const Fp32Op& f) const {
    x.add(BufferId::kUnified, f.a_ub_addr, Extents::span(f.rows, f.cols, f.a_ld) * f.a_bytes(),
          false);
    if (f.reads_b()) {
      x.add(BufferId::kUnified, f.b_ub_addr,
            f.b_scalar ? 4 : Extents::span(f.rows, f.cols, f.b_ld) * f.b_bytes(), false);
    }
    x.add(BufferId::kUnified, f.out_ub_addr,
          Extents::span(f.rows, f.cols, f.out_ld) * f.out_bytes(), true);
  }
  void operator()(const HostOp& h) const {
    for (const DramRange& r : h.dram) {
      x.add(BufferId::kDram, r.begin, r.end - r.begin, h.phase == HostPhase::kToDevice);
    }
  }
};

// An access still pending when later instructions come: who, on which unit, until when.
struct Pending {
  uint32_t instruction = 0;
  int unit = 0;
  uint64_t until = 0;  // cycle the access is over: the instruction's completion
};

// The reads of a segment, at most one per unit: a few in place (the common case, one or two
// units), more on the heap. Copying a segment (split) then allocates nothing.
class PendingReads {
 public:
  PendingReads() = default;
  explicit PendingReads(const Pending& p) { push_back(p); }
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  const Pending& operator[](size_t i) const { return data()[i]; }
  void push_back(const Pending& p) {
    if (size_ < kInPlace && more_.empty()) {
      in_place_[size_++] = p;
      return;
    }
    if (more_.empty()) more_.assign(in_place_.begin(), in_place_.begin() + size_);
    more_.push_back(p);
    ++size_;
  }
  // Removes the reads for which `drop` holds, keeping the order of the others.
  template <class Pred>
  void erase_if(Pred drop) {
    Pending* d = data();
    size_t kept = 0;
    for (size_t i = 0; i < size_; ++i) {
      if (!drop(d[i])) d[kept++] = d[i];
    }
    size_ = kept;
    if (!more_.empty()) {
      more_.resize(kept);
      if (kept <= kInPlace) {
        std::copy(more_.begin(), more_.end(), in_place_.begin());
        more_.clear();
      }
    }
  }

 private:
  static constexpr size_t kInPlace = 3;
  Pending* data() { return more_.empty() ? in_place_.data() : more_.data(); }
  const Pending* data() const { return more_.empty() ? in_place_.data() : more_.data(); }
  std::array<Pending, kInPlace> in_place_{};
  size_t size_ = 0;
  std::vector<Pending> more_;  // all of them, once there were more than kInPlace
};

// The pending accesses of bytes [begin, end): the last write (if any) and the reads since, at
// most one per unit (a unit completes in order, so its latest read covers its earlier ones).
struct Segment {
  uint64_t end = 0;
  bool written = false;
  Pending write;
  PendingReads reads;
};

// Disjoint segments of one address space, keyed by their first byte. The map's nodes come from
// a pool shared by the spaces of one check (a segment is split and erased about once per access).
class SegmentMap {
 public:
  using Map = std::pmr::map<uint64_t, Segment>;
  explicit SegmentMap(std::pmr::memory_resource* pool) : map_(pool) {}
  // Splits segments so that `pos` is a segment boundary (if a segment covers it).
  void split(uint64_t pos) {
    auto it = map_.upper_bound(pos);
    if (it == map_.begin()) return;
    --it;
    if (it->first < pos && pos < it->second.end) {
      Segment tail = it->second;
      it->second.end = pos;
      map_.emplace_hint(std::next(it), pos, std::move(tail));
    }
  }
  // The segments overlapping [begin, end), after split(begin) and split(end).
  Map::iterator first(uint64_t begin) {
    auto it = map_.upper_bound(begin);
    if (it != map_.begin() && std::prev(it)->second.end > begin) --it;
    return it;
  }
  Map& map() { return map_; }
  // Forgets the pending accesses over by cycle `horizon`, and the segments left with none: no
  // instruction that starts at or after `horizon` can conflict with them.
  void forget_before(uint64_t horizon) {
    for (auto it = map_.begin(); it != map_.end();) {
      Segment& seg = it->second;
      if (seg.written && seg.write.until <= horizon) seg.written = false;
      seg.reads.erase_if([&](const Pending& p) { return p.until <= horizon; });
      it = !seg.written && seg.reads.empty() ? map_.erase(it) : std::next(it);
    }
  }
  size_t size() const { return map_.size(); }

 private:
  Map map_;
};

// Units are told apart per core: the same unit kind and index on two cores are two units.
int unit_key(const Instruction& i) { return (i.core * 8 + int(i.unit)) * 4096 + i.unit_index; }

// Off-chip memory is one space for the chip; each core's buffers are spaces of their own (only a
// COPY reaches another core's unified buffer, so equal addresses on two cores are different bytes).
size_t space_index(const Instruction& i, const Access& a) {
  const int core = a.core >= 0 ? a.core : i.core;
  return a.space == BufferId::kDram ? 0 : size_t(core) * 3 + size_t(a.space);
}

std::string describe(const Program& p, uint32_t id) { return describe_instruction(p, id); }

// The off-chip bytes that some instruction of the program writes, as sorted disjoint ranges. A
// read of other bytes takes part in no hazard (read after read is none, and no write comes before
// or after it), so the walk need not record it: a timing-only sweep point's weight loads, most of
// its accesses, are such reads (one per row of each weight tile).
class WrittenBytes {
 public:
  WrittenBytes(const Program& program, int eb) {
    std::vector<Access> accesses;
    for (const Instruction& instr : program.instructions) {
      accesses.clear();
      std::visit(AccessVisitor{instr, Extents{accesses, eb}}, instr.op);
      for (const Access& a : accesses) {
        if (a.space == BufferId::kDram && a.write) ranges_.emplace_back(a.begin, a.end);
      }
    }
    std::sort(ranges_.begin(), ranges_.end());
    size_t out = 0;
    for (const auto& r : ranges_) {
      if (out > 0 && r.first <= ranges_[out - 1].second) {
        ranges_[out - 1].second = std::max(ranges_[out - 1].second, r.second);
      } else {
        ranges_[out++] = r;
      }
    }
    ranges_.resize(out);
  }
  // Replaces each off-chip read of `accesses` by its pieces that overlap written bytes (none, one,
  // or more), in address order and in its place; the other accesses stay as they are.
  void clip_reads(std::vector<Access>& accesses, std::vector<Access>& scratch) const {
    const auto untouched = [](const Access& a) { return a.space != BufferId::kDram || a.write; };
    if (std::all_of(accesses.begin(), accesses.end(), untouched)) return;
    scratch.clear();
    for (const Access& a : accesses) {
      if (untouched(a)) {
        scratch.push_back(a);
        continue;
      }
      // The first range that ends after a.begin, then every one that starts before a.end.
      auto it = std::upper_bound(ranges_.begin(), ranges_.end(), a.begin,
                                 [](uint64_t b, const auto& r) { return b < r.second; });
      for (; it != ranges_.end() && it->first < a.end; ++it) {
        Access& piece = scratch.emplace_back(a);
        piece.begin = std::max(a.begin, it->first);
        piece.end = std::min(a.end, it->second);
      }
    }
    accesses.swap(scratch);
  }

 private:
  std::vector<std::pair<uint64_t, uint64_t>> ranges_;  // [begin, end)
};

}  // namespace

std::vector<Access> accesses_of(const Instruction& instr, DataType dtype) {
  std::vector<Access> out;
  std::visit(AccessVisitor{instr, Extents{out, dtype == DataType::kBf16 ? 2 : 1}}, instr.op);
  return out;
}

// The walk below keeps pending accesses in ordered maps. An access that ended by the earliest
// start of every instruction still to come cannot conflict with any of them, so the maps are
// pruned of such accesses whenever they have doubled since the last pruning: the answer is the
// same, and the maps stay about as large as the accesses in flight instead of the whole program's.
// The first pruning comes early (256 segments): a walk down a small map stays in the cache, and
// each pruning costs one pass over what is left (about half of the threshold).

std::optional<Hazard> find_hazard(const Program& program, const std::vector<Window>& windows) {
  int cores = 1;
  for (const Instruction& instr : program.instructions) {
    cores = std::max(cores, instr.core + 1);
    if (const auto* c = std::get_if<CopyOp>(&instr.op)) cores = std::max(cores, c->dst_core + 1);
  }
  std::pmr::unsynchronized_pool_resource pool;
  std::vector<SegmentMap> spaces;  // built in place: a copy would take the default resource
  spaces.reserve(size_t(cores) * 3 + 1);
  for (size_t s = 0; s < size_t(cores) * 3 + 1; ++s) spaces.emplace_back(&pool);
  const size_t n = program.instructions.size();
  NPUSIM_CHECK(windows.size() >= n, "hazard check: {} windows for {} instructions", windows.size(),
               n);
  std::vector<uint64_t> earliest_start_from(n + 1, UINT64_MAX);  // min start of [id, n)
  for (size_t id = n; id-- > 0;) {
    earliest_start_from[id] = std::min(earliest_start_from[id + 1], windows[id].start);
  }
  const size_t kFirstPruning = 256;
  size_t prune_at = kFirstPruning;
  std::vector<Access> accesses, scratch;
  const int eb = program.dtype == DataType::kBf16 ? 2 : 1;
  const WrittenBytes dram_written(program, eb);
  for (size_t id = 0; id < n; ++id) {
    const Instruction& instr = program.instructions[id];
    const Window w = windows[id];
    const int unit = unit_key(instr);
    accesses.clear();
    std::visit(AccessVisitor{instr, Extents{accesses, eb}}, instr.op);
    dram_written.clip_reads(accesses, scratch);
    size_t segments = 0;
    for (const SegmentMap& space : spaces) segments += space.size();
    if (segments >= prune_at) {
      segments = 0;
      for (SegmentMap& space : spaces) {
        space.forget_before(earliest_start_from[id]);
        segments += space.size();
      }
      prune_at = std::max(kFirstPruning, 2 * segments);
    }
    // Check every access against what is pending before recording any of them (an instruction
    // may read and write the same bytes).
    for (const Access& a : accesses) {
      SegmentMap& space = spaces[space_index(instr, a)];
      for (auto it = space.first(a.begin); it != space.map().end() && it->first < a.end; ++it) {
        const Segment& seg = it->second;
        const Pending* conflict = nullptr;
        bool conflict_writes = false;
        if (seg.written && seg.write.unit != unit && seg.write.instruction != id &&
            w.start < seg.write.until) {
          conflict = &seg.write;
          conflict_writes = true;
        }
        for (size_t r = 0; conflict == nullptr && a.write && r < seg.reads.size(); ++r) {
          const Pending& p = seg.reads[r];
          if (p.unit != unit && p.instruction != id && w.start < p.until) conflict = &p;
        }
        if (conflict == nullptr) continue;
        Hazard h;
        h.kind = !a.write ? "RAW" : conflict_writes ? "WAW" : "WAR";
        h.earlier = conflict->instruction;
        h.later = uint32_t(id);
        h.range = {a.space, std::max(a.begin, it->first), std::min(a.end, seg.end), a.write};
        h.earlier_window = windows.at(conflict->instruction);
        h.later_window = w;
        h.message = fmt::format(
            "{} hazard on {}[{:#x}, {:#x}): {} {} it from cycle {}, but {} {} it until cycle {} "
            "(a dependency the program does not declare)",
            h.kind, to_string(a.space), h.range.begin, h.range.end, describe(program, h.later),
            a.write ? "writes" : "reads", w.start, describe(program, conflict->instruction),
            conflict_writes ? "writes" : "reads", conflict->until);
        return h;
      }
    }
    for (const Access& a : accesses) {
      SegmentMap& space = spaces[space_index(instr, a)];
      space.split(a.begin);
      space.split(a.end);
      auto& map = space.map();
      const Pending me{uint32_t(id), unit, w.end};
      if (a.write) {
        // A write supersedes everything pending on its bytes: a later conflicting access must
        // wait for it, and it waited for those (or completes after them, on their unit).
        auto it = space.first(a.begin);
        while (it != map.end() && it->first < a.end) it = map.erase(it);
        map.emplace_hint(it, a.begin, Segment{a.end, true, me, {}});
        continue;
      }
      uint64_t pos = a.begin;
      auto it = space.first(a.begin);
      while (pos < a.end) {
        if (it == map.end() || it->first > pos) {  // a gap nobody touched yet
          const uint64_t gap_end = it == map.end() ? a.end : std::min(a.end, it->first);
          it = map.emplace_hint(it, pos, Segment{gap_end, false, {}, PendingReads(me)});
          pos = gap_end;
          ++it;
          continue;
        }
        auto& reads = it->second.reads;
        reads.erase_if([&](const Pending& p) { return p.unit == unit; });
        reads.push_back(me);
        pos = it->second.end;
        ++it;
      }
    }
  }
  return std::nullopt;
}

}  // namespace npusim
