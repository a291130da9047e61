#include "models/dram/membench.hpp"

#include <fmt/format.h>

#include <chrono>
#include <ctime>
#include <deque>
#include <fstream>
#include <optional>
#include <sstream>

#include "models/dram/memory_stats.hpp"
#include "support/error.hpp"

namespace npusim::dram {

namespace {

struct PatternName {
  Pattern pattern;
  const char* name;
};
constexpr PatternName kPatterns[] = {
    {Pattern::kSeqRead, "seq-read"},
    {Pattern::kSeqWrite, "seq-write"},
    {Pattern::kRandomRead, "random-read"},
    {Pattern::kMix2r1w, "mix-2r1w"},
    {Pattern::kSeqMix2r1w, "seq-mix-2r1w"},
    {Pattern::kStrideRow, "stride-row"},
    {Pattern::kIdleSeqRead, "idle-seq-read"},
    {Pattern::kIdleRandomRead, "idle-random-read"},
    {Pattern::kTrace, "trace"},
};

bool parse_hex(const std::string& s, uint64_t* out) {
  if (s.size() < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) return false;
  uint64_t v = 0;
  for (size_t i = 2; i < s.size(); ++i) {
    char c = s[i];
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      d = c - 'A' + 10;
    } else {
      return false;
    }
    if (v >> 60) return false;
    v = v * 16 + uint64_t(d);
  }
  *out = v;
  return true;
}

bool parse_decimal(const std::string& s, uint64_t* out) {
  if (s.empty()) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    if (v > (UINT64_MAX - 9) / 10) return false;
    v = v * 10 + uint64_t(c - '0');
  }
  *out = v;
  return true;
}

}  // namespace

bool parse_pattern(const std::string& name, Pattern* out) {
  for (const auto& p : kPatterns) {
    if (name == p.name && p.pattern != Pattern::kTrace) {
      *out = p.pattern;
      return true;
    }
  }
  return false;
}

const char* pattern_name(Pattern p) {
  for (const auto& e : kPatterns) {
    if (e.pattern == p) return e.name;
  }
  return "?";
}

bool is_idle_pattern(Pattern p) {
  return p == Pattern::kIdleSeqRead || p == Pattern::kIdleRandomRead;
}

std::vector<MembenchRequest> read_trace_file(const std::string& path, uint64_t capacity_bytes,
                                             uint64_t access_bytes) {
  std::ifstream in(path);
  if (!in) throw UserError(fmt::format("{}: cannot open trace file", path));
  std::vector<MembenchRequest> out;
  std::string line;
  size_t line_no = 0;
  auto fail = [&](const std::string& what) {
    throw UserError(
        fmt::format("{}:{}: {}; expected \"0x<hex address> READ|WRITE <cycle>\" (DRAMsim3) or "
                    "\"LD|ST 0x<hex address>\" (Ramulator), got \"{}\"",
                    path, line_no, what, line));
  };
  while (std::getline(in, line)) {
    ++line_no;
    std::istringstream fields(line);
    std::string a, b, c, extra;
    fields >> a;
    if (a.empty() || a[0] == '#') continue;
    fields >> b >> c >> extra;
    MembenchRequest r;
    uint64_t addr = 0;
    if (a == "LD" || a == "ST") {
      if (!parse_hex(b, &addr)) fail("bad address");
      if (!c.empty()) fail("unexpected field after the address");
      r.is_write = a == "ST";
    } else {
      if (!parse_hex(a, &addr)) fail("bad address or operation");
      if (b == "READ") {
        r.is_write = false;
      } else if (b == "WRITE") {
        r.is_write = true;
      } else {
        fail("bad operation");
      }
      if (!c.empty() && !parse_decimal(c, &r.not_before)) fail("bad cycle");
      if (!extra.empty()) fail("unexpected field after the cycle");
    }
    r.addr = addr % capacity_bytes / access_bytes * access_bytes;
    out.push_back(r);
  }
  if (out.empty()) throw UserError(fmt::format("{}: the trace holds no request", path));
  return out;
}

PatternGenerator::PatternGenerator(Pattern pattern, const MemoryConfig& config, uint64_t seed,
                                   uint64_t idle_gap_cycles)
    : pattern_(pattern),
      access_(uint64_t(config.org.access_bytes())),
      lines_(config.org.capacity_bytes() / uint64_t(config.org.access_bytes())),
      row_bytes_(uint64_t(config.org.row_bytes())),
      capacity_(config.org.capacity_bytes()),
      gap_(idle_gap_cycles),
      state_(seed) {}

uint64_t PatternGenerator::random_line() {
  // splitmix64: fast, and every seed gives a full-period stream; lines_ is a power of two.
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return z & (lines_ - 1);
}

