#include "support/stats.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "support/error.hpp"
#include "support/text_escape.hpp"

namespace npusim::stats {

namespace {

// "a.b.c" -> the json_pointer "/a/b/c".
nlohmann::json::json_pointer pointer(const std::string& dotted) {
  std::string p = "/" + dotted;
  std::replace(p.begin(), p.end(), '.', '/');
  return nlohmann::json::json_pointer(p);
}

}  // namespace

void Registry::add(Entry e) {
  NPUSIM_CHECK(!e.d.path.empty() && e.d.path.front() != '.' && e.d.path.back() != '.',
               "stats: malformed path '{}'", e.d.path);
  NPUSIM_CHECK(!e.d.description.empty(), "stats: '{}' has no description", e.d.path);
  // `a` is "<b>." followed by something (compared in place: a run registers some 700 figures,
  // each checked against those before it).
  const auto below = [](const std::string& a, const std::string& b) {
    return a.size() > b.size() && a[b.size()] == '.' && a.compare(0, b.size(), b) == 0;
  };
  for (const Entry& x : entries_) {
    NPUSIM_CHECK(x.d.path != e.d.path, "stats: '{}' registered twice", e.d.path);
    // A path may not be both a figure and the parent of figures.
    NPUSIM_CHECK(!below(x.d.path, e.d.path) && !below(e.d.path, x.d.path),
                 "stats: '{}' and '{}' overlap", x.d.path, e.d.path);
    NPUSIM_CHECK(e.table.empty() || x.table != e.table || x.rows == e.rows,
                 "stats: table '{}' registered with {} and {} rows", e.table, x.rows, e.rows);
  }
  entries_.push_back(std::move(e));
}

void Registry::counter(const std::string& path, const std::string& unit,
                       const std::string& description, const uint64_t& counter) {
  const uint64_t* c = &counter;
  add({{path, unit, description}, [c] { return Value(*c); }, {}, {}, 0, {}});
}

void Registry::derived(const std::string& path, const std::string& unit,
                       const std::string& description, std::function<Value()> value) {
  add({{path, unit, description}, std::move(value), {}, {}, 0, {}});
}

void Registry::value(const std::string& path, const std::string& unit,
                     const std::string& description, Value v) {
  add({{path, unit, description}, [v = std::move(v)] { return v; }, {}, {}, 0, {}});
}

void Registry::column(const std::string& table, size_t rows, const std::string& key,
                      const std::string& unit, const std::string& description,
                      std::function<Value(size_t)> value) {
  add({{table + "[]." + key, unit, description}, {}, table, key, rows, std::move(value)});
}

void Registry::include(const std::string& prefix, const Registry& other) {
  for (const Entry& e : other.entries_) {
    Entry copy = e;
    copy.d.path = prefix + "." + e.d.path;
    if (!copy.table.empty()) copy.table = prefix + "." + e.table;
    add(std::move(copy));
  }
}

nlohmann::json Registry::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (const Entry& e : entries_) {
    if (e.column) {
      nlohmann::json& t = j[pointer(e.table)];
      if (!t.is_array()) t = nlohmann::json::array();
      if (t.size() < e.rows)
        t.get_ref<nlohmann::json::array_t&>().resize(e.rows, nlohmann::json::object());
      for (size_t i = 0; i < e.rows; ++i) t[i][e.key] = e.column(i);
    } else {
      j[pointer(e.d.path)] = e.scalar();
    }
  }
  // Names (a layer's, a network's) are bytes; stats.json and everything formatted from it hold
  // valid UTF-8 (support/text_escape.hpp).
  escape_invalid_utf8(j);
  return j;
}

std::vector<Descriptor> Registry::descriptors() const {
  std::vector<Descriptor> out;
  for (const Entry& e : entries_) out.push_back(e.d);
  return out;
}

std::string Registry::markdown() const {
  std::string out = "| key | unit | meaning |\n|---|---|---|\n";
  for (const Entry& e : entries_) {
    out += fmt::format("| `{}` | {} | {} |\n", e.d.path, e.d.unit.empty() ? "-" : e.d.unit,
                       e.d.description);
  }
  return out;
}

namespace {
void flatten(const nlohmann::json& j, const std::string& prefix,
             const std::set<std::string>& leaves, std::set<std::string>& out) {
  if (!prefix.empty() && leaves.count(prefix)) {
    out.insert(prefix);
    return;
  }
  if (j.is_object()) {
    for (const auto& [k, v] : j.items())
      flatten(v, prefix.empty() ? k : prefix + "." + k, leaves, out);
    return;
  }
  if (j.is_array() && !j.empty() && j.front().is_object()) {
    for (const auto& row : j) flatten(row, prefix + "[]", leaves, out);
    return;
  }
  out.insert(prefix);
}
}  // namespace

std::vector<std::string> flatten_paths(const nlohmann::json& j,
                                       const std::vector<std::string>& leaf_paths) {
  std::set<std::string> out;
  flatten(j, "", std::set<std::string>(leaf_paths.begin(), leaf_paths.end()), out);
  return {out.begin(), out.end()};
}

}  // namespace npusim::stats
