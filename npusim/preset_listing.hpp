// `npusim presets`: one entry per built-in hardware preset, a headline and labelled facts (peak
// throughput per data type, buffer sizes, off-chip bandwidth). A new figure of a preset (e.g. its
// technology node or area) is one more PresetFact pushed in preset_facts().
#pragma once

#include <string>
#include <vector>

#include "arch/hw_config.hpp"

namespace npusim {

struct PresetFact {
  std::string label;  // "peak", "buffers", "off-chip", ...
  std::string value;
};

// The matrix unit(s) and clock in a few words: "256x256 ws systolic array x1 at 700 MHz".
std::string preset_headline(const HwConfig& hw);
std::vector<PresetFact> preset_facts(const HwConfig& hw);
// The listing entry: "name  headline" on a line starting with the name, then one indented line
// per fact and one for the description (scripts read the names as the first word of the lines
// that start with a lowercase letter).
std::string format_preset_entry(const std::string& name, const HwConfig& hw);

}  // namespace npusim
