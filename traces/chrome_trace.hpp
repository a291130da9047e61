// Chrome trace-event JSON (the format ui.perfetto.dev and chrome://tracing open) from a recorded
// timeline and its program.
//
// Layout: one process (the chip); one thread per unit (each DMA queue, each matrix unit, the
// vector unit), per off-chip memory channel (its DRAM commands, burst detail) and per DMA queue's
// bursts (burst detail). Work that overlaps on one unit (a matrix unit accepting its next tile
// while the previous drains; bursts in flight) goes to extra lanes, "<unit> #2", ..., so the
// slices of every thread are disjoint. Complete events ("X") per instruction with its arguments,
// flow events ("s"/"f", bound to the enclosing slices) from each dependency's producer to its
// consumer, instant events ("i") per DRAM command, counter events ("C", traces/counters.hpp).
//
// Time: "ts" and "dur" are microseconds of simulated time. Every time is first rounded to whole
// nanoseconds; "ts" carries 0.3 ns more so that readers that truncate (Perfetto) and readers that
// round both land on that nanosecond, and "dur" is the exact difference of two such times, so a
// slice that ends when the next begins never overlaps it. The clock and the cycle counts are in
// "otherData" and in every slice's arguments.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "arch/program.hpp"
#include "support/timeline.hpp"

namespace npusim::traces {

struct RunInfo {
  std::string hardware, workload;
  uint64_t total_cycles = 0;
  double peak_macs_per_cycle = 0;     // for the roofline
  double memory_bytes_per_cycle = 0;  // off-chip peak, for the roofline
  // Where the run sits in a trace of several runs one after the other (npusim generate: the
  // prefill, then each decode step): its cycle c is at cycle offset_cycles + c of the trace, its
  // process ids are the one-run ids plus pid_base, and its process names start with
  // process_prefix.
  uint64_t offset_cycles = 0;
  int pid_base = 0;
  std::string process_prefix;
  // Named spans of the run (npusim train: forward, backward, all-reduce, optimizer), written as
  // a process "phases" of one thread after the run's others: [start_cycle, end_cycle) each.
  struct Phase {
    std::string name;
    uint64_t start_cycle = 0, end_cycle = 0;
  };
  std::vector<Phase> phases;
};

std::string chrome_trace_json(const timeline::Timeline& timeline, const Program& program,
                              const RunInfo& run);

// The trace events of one run, comma-separated (no enclosing array): the parts of a trace of
// several runs (`run` places them). Flow ids continue from *flow_id, which is left at the last.
std::string chrome_trace_events(const timeline::Timeline& timeline, const Program& program,
                                const RunInfo& run, uint64_t* flow_id);
// The largest process id of a one-run trace (the host's), for placing runs one after another.
int chrome_trace_max_pid();

// Quotes and escapes `s` as a JSON string; bytes that are not UTF-8 as the text \xNN
// (support/text_escape.hpp).
std::string json_string(const std::string& s);

}  // namespace npusim::traces