MembenchRequest PatternGenerator::next() {
  const uint64_t i = index_++;
  MembenchRequest r;
  switch (pattern_) {
    case Pattern::kSeqRead:
    case Pattern::kIdleSeqRead:
      r.addr = (i % lines_) * access_;
      break;
    case Pattern::kSeqWrite:
      r.addr = (i % lines_) * access_;
      r.is_write = true;
      break;
    case Pattern::kRandomRead:
    case Pattern::kIdleRandomRead:
      r.addr = random_line() * access_;
      break;
    case Pattern::kMix2r1w:
      r.addr = random_line() * access_;
      r.is_write = i % 3 == 2;
      break;
    case Pattern::kSeqMix2r1w: {
      // c[i] = a[i] + b[i]: three streams based 1 MiB-aligned at 0, F/3 and 2F/3 (gen_trace.py).
      const uint64_t align = std::max<uint64_t>(1, (uint64_t{1} << 20) / access_);
      const uint64_t third = (lines_ / 3) / align * align;
      const uint64_t k = (i / 3) % third;
      const uint64_t s = i % 3;
      r.addr = (s * third + k) * access_;
      r.is_write = s == 2;
      break;
    }
    case Pattern::kStrideRow:
      r.addr = (i * row_bytes_) % capacity_;
      break;
    case Pattern::kTrace:
      NPUSIM_CHECK(false, "membench: the trace pattern has no generator");
  }
  if (is_idle_pattern(pattern_)) r.not_before = i * gap_;
  return r;
}

MembenchResult run_membench(const MemoryConfig& config, const MembenchOptions& options) {
  std::vector<MembenchRequest> trace;
  std::optional<PatternGenerator> gen;
  uint64_t total = options.requests;
  if (options.pattern == Pattern::kTrace) {
    trace = read_trace_file(options.trace_file, config.org.capacity_bytes(),
                            uint64_t(config.org.access_bytes()));
    if (total == 0 || total > trace.size()) total = trace.size();
  } else {
    gen.emplace(options.pattern, config, options.seed, options.idle_gap_cycles);
    if (total == 0) total = is_idle_pattern(options.pattern) ? 20000 : 1000000;
  }

  const auto start = std::chrono::steady_clock::now();
  const std::clock_t cpu_start = std::clock();
  MemorySystem mem(config);
  uint64_t completed = 0;
  mem.set_callback([&completed](uint64_t, uint64_t) { ++completed; });
  const AddressMapper& mapper = mem.mapper();

  uint64_t next = 0;  // requests taken from the stream
  std::optional<MembenchRequest> head;
  // Requests the stream produced for a channel whose controller queue is full, oldest first.
  std::vector<std::deque<MembenchRequest>> waiting(size_t(config.org.channels));
  size_t waiting_count = 0;
  const size_t depth = size_t(options.channel_fifo_depth);

  auto take = [&]() -> MembenchRequest { return gen ? gen->next() : trace[size_t(next)]; };
  auto inject = [&]() {
    const uint64_t now = mem.now();
    if (waiting_count > 0) {
      for (auto& fifo : waiting) {
        while (!fifo.empty() && mem.try_add_request(fifo.front().addr, fifo.front().is_write, 0)) {
          fifo.pop_front();
          --waiting_count;
        }
      }
    }
    while (true) {
      if (!head) {
        if (next >= total) return;
        head = take();
        ++next;
      }
      if (head->not_before > now) return;
      const uint32_t ch = mapper.map(head->addr).channel;
      std::deque<MembenchRequest>& fifo = waiting[ch];
      if (fifo.empty() && mem.try_add_request(head->addr, head->is_write, 0)) {
        head.reset();
        continue;
      }
      if (fifo.size() >= depth) return;  // that channel's FIFO is full: the stream waits
      fifo.push_back(*head);
      ++waiting_count;
      head.reset();
    }
  };

  while (true) {
    inject();
    if (!head && next >= total && waiting_count == 0 && completed == total) break;
    const uint64_t event = mem.next_event_cycle();
    const uint64_t arrival = head && head->not_before > mem.now() ? head->not_before : kNever;
    if (arrival <= event && arrival != kNever) {
      mem.advance_to(arrival);
    } else {
      NPUSIM_CHECK(event != kNever, "membench: {} of {} requests done and nothing left to happen",
                   completed, total);
      mem.advance_to(event + 1);
    }
  }
  MembenchResult result;
  result.stats = mem.stats();
  result.channel_bursts = channel_bursts(mem);
  result.requests = total;
  result.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.cpu_seconds = double(std::clock() - cpu_start) / CLOCKS_PER_SEC;
  return result;
}

nlohmann::ordered_json membench_report(const std::string& preset, const MemoryConfig& cfg,
                                       const std::string& pattern, const MembenchResult& r) {
  const MemoryStats& s = r.stats;
  const double peak = cfg.peak_bandwidth_gbps();
  stats::Registry reg;
  register_memory_stats(reg, preset, cfg, s, r.channel_bursts);
  nlohmann::ordered_json j;
  j["pattern"] = pattern;
  j["memory_file"] = cfg.file;
  j["requests"] = r.requests;
  j["bandwidth_pct_of_peak"] = peak > 0 ? 100.0 * s.bandwidth_gbps / peak : 0.0;
  j["acts_per_request"] = r.requests > 0 ? double(s.acts) / double(r.requests) : 0.0;
  j["memory"] = reg.to_json();
  j["host"] = {
      {"wall_seconds", r.wall_seconds},
      {"cpu_seconds", r.cpu_seconds},
      {"requests_per_second", r.wall_seconds > 0 ? double(r.requests) / r.wall_seconds : 0.0},
      {"memory_cycles_per_second", r.wall_seconds > 0 ? double(s.cycles) / r.wall_seconds : 0.0},
      {"requests_per_cpu_second", r.cpu_seconds > 0 ? double(r.requests) / r.cpu_seconds : 0.0},
      {"memory_cycles_per_cpu_second", r.cpu_seconds > 0 ? double(s.cycles) / r.cpu_seconds : 0.0}};
  return j;
}

}  // namespace npusim::dram
