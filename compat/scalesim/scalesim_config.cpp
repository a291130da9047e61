#include "compat/scalesim/scalesim_config.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <vector>

#include "support/error.hpp"

namespace npusim::scalesim {

const char* dataflow_name(Dataflow dataflow) {
  switch (dataflow) {
    case Dataflow::kOutputStationary:
      return "os";
    case Dataflow::kWeightStationary:
      return "ws";
    case Dataflow::kInputStationary:
      return "is";
  }
  return "?";
}

namespace {

std::string trim(const std::string& s) {
  size_t b = 0;
  size_t e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

struct Entry {
  std::string key;  // as written
  std::string value;
  int line = 0;
};

// section (lower case) -> key (lower case, configparser is case-insensitive on keys) -> entry
using Ini = std::map<std::string, std::map<std::string, Entry>>;

struct SectionInfo {
  std::string name;  // as written
  int line = 0;
};

class ConfigReader {
 public:
  ConfigReader(const std::string& text, const std::string& path) : path_(path) { parse(text); }

  Config build(std::string* warnings) {
    Config config;
    require_section("general");
    require_section("architecture_presets");
    require_section("run_presets");

    if (auto e = get("general", "run_name", true)) {
      config.run_name = e->value;
      if (config.run_name.empty()) {
        error(*e, "expected a non-empty name", e->value);
      } else if (config.run_name.find('/') != std::string::npos || config.run_name == "." ||
                 config.run_name == "..") {
        error(*e, "expected a plain directory name without '/'", e->value);
      }
    }
    config.array_rows = positive("architecture_presets", "ArrayHeight", 0);
    config.array_cols = positive("architecture_presets", "ArrayWidth", 0);
    config.ifmap_sram_kb = positive("architecture_presets", "IfmapSramSzkB", 0);
    config.filter_sram_kb = positive("architecture_presets", "FilterSramSzkB", 0);
    config.ofmap_sram_kb = positive("architecture_presets", "OfmapSramSzkB", 0);
    config.ifmap_offset = non_negative("architecture_presets", "IfmapOffset", 0);
    config.filter_offset = non_negative("architecture_presets", "FilterOffset", 10000000);
    config.ofmap_offset = non_negative("architecture_presets", "OfmapOffset", 20000000);
    config.memory_banks = positive("architecture_presets", "MemoryBanks", 1, /*required=*/false);

    if (auto e = get("architecture_presets", "Dataflow", true)) {
      if (e->value == "os") {
        config.dataflow = Dataflow::kOutputStationary;
      } else if (e->value == "ws") {
        config.dataflow = Dataflow::kWeightStationary;
      } else if (e->value == "is") {
        config.dataflow = Dataflow::kInputStationary;
      } else {
        error(*e, "expected os, ws or is", e->value);
      }
    }
    if (auto e = get("run_presets", "InterfaceBandwidth", true)) {
      if (e->value == "CALC") {
        config.bandwidth_mode = BandwidthMode::kCalc;
      } else if (e->value == "USER") {
        config.bandwidth_mode = BandwidthMode::kUser;
      } else {
        error(*e, "expected CALC or USER", e->value);
      }
    }
    // Bandwidth is a comma-separated list; SCALE-Sim reads it only in USER mode and uses the
    // first value. In CALC mode it is ignored, but if present it must still be well formed.
    const bool user = config.bandwidth_mode == BandwidthMode::kUser;
    if (auto e = get("architecture_presets", "Bandwidth", user)) {
      std::stringstream ss(e->value);
      std::string item;
      bool first = true;
      bool ok = true;
      while (std::getline(ss, item, ',')) {
        auto v = parse_int(trim(item));
        if (!v || *v <= 0) {
          error(*e, "expected a comma-separated list of positive integers (words per cycle)",
                e->value);
          ok = false;
          break;
        }
        if (first) config.user_bandwidth_words = *v;
        first = false;
      }
      if (ok && first) {
        error(*e, "expected a comma-separated list of positive integers (words per cycle)",
              e->value);
      }
    }

    report_unknown(warnings);
    if (!errors_.empty()) throw UserErrors(errors_);
    return config;
  }

 private:
  static std::optional<int64_t> parse_int(const std::string& s) {
    if (s.empty()) return std::nullopt;
    int64_t v = 0;
    const char* b = s.data();
    const char* e = s.data() + s.size();
    if (*b == '+') ++b;
    auto [p, ec] = std::from_chars(b, e, v);
    if (ec != std::errc() || p != e) return std::nullopt;
    return v;
  }

  void parse(const std::string& text) {
    std::istringstream in(text);
    std::string raw;
    int line_no = 0;
    std::string section;
    std::string last_key;
    while (std::getline(in, raw)) {
      ++line_no;
      if (!raw.empty() && raw.back() == '\r') raw.pop_back();
      std::string line = trim(raw);
      if (line.empty() || line[0] == '#' || line[0] == ';') continue;
      // configparser continuation lines: indented text continues the previous value.
      if (!section.empty() && !last_key.empty() &&
          std::isspace(static_cast<unsigned char>(raw[0]))) {
        auto& entry = ini_[section][last_key];
        entry.value += "\n" + line;
        continue;
      }
      if (line.front() == '[') {
        if (line.back() != ']') {
          errors_.push_back(fmt::format("{}:{}: expected a section header like [general], got '{}'",
                                        path_, line_no, line));
          continue;
        }
        std::string name = trim(line.substr(1, line.size() - 2));
        section = lower(name);
        if (sections_.count(section)) {
          errors_.push_back(fmt::format("{}:{}: section [{}] appears twice (first at line {})",
                                        path_, line_no, name, sections_[section].line));
        }
        sections_[section] = SectionInfo{name, line_no};
        ini_[section];
        last_key.clear();
        continue;
      }
      size_t sep = line.find_first_of(":=");
      if (sep == std::string::npos) {
        errors_.push_back(fmt::format("{}:{}: expected 'key = value' or 'key : value', got '{}'",
                                      path_, line_no, line));
        continue;
      }
      if (section.empty()) {
        errors_.push_back(
            fmt::format("{}:{}: '{}' appears before any [section] header", path_, line_no, line));
        continue;
      }
      std::string key = trim(line.substr(0, sep));
      std::string lkey = lower(key);
      auto& sec = ini_[section];
      if (sec.count(lkey)) {
        errors_.push_back(fmt::format("{}:{}: field '{}' appears twice in [{}] (first at line {})",
                                      path_, line_no, key, sections_[section].name,
                                      sec[lkey].line));
      }
      sec[lkey] = Entry{key, trim(line.substr(sep + 1)), line_no};
      last_key = lkey;
    }
  }

  void require_section(const std::string& name) {
    if (!sections_.count(name)) {
      errors_.push_back(fmt::format("{}: missing section [{}]", path_, name));
      missing_sections_.push_back(name);
    }
  }

  const Entry* get(const std::string& section, const std::string& key, bool required) {
    known_[section].push_back(lower(key));
    auto s = ini_.find(section);
    if (s == ini_.end()) return nullptr;  // already reported as a missing section
    auto k = s->second.find(lower(key));
    if (k == s->second.end()) {
      if (required) {
        errors_.push_back(fmt::format("{}: section [{}] (line {}): missing field '{}'", path_,
                                      sections_[section].name, sections_[section].line, key));
      }
      return nullptr;
    }
    return &k->second;
  }

  void error(const Entry& e, const std::string& expected, const std::string& got) {
    errors_.push_back(
        fmt::format("{}:{}: field '{}': {}, got '{}'", path_, e.line, e.key, expected, got));
  }

  int64_t integer(const std::string& section, const std::string& key, int64_t fallback,
                  bool required, int64_t min_value, const char* expected) {
    const Entry* e = get(section, key, required);
    if (!e) return fallback;
    auto v = parse_int(e->value);
    if (!v || *v < min_value) {
      error(*e, expected, e->value);
      return fallback;
    }
    return *v;
  }
  int64_t positive(const std::string& section, const std::string& key, int64_t fallback,
                   bool required = true) {
    return integer(section, key, fallback, required, 1, "expected a positive integer");
  }
  int64_t non_negative(const std::string& section, const std::string& key, int64_t fallback) {
    return integer(section, key, fallback, true, 0, "expected a non-negative integer");
  }

  void report_unknown(std::string* warnings) {
    if (!warnings) return;
    // SCALE-Sim ignores keys it does not read (newer versions add sections such as [sparsity]);
    // npusim does the same but says so, so that a misspelt optional key does not go unnoticed.
    static const std::vector<std::string> kKnownExtra = {"topologycsvloc"};
    for (const auto& [section, entries] : ini_) {
      auto known = known_.find(section);
      if (known == known_.end()) {
        if (section != "network_presets") {
          *warnings += fmt::format("{}:{}: warning: section [{}] is not used by npusim\n", path_,
                                   sections_[section].line, sections_[section].name);
        }
        continue;
      }
      for (const auto& [key, entry] : entries) {
        if (std::find(known->second.begin(), known->second.end(), key) == known->second.end() &&
            std::find(kKnownExtra.begin(), kKnownExtra.end(), key) == kKnownExtra.end()) {
          *warnings += fmt::format("{}:{}: warning: field '{}' in [{}] is not used by npusim\n",
                                   path_, entry.line, entry.key, sections_[section].name);
        }
      }
    }
  }

  std::string path_;
  Ini ini_;
  std::map<std::string, SectionInfo> sections_;
  std::map<std::string, std::vector<std::string>> known_;
  std::vector<std::string> missing_sections_;
  std::vector<std::string> errors_;
};

}  // namespace

Config parse_config(const std::string& text, const std::string& path, std::string* warnings) {
  ConfigReader reader(text, path);
  return reader.build(warnings);
}

Config read_config(const std::string& path, std::string* warnings) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(fmt::format("{}: cannot open the SCALE-Sim config file", path));
  std::stringstream buffer;
  buffer << in.rdbuf();
  return parse_config(buffer.str(), path, warnings);
}

}  // namespace npusim::scalesim
