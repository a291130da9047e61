#include "traces/html_report.hpp"

#include <algorithm>

#include "support/error.hpp"
#include "support/text_escape.hpp"
#include "traces/counters.hpp"

namespace npusim::traces {

namespace {

using nlohmann::json;
using timeline::InstructionRecord;
using timeline::TrackKind;

// Per unit: lanes of [start, end, layer] segments; neighbours of one layer closer than `merge`
// cycles become one segment.
json timeline_tracks(const timeline::Timeline& t, const Program& program, uint64_t merge) {
  const auto& rec = t.instructions();
  const auto& tracks = t.tracks();
  std::vector<std::vector<uint32_t>> by_track(tracks.size());
  for (uint32_t i = 0; i < rec.size(); ++i) {
    NPUSIM_CHECK(rec[i].track != InstructionRecord::kNone,
                 "html report: instruction {} was not "
                 "recorded",
                 i);
    by_track[rec[i].track].push_back(i);
  }
  json out = json::array();
  for (uint32_t tr = 0; tr < tracks.size(); ++tr) {
    const TrackKind k = tracks[tr].kind;
    if (k == TrackKind::kMemoryChannel || k == TrackKind::kBursts) continue;
    auto& ids = by_track[tr];
    std::sort(ids.begin(), ids.end(), [&](uint32_t a, uint32_t b) {
      return rec[a].start != rec[b].start ? rec[a].start < rec[b].start : a < b;
    });
    struct Seg {
      uint64_t start, end;
      uint32_t layer, count;
    };
    std::vector<std::vector<Seg>> lanes;
    for (uint32_t i : ids) {
      const uint32_t layer = program.instructions[i].layer;
      size_t l = 0;
      while (l < lanes.size() && lanes[l].back().end > rec[i].start) ++l;
      if (l == lanes.size()) lanes.emplace_back();
      auto& lane = lanes[l];
      if (!lane.empty() && lane.back().layer == layer && rec[i].start - lane.back().end <= merge) {
        lane.back().end = std::max(lane.back().end, rec[i].end);
        ++lane.back().count;
      } else {
        lane.push_back({rec[i].start, rec[i].end, layer, 1});
      }
    }
    json jl = json::array();
    for (const auto& lane : lanes) {
      json segs = json::array();
      for (const Seg& s : lane) segs.push_back({s.start, s.end, s.layer, s.count});
      jl.push_back(std::move(segs));
    }
    out.push_back({{"name", tracks[tr].name}, {"kind", to_string(k)}, {"lanes", std::move(jl)}});
  }
  return out;
}

}  // namespace

std::string html_report(const timeline::Timeline& t, const Program& program, const RunInfo& run,
                        const nlohmann::json& stats) {
  json data;
  data["hardware"] = run.hardware;
  data["workload"] = run.workload;
  data["clock_mhz"] = t.clock_mhz();
  data["total_cycles"] = run.total_cycles;
  data["peak_ops_per_s"] = 2.0 * run.peak_macs_per_cycle * t.clock_mhz() * 1e6;
  data["peak_bytes_per_s"] = run.memory_bytes_per_cycle * t.clock_mhz() * 1e6;
  data["tracks"] = timeline_tracks(t, program, std::max<uint64_t>(1, run.total_cycles / 4000));
  json layers = json::array();
  for (const auto& row : stats.value("layers", json::array())) {
    json l;
    for (const auto& [key, value] : row.items()) {
      const bool wanted = key == "name" || key == "op" || key == "cycles" || key == "start_cycle" ||
                          key == "end_cycle" || key == "macs" || key == "mxu_utilization" ||
                          key == "dram_read_bytes" || key == "dram_write_bytes" ||
                          key.find("energy") != std::string::npos ||
                          key.find("power") != std::string::npos;
      if (wanted) l[key] = value;
    }
    layers.push_back(std::move(l));
  }
  data["layers"] = std::move(layers);
  data["units"] = stats.value("units", json::object());
  for (const char* section : {"energy", "power", "area", "efficiency"}) {
    if (stats.contains(section)) data[section] = stats[section];
  }
  const uint64_t window = counter_window_cycles(run.total_cycles);
  data["counter_window_cycles"] = window;
  json counters = json::array();
  for (const Series& s : counter_series(t, program, run.total_cycles, window)) {
    counters.push_back({{"name", s.name}, {"unit", s.unit}, {"values", s.values}});
  }
  data["counters"] = std::move(counters);

  return html_page_with_data("report", data);
}

}  // namespace npusim::traces
