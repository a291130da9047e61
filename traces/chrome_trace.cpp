#include "traces/chrome_trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <string>
#include <variant>

#include "support/error.hpp"
#include "support/text_escape.hpp"
#include "traces/counters.hpp"

namespace npusim::traces {

namespace {

using timeline::InstructionRecord;
using timeline::Timeline;
using timeline::TrackKind;

constexpr int kPid = 1;

template <class... Fs>
struct Overloaded : Fs... {
  using Fs::operator()...;
};
template <class... Fs>
Overloaded(Fs...) -> Overloaded<Fs...>;

// The instruction's work as arguments: "tile" and, for DMA, "bytes".
std::string work_args(const Instruction& instr) {
  return std::visit(
      Overloaded{
          [](const DmaOp& o) {
            return fmt::format(R"("bytes":{},"buffer":"{}","dram_addr":"{:#x}","tile":"{}x{}x{}")",
                               o.bytes(), to_string(o.buffer), o.dram_addr, o.count[2], o.count[1],
                               o.count[0]);
          },
          [](const MatmulOp& o) {
            return fmt::format(R"("tile":"m={} k={} n={}","macs":{})", o.m, o.k, o.n,
                               uint64_t(o.m) * o.k * o.n);
          },
          [](const RequantOp& o) { return fmt::format(R"("tile":"m={} n={}")", o.m, o.n); },
          [](const PoolOp& o) {
            return fmt::format(R"("tile":"{}x{}x{}")", o.out_h, o.out_w, o.c);
          },
          [](const SoftmaxOp& o) { return fmt::format(R"("tile":"{}x{}")", o.rows, o.length); },
          [](const LayerNormOp& o) { return fmt::format(R"("tile":"{}x{}")", o.rows, o.length); },
          [](const LutOp& o) { return fmt::format(R"("tile":"{}")", o.elements); },
          [](const EltwiseOp& o) { return fmt::format(R"("tile":"{}x{}")", o.rows, o.cols); },
          [](const Fp32Op& o) { return fmt::format(R"("tile":"{}x{}")", o.rows, o.cols); },
          [](const HostOp& o) {
            return o.phase == HostPhase::kCompute
                       ? fmt::format(R"("flops":{},"bytes":{})", o.flops, o.bytes)
                       : fmt::format(R"("bytes":{})", o.bytes);
          },
          [](const CopyOp& o) {
            return fmt::format(R"("bytes":{},"to_core":{},"src_addr":"{:#x}","dst_addr":"{:#x}")",
                               o.bytes, o.dst_core, o.src_addr, o.dst_addr);
          },
      },
      instr.op);
}

// Lanes of one thread: intervals in start order, each on the first lane free at its start.
struct Lanes {
  std::vector<uint64_t> lane_end;
  uint32_t place(uint64_t start, uint64_t end) {
    for (uint32_t l = 0; l < lane_end.size(); ++l) {
      if (lane_end[l] <= start) {
        lane_end[l] = end;
        return l;
      }
    }
    lane_end.push_back(end);
    return uint32_t(lane_end.size() - 1);
  }
};

class Writer {
 public:
  Writer(const Timeline& t, uint64_t offset_cycles) : t_(t), offset_(offset_cycles) {}

  std::string ts(uint64_t cycle) const {
    const uint64_t ns = cycle_to_ns(t_, offset_ + cycle);
    return fmt::format("{}.{:03}3", ns / 1000, ns % 1000);
  }
  // A viewer adds ts and dur as doubles, which can round up past the next slice's ts (10.4963 +
  // 4.344 > 14.8403): then dur is written a millionth of a nanosecond short, which Perfetto's
  // truncation turns into one nanosecond less, still ending where the next slice starts at the
  // latest.
  std::string dur(uint64_t start, uint64_t end) const {
    const uint64_t ns = cycle_to_ns(t_, offset_ + end) - cycle_to_ns(t_, offset_ + start);
    std::string d = fmt::format("{}.{:03}", ns / 1000, ns % 1000);
    if (ns > 0 && std::stod(ts(start)) + std::stod(d) > std::stod(ts(end))) {
      d = fmt::format("{}.{:03}999999", (ns - 1) / 1000, (ns - 1) % 1000);
    }
    return d;
  }
  void event(const std::string& text) {
    if (!first_) out_ += ",\n";
    first_ = false;
    out_ += text;
  }
  // Thread ids: per track, one per lane, numbered in track order once every lane is known.
  std::string out_;

 private:
  const Timeline& t_;
  const uint64_t offset_;
  bool first_ = true;
};

}  // namespace

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char c : escape_invalid_utf8(s)) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", int(c));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

// The phases' process comes after the host's.
int chrome_trace_max_pid() { return kPid + timeline::kHostProcess + 1; }

std::string chrome_trace_json(const Timeline& t, const Program& program, const RunInfo& run) {
  const timeline::Filter& filter = t.filter();
  std::string out = "{\"otherData\":{";
  out += fmt::format(
      R"("generator":"npusim","hardware":{},"workload":{},"clock_mhz":{},"time_unit":"us of simulated time","cycle_ns":{:.6f},"total_cycles":{},"trace_window_cycles":[{},{}],"trace_detail":"{}","trace_layers":[)",
      json_string(run.hardware), json_string(run.workload), t.clock_mhz(), 1e3 / t.clock_mhz(),
      run.total_cycles, filter.window_start,
      filter.window_end == UINT64_MAX ? run.total_cycles : filter.window_end,
      filter.detail == timeline::Detail::kBursts ? "bursts" : "instructions");
  bool first_layer = true;
  for (size_t l = 0; l < program.layers.size(); ++l) {
    if (filter.layers.empty() || !filter.layer(uint32_t(l))) continue;
    if (!first_layer) out += ',';
    out += json_string(program.layers[l].name);
    first_layer = false;
  }
  out += "]},\"traceEvents\":[\n";
  uint64_t flow_id = 0;
  out += chrome_trace_events(t, program, run, &flow_id);
  out += "\n]}\n";
  return out;
}

std::string chrome_trace_events(const Timeline& t, const Program& program, const RunInfo& run,
                                uint64_t* flow_id_io) {
  const auto& rec = t.instructions();
  const auto& tracks = t.tracks();
  const timeline::Filter& filter = t.filter();
  NPUSIM_CHECK(rec.size() == program.instructions.size(),
               "chrome trace: {} recorded instructions, the program has {}", rec.size(),
               program.instructions.size());

  // Which instructions are written, and on which lane of their track.
  std::vector<std::vector<uint32_t>> by_track(tracks.size());
  std::vector<uint8_t> written(rec.size(), 0);
  for (uint32_t i = 0; i < rec.size(); ++i) {
    NPUSIM_CHECK(rec[i].track != InstructionRecord::kNone,
                 "chrome trace: instruction {} was not "
                 "recorded",
                 i);
    if (filter.layer(program.instructions[i].layer) && filter.window(rec[i].start, rec[i].end)) {
      written[i] = 1;
      by_track[rec[i].track].push_back(i);
    }
  }
  std::vector<uint32_t> lane_of(rec.size(), 0);
  std::vector<std::vector<uint32_t>> burst_lane_of(tracks.size());
  std::vector<Lanes> lanes(tracks.size());
  for (uint32_t tr = 0; tr < tracks.size(); ++tr) {
    auto& ids = by_track[tr];
    std::sort(ids.begin(), ids.end(), [&](uint32_t a, uint32_t b) {
      return rec[a].start != rec[b].start ? rec[a].start < rec[b].start : a < b;
    });
    for (uint32_t i : ids) lane_of[i] = lanes[tr].place(rec[i].start, rec[i].end);
  }
  std::vector<uint32_t> burst_order(t.bursts().size());
  for (uint32_t b = 0; b < burst_order.size(); ++b) burst_order[b] = b;
  std::sort(burst_order.begin(), burst_order.end(),
            [&](uint32_t a, uint32_t b) { return t.bursts()[a].start < t.bursts()[b].start; });
  std::vector<uint32_t> burst_lane(t.bursts().size(), 0);
  for (uint32_t b : burst_order) {
    const auto& x = t.bursts()[b];
    burst_lane[b] = lanes[x.track].place(x.start, x.end);
  }
  // Thread ids in track order; every unit gets at least one thread.
  std::vector<uint32_t> first_tid(tracks.size());
  uint32_t next_tid = 1;
  for (uint32_t tr = 0; tr < tracks.size(); ++tr) {
    first_tid[tr] = next_tid;
    next_tid += std::max<uint32_t>(1, uint32_t(lanes[tr].lane_end.size()));
  }

  Writer w(t, run.offset_cycles);
  const int chip_pid = kPid + run.pid_base;
  const std::string& prefix = run.process_prefix;
  w.event(fmt::format(R"({{"ph":"M","pid":{},"name":"process_name","args":{{"name":{}}}}})",
                      chip_pid,
                      json_string(fmt::format("{}{} on {} ({} MHz)", prefix, run.workload,
                                              run.hardware, t.clock_mhz()))));
  if (run.pid_base != 0) {
    w.event(fmt::format(
        R"({{"ph":"M","pid":{},"name":"process_sort_index","args":{{"sort_index":{}}}}})", chip_pid,
        run.pid_base));
  }
  // A multi-core chip: one process per core (Track::process c + 1 is core c), after the chip's.
  int processes = 0;
  bool host = false;
  for (const auto& track : tracks) {
    host = host || track.process == timeline::kHostProcess;
    if (track.process != timeline::kHostProcess) processes = std::max(processes, track.process);
  }
  if (host) {
    // The host CPU and its link (docs/heterogeneous.md), after the cores.
    w.event(fmt::format(R"({{"ph":"M","pid":{},"name":"process_name","args":{{"name":{}}}}})",
                        chip_pid + timeline::kHostProcess, json_string(prefix + "host")));
    w.event(fmt::format(
        R"({{"ph":"M","pid":{},"name":"process_sort_index","args":{{"sort_index":{}}}}})",
        chip_pid + timeline::kHostProcess, run.pid_base + timeline::kHostProcess));
  }
  for (int p = 1; p <= processes; ++p) {
    w.event(fmt::format(R"({{"ph":"M","pid":{},"name":"process_name","args":{{"name":{}}}}})",
                        chip_pid + p, json_string(fmt::format("{}core {}", prefix, p - 1))));
    w.event(fmt::format(
        R"({{"ph":"M","pid":{},"name":"process_sort_index","args":{{"sort_index":{}}}}})",
        chip_pid + p, run.pid_base + p));
  }
  const auto pid = [&](uint32_t track) { return chip_pid + tracks[track].process; };
  for (uint32_t tr = 0; tr < tracks.size(); ++tr) {
    const uint32_t n = std::max<uint32_t>(1, uint32_t(lanes[tr].lane_end.size()));
    for (uint32_t l = 0; l < n; ++l) {
      const std::string name =
          l == 0 ? tracks[tr].name : fmt::format("{} #{}", tracks[tr].name, l + 1);
      w.event(
          fmt::format(R"({{"ph":"M","pid":{},"tid":{},"name":"thread_name","args":{{"name":{}}}}})",
                      pid(tr), first_tid[tr] + l, json_string(name)));
      w.event(fmt::format(
          R"({{"ph":"M","pid":{},"tid":{},"name":"thread_sort_index","args":{{"sort_index":{}}}}})",
          pid(tr), first_tid[tr] + l, first_tid[tr] + l));
    }
  }

  std::vector<std::string> layer_names;
  for (const auto& l : program.layers) layer_names.push_back(json_string(l.name));
  uint64_t& flow_id = *flow_id_io;
  for (uint32_t tr = 0; tr < tracks.size(); ++tr) {
    for (uint32_t i : by_track[tr]) {
      const Instruction& instr = program.instructions[i];
      const InstructionRecord& r = rec[i];
      std::string deps;
      for (uint32_t d : instr.deps) {
        if (!deps.empty()) deps += ',';
        deps += std::to_string(d);
      }
      const std::string& layer = layer_names[instr.layer];
      w.event(fmt::format(
          R"({{"ph":"X","pid":{},"tid":{},"ts":{},"dur":{},"name":"{}","cat":"{}","args":{{"id":{},"layer":{},"op":{},{},"cycles":{},"start_cycle":{},"end_cycle":{},"deps":[{}]}}}})",
          pid(tr), first_tid[tr] + lane_of[i], w.ts(r.start), w.dur(r.start, r.end),
          opcode_name(instr), to_string(tracks[tr].kind), i, layer,
          json_string(program.layers[instr.layer].op), work_args(instr), r.end - r.start, r.start,
          r.end, deps));
      for (uint32_t d : instr.deps) {
        if (!written[d]) continue;
        ++flow_id;
        const uint32_t ptid = first_tid[rec[d].track] + lane_of[d];
        w.event(fmt::format(
            R"({{"ph":"s","pid":{},"tid":{},"ts":{},"id":{},"name":"dep","cat":"dep"}})",
            pid(rec[d].track), ptid, w.ts(rec[d].start), flow_id));
        w.event(fmt::format(
            R"({{"ph":"f","bp":"e","pid":{},"tid":{},"ts":{},"id":{},"name":"dep","cat":"dep"}})",
            pid(tr), first_tid[tr] + lane_of[i], w.ts(r.start), flow_id));
      }
    }
  }
  for (uint32_t b = 0; b < t.bursts().size(); ++b) {
    const auto& x = t.bursts()[b];
    w.event(fmt::format(
        R"({{"ph":"X","pid":{},"tid":{},"ts":{},"dur":{},"name":"{}","cat":"burst","args":{{"instruction":{},"address":"{:#x}","bytes":{},"start_cycle":{},"end_cycle":{}}}}})",
        pid(x.track), first_tid[x.track] + burst_lane[b], w.ts(x.start), w.dur(x.start, x.end),
        x.write ? "write" : "read", x.instruction, x.address, x.bytes, x.start, x.end));
  }
  const auto& names = t.command_names();
  for (const auto& c : t.commands()) {
    const std::string name = c.command < names.size() ? names[c.command] : "?";
    w.event(fmt::format(
        R"({{"ph":"i","s":"t","pid":{},"tid":{},"ts":{},"name":"{}","cat":"dram","args":{{"bank":{},"row":{},"cycle":{}}}}})",
        pid(c.track), first_tid[c.track], w.ts(c.cycle), name, c.bank, c.row, c.cycle));
  }

  const uint64_t window = counter_window_cycles(run.total_cycles);
  for (const Series& s : counter_series(t, program, run.total_cycles, window)) {
    const std::string name = json_string(fmt::format("{} ({})", s.name, s.unit));
    for (size_t i = 0; i <= s.values.size(); ++i) {
      const uint64_t c = std::min<uint64_t>(i * window, run.total_cycles);
      const uint64_t end = std::min<uint64_t>(c + window, run.total_cycles);
      if (!filter.window(c, std::max(end, c + 1))) continue;  // windows touching the trace window
      const double v = i < s.values.size() ? s.values[i] : 0.0;  // back to 0 at the end
      w.event(fmt::format(R"({{"ph":"C","pid":{},"ts":{},"name":{},"args":{{"value":{:.6g}}}}})",
                          chip_pid, w.ts(c), name, v));
    }
  }
  if (!run.phases.empty()) {
    const int phases_pid = chip_pid + timeline::kHostProcess + 1;
    w.event(fmt::format(R"({{"ph":"M","pid":{},"name":"process_name","args":{{"name":{}}}}})",
                        phases_pid, json_string(prefix + "phases")));
    w.event(fmt::format(
        R"({{"ph":"M","pid":{},"name":"process_sort_index","args":{{"sort_index":{}}}}})",
        phases_pid, run.pid_base - 1));
    w.event(fmt::format(
        R"({{"ph":"M","pid":{},"tid":1,"name":"thread_name","args":{{"name":"phases"}}}})",
        phases_pid));
    for (const RunInfo::Phase& p : run.phases) {
      w.event(fmt::format(
          R"({{"ph":"X","pid":{},"tid":1,"ts":{},"dur":{},"name":{},"cat":"phase","args":{{"cycles":{},"start_cycle":{},"end_cycle":{}}}}})",
          phases_pid, w.ts(p.start_cycle), w.dur(p.start_cycle, p.end_cycle), json_string(p.name),
          p.end_cycle - p.start_cycle, p.start_cycle, p.end_cycle));
    }
  }
  return std::move(w.out_);
}

}  // namespace npusim::traces
