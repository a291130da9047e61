// Memory presets: the organization, JEDEC timing (in memory clock cycles), controller policy and
// energy of one DRAM device type, read from a JSON file in configs/memory/ (built into the binary
// and found by name like every preset, support/presets.hpp) or any other preset file.
//
// Contract: load_memory_config() either returns a fully validated MemoryConfig (every count a
// power of two where the address mapping needs it, every timing consistent: tRC >= tRAS + tRP,
// tFAW >= tRRD_S, watermarks ordered ...) or throws UserErrors listing every problem as
// "file: /json/pointer: expected ...". Nothing downstream re-validates or falls back to defaults.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace npusim::dram {

enum class PagePolicy { kOpen, kClosed };
// All banks of a pseudo-channel at once every tREFI (REF), or one bank at a time every tREFI /
// banks (REFpb, each bank once per round, the controller choosing an idle one), the other banks
// serving requests meanwhile.
enum class RefreshMode { kAllBank, kPerBank };

struct DramOrganization {
  int channels = 1;
  int pseudo_channels = 1;  // per channel; each has its own data bus, banks and tFAW window
  int bank_groups = 1;      // per pseudo-channel
  int banks_per_group = 1;
  int64_t rows = 1;             // per bank
  int columns = 1;              // bursts (column accesses) per row
  int bus_width_bits = 64;      // data bus of one pseudo-channel
  int burst_length = 8;         // beats per burst
  int devices_per_channel = 1;  // chips sharing one channel (energy scales with it)

  int access_bytes() const { return bus_width_bits / 8 * burst_length; }
  int banks_per_pseudo_channel() const { return bank_groups * banks_per_group; }
  int banks_per_channel() const { return pseudo_channels * banks_per_pseudo_channel(); }
  int64_t row_bytes() const { return int64_t{columns} * access_bytes(); }
  uint64_t channel_bytes() const {
    return uint64_t(banks_per_channel()) * uint64_t(rows) * uint64_t(row_bytes());
  }
  uint64_t capacity_bytes() const { return channel_bytes() * uint64_t(channels); }
};

// All values in memory clock cycles (tCK).
struct DramTiming {
  double tck_ns = 1.0;
  int burst_cycles = 4;  // data-bus cycles of one burst (BL / 2 for DDR)
  int cl = 0, cwl = 0;
  int rcd_read = 0, rcd_write = 0;
  int rp = 0, ras = 0, rc = 0;
  int ccd_s = 0, ccd_l = 0;
  int rrd_s = 0, rrd_l = 0, faw = 0;
  int wr = 0, rtp = 0, wtr_s = 0, wtr_l = 0;
  int rtrs = 0;  // extra data-bus turnaround between a read and a following write
  int rfc = 0, refi = 0;
  // Per-bank refresh (REFpb, HBM2's single-bank refresh): the bank is busy this long after its
  // REFpb; 0 where the preset gives none (its controller must then refresh all banks at once).
  int rfc_pb = 0;
  // Command bus: "dual" HBM-style separate row and column buses, or one shared bus.
  bool dual_command_bus = true;
  int act_command_cycles = 1;     // bus cycles an ACT occupies (Ramulator's HBM2 uses 2)
  int column_command_cycles = 1;  // bus cycles a RD/WR occupies (LPDDR4: 4, multiplexed CA)
  int row_command_cycles = 1;     // bus cycles a PRE/REF occupies (LPDDR4: 2)

  // Derived command-to-command delays (see dram_timing.hpp for where each applies).
  int read_to_read_s() const { return ccd_s > burst_cycles ? ccd_s : burst_cycles; }
  int read_to_read_l() const { return ccd_l > burst_cycles ? ccd_l : burst_cycles; }
  int read_to_write() const { return cl + burst_cycles - cwl + rtrs; }
  int write_to_read_s() const { return cwl + burst_cycles + wtr_s; }
  int write_to_read_l() const { return cwl + burst_cycles + wtr_l; }
  int write_to_precharge() const { return cwl + burst_cycles + wr; }
  int read_latency() const { return cl + burst_cycles; }
  int write_latency() const { return cwl + burst_cycles; }
};

struct ControllerConfig {
  int read_queue_entries = 32;
  int write_queue_entries = 32;
  // Write draining: switch to writes when the write queue holds more than high * entries (or no
  // read is waiting), back to reads when it holds fewer than low * entries.
  double write_high_watermark = 0.8;
  double write_low_watermark = 0.2;
  PagePolicy page_policy = PagePolicy::kOpen;
  // Field order from most to least significant bit, DRAMsim3 style: two letters per field,
  // ro(w) ch(annel) ra/pc (pseudo-channel) bg (bank group) ba(nk) co(lumn).
  std::string address_mapping = "rorabgbachco";
  bool refresh = true;
  RefreshMode refresh_mode = RefreshMode::kAllBank;
  // Cycles between a request's arrival and the first cycle the scheduler may act on it
  // (DRAMsim3 takes one controller cycle).
  int frontend_latency_cycles = 1;
  // Scheduling evaluates only the cycles where something can change (event) or every cycle
  // (cycle, for proving the two identical in tests).
  bool clock_by_clock = false;
};

// Per-event energies in pJ and per-cycle background in pJ/cycle, derived from IDD currents with
// the Micron TN-41-01 method as DRAMsim3 applies it (see docs/memory.md).
struct DramEnergy {
  std::string source;
  double vdd_v = 0;
  double idd0_ma = 0, idd2n_ma = 0, idd3n_ma = 0, idd4r_ma = 0, idd4w_ma = 0, idd5ab_ma = 0;

  double act_pj = 0;                // ACT + its PRE
  double read_pj = 0;               // one read burst on one pseudo-channel
  double write_pj = 0;              // one write burst on one pseudo-channel
  double refresh_pj = 0;            // one REF command: all banks of a pseudo-channel, or one bank
  double active_standby_pj = 0;     // per cycle, channel with a row open
  double precharge_standby_pj = 0;  // per cycle, channel with every bank closed
};

struct MemoryConfig {
  std::string name;
  std::string description;
  std::string source;
  std::string file;  // where it was read from
  DramOrganization org;
  DramTiming timing;
  ControllerConfig controller;
  DramEnergy energy;

  // Data-bus peak of the whole memory (all channels and pseudo-channels), GB/s.
  double peak_bandwidth_gbps() const;
  // Cycles between two refresh commands of one pseudo-channel: tREFI, or tREFI / banks per
  // pseudo-channel with per-bank refresh (each bank still refreshed once per tREFI).
  int refresh_interval() const {
    return controller.refresh_mode == RefreshMode::kPerBank
               ? timing.refi / org.banks_per_pseudo_channel()
               : timing.refi;
  }
};

// The fully resolved config in the preset file format (parse_memory_config() reads it back).
std::string memory_config_to_json_text(const MemoryConfig& config);

// Reads and validates a preset file.
MemoryConfig load_memory_config(const std::string& path);
// Parses preset JSON text; `origin` names it in error messages.
MemoryConfig parse_memory_config(const std::string& text, const std::string& origin);

// `spec` is a preset name ("hbm2") or a path to a .json file, found as every preset is
// (support/presets.hpp).
MemoryConfig resolve_memory_config(const std::string& spec);

}  // namespace npusim::dram
