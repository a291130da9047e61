// The stats registry: every figure a run reports is registered once, by the unit that counts it,
// with its place in stats.json, its unit and a description (in the spirit of gem5's typed
// statistics). One formatter turns the registry into stats.json (and the `memory` section of
// membench), and the same descriptions generate the key list of docs/stats.md.
//
// Paths are dot-separated object keys ("dma.bursts"). A table (the per-layer figures) is a list of
// rows under one key; its columns are registered as "<table>[].<key>" ("layers[].cycles").
// Counters are read when the registry is formatted, so a unit registers a reference to the counter
// it keeps incrementing during the simulation and the registry must not outlive the units.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace npusim::stats {

struct Descriptor {
  std::string path;         // "dma.bursts", "layers[].cycles"
  std::string unit;         // "cycles", "bytes", "count", "ratio", "GB/s", ... ("" for text)
  std::string description;  // one line, for docs/stats.md and `npusim run --list-stats`
};

class Registry {
 public:
  using Value = nlohmann::json;

  // A counter the registering unit keeps up to date; read when the registry is formatted.
  void counter(const std::string& path, const std::string& unit, const std::string& description,
               const uint64_t& counter);
  // A figure computed when the registry is formatted (a sum over units, an end-of-run figure).
  void derived(const std::string& path, const std::string& unit, const std::string& description,
               std::function<Value()> value);
  // A figure known when it is registered (what ran, a configuration value).
  void value(const std::string& path, const std::string& unit, const std::string& description,
             Value v);
  // A column of `table` (e.g. "layers", `rows` rows): row i of the column is value(i). Every
  // column of a table must be registered with the same number of rows.
  void column(const std::string& table, size_t rows, const std::string& key,
              const std::string& unit, const std::string& description,
              std::function<Value(size_t)> value);

  // Registers everything of `other` under `prefix` ("memory" + "." + path); `other` must outlive
  // this registry's formatting.
  void include(const std::string& prefix, const Registry& other);

  // Evaluates every figure into nested objects (tables as arrays of row objects).
  nlohmann::json to_json() const;
  // Every registered figure, in registration order.
  std::vector<Descriptor> descriptors() const;
  // The markdown table of docs/stats.md: | `path` | unit | description |.
  std::string markdown() const;

 private:
  struct Entry {
    Descriptor d;
    std::function<Value()> scalar;  // scalars
    std::string table, key;         // columns
    size_t rows = 0;
    std::function<Value(size_t)> column;  // columns
  };
  void add(Entry e);
  std::vector<Entry> entries_;
};

// The object keys of a stats.json as registry paths ("a.b", "layers[].c"), sorted, for checking
// that every key written is documented. Arrays of objects become "key[]." prefixes; arrays of
// numbers and objects registered as one value (e.g. a resolved configuration) are leaves when
// `leaf_paths` names them.
std::vector<std::string> flatten_paths(const nlohmann::json& j,
                                       const std::vector<std::string>& leaf_paths = {});

}  // namespace npusim::stats
