// SCALE-Sim v2 configuration (.cfg, an INI file read by Python's configparser): the array, the
// three SRAMs, the dataflow and the DRAM bandwidth mode. Field names and meanings follow
// SCALE-Sim v2.0.2; see docs/scalesim.md and ../shared/SCALESIM_CONVENTIONS.md.
#pragma once

#include <cstdint>
#include <string>

namespace npusim::scalesim {

enum class Dataflow { kOutputStationary, kWeightStationary, kInputStationary };
enum class BandwidthMode { kCalc, kUser };

const char* dataflow_name(Dataflow dataflow);  // "os", "ws", "is"

struct Config {
  std::string run_name;
  int64_t array_rows = 0;  // ArrayHeight
  int64_t array_cols = 0;  // ArrayWidth
  int64_t ifmap_sram_kb = 0;
  int64_t filter_sram_kb = 0;
  int64_t ofmap_sram_kb = 0;
  int64_t ifmap_offset = 0;
  int64_t filter_offset = 10000000;
  int64_t ofmap_offset = 20000000;
  Dataflow dataflow = Dataflow::kWeightStationary;
  BandwidthMode bandwidth_mode = BandwidthMode::kCalc;
  // Words per cycle of every DRAM interface in USER mode (SCALE-Sim uses only the first value).
  int64_t user_bandwidth_words = 0;
  int64_t memory_banks = 1;  // read and validated, ignored as by SCALE-Sim v2
};

// Reads and validates a SCALE-Sim config file. Throws UserErrors naming the file, line and field
// of every problem found. Unknown keys and sections are reported on `warnings` (one per line).
Config read_config(const std::string& path, std::string* warnings = nullptr);

// Same, from text already in memory; `path` is used in messages only.
Config parse_config(const std::string& text, const std::string& path,
                    std::string* warnings = nullptr);

}  // namespace npusim::scalesim
