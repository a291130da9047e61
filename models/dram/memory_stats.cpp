#include "models/dram/memory_stats.hpp"

namespace npusim::dram {

std::vector<uint64_t> channel_bursts(const MemorySystem& memory) {
  std::vector<uint64_t> out;
  for (int c = 0; c < memory.channels(); ++c) {
    const ChannelStats& cs = memory.channel(c).stats();
    out.push_back(cs.reads + cs.writes);
  }
  return out;
}

void register_memory_stats(stats::Registry& reg, const std::string& preset, const MemoryConfig& cfg,
                           const MemoryStats& s, const std::vector<uint64_t>& per_channel) {
  reg.value("preset", "", "memory preset (configs/memory) or file, as named", preset);
  reg.value("channels", "count", "independent channels", cfg.org.channels);
  reg.value("burst_bytes", "bytes", "bytes of one access (one burst)", cfg.org.access_bytes());
  reg.value("tck_ns", "ns", "memory clock period", cfg.timing.tck_ns);
  reg.value("memory_cycles", "memory cycles",
            "memory clock cycles simulated, to the end of the run", s.cycles);
  reg.value("read_bursts", "count", "read bursts served", s.reads);
  reg.value("write_bursts", "count", "write bursts served", s.writes);
  reg.value("row_hit_rate", "ratio", "bursts that found their row open / all bursts",
            s.row_hit_rate);
  reg.value("act_commands", "count", "ACT commands issued", s.acts);
  reg.value("pre_commands", "count", "PRE commands issued (explicit and auto-precharge)", s.pres);
  reg.value("ref_commands", "count", "REF commands issued", s.refs);
  reg.value("bandwidth_gbps", "GB/s", "bytes moved / simulated time", s.bandwidth_gbps);
  reg.value("peak_bandwidth_gbps", "GB/s", "peak data-bus bandwidth of all channels",
            cfg.peak_bandwidth_gbps());
  reg.value("avg_read_latency_cycles", "memory cycles",
            "mean read latency, controller arrival to last data beat", s.avg_read_latency_cycles);
  reg.value("p50_read_latency_cycles", "memory cycles", "median read latency",
            s.p50_read_latency_cycles);
  reg.value("p99_read_latency_cycles", "memory cycles", "99th-percentile read latency",
            s.p99_read_latency_cycles);
  reg.value("max_read_latency_cycles", "memory cycles", "largest read latency",
            s.max_read_latency_cycles);
  reg.value("avg_write_latency_cycles", "memory cycles", "mean write latency",
            s.avg_write_latency_cycles);
  reg.value("energy_pj", "pJ", "DRAM core energy of the run (docs/memory.md)", s.total_energy_pj);
  reg.value("energy_breakdown_pj.act", "pJ", "energy of ACT/PRE pairs", s.act_energy_pj);
  reg.value("energy_breakdown_pj.read", "pJ", "energy of read bursts", s.read_energy_pj);
  reg.value("energy_breakdown_pj.write", "pJ", "energy of write bursts", s.write_energy_pj);
  reg.value("energy_breakdown_pj.refresh", "pJ", "energy of refreshes", s.refresh_energy_pj);
  reg.value("energy_breakdown_pj.background", "pJ", "background (standby) energy",
            s.background_energy_pj);
  reg.value("energy_pj_per_bit", "pJ/bit", "energy_pj / bits moved", s.energy_pj_per_bit);
  reg.value("average_power_mw", "mW", "energy_pj / simulated time", s.average_power_mw);
  reg.value("channel_bursts", "count", "bursts per channel: how the address mapping spread them",
            per_channel);
  reg.value("config", "",
            "the preset as resolved (channels applied), in the configs/memory file format",
            nlohmann::json::parse(memory_config_to_json_text(cfg)));
}

}  // namespace npusim::dram
