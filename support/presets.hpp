// Presets: the named JSON files npusim ships (configs/hw/*.json, configs/memory/*.json), compiled
// into the binary (support/embedded_files.hpp), so a relocated binary needs no configs folder.
//
// Contract: one lookup for every kind of preset. A spec is a preset name or a path to a JSON file;
// a name is looked up first in $NPUSIM_CONFIG_DIR/<kind>/<name>.json (when that variable is set, so
// users can edit or add presets without rebuilding), then among the built-in presets; anything
// else is read as a file. find_preset() never throws for a missing preset: the caller names the
// flag or JSON pointer the spec came from, with preset_not_found() saying what exists.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace npusim {

struct PresetFile {
  std::string text;
  std::string origin;  // "configs/<kind>/<name>.json" for a built-in preset, else the file's path
};

// `kind`: "hw" or "memory". nullopt when `spec` is neither a preset nor a readable file.
std::optional<PresetFile> find_preset(const std::string& kind, const std::string& spec);
// The preset names of `kind`: the built-in ones in their order, then the names only
// $NPUSIM_CONFIG_DIR/<kind> holds, sorted.
std::vector<std::string> preset_names(const std::string& kind);
// "no such file and no such preset (presets: a, b, c)", the end of a message about a spec.
std::string preset_not_found(const std::string& kind);

}  // namespace npusim
