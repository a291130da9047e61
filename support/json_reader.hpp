// Validated reading of JSON input files.
//
// Contract: every problem in a file is collected (unknown keys, wrong types, out-of-range values,
// cross-field conflicts) and reported together as "file: /json/pointer: what was expected".
// Defaults are declared at the call that reads a key, so each default lives in exactly one place.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace npusim {

using json = nlohmann::json;

// Reads a file and parses it; a syntax error becomes a UserError naming the file, line and column.
json parse_json_file(const std::string& path);
json parse_json_text(const std::string& text, const std::string& origin);

class JsonDiagnostics {
 public:
  explicit JsonDiagnostics(std::string file) : file_(std::move(file)) {}
  void error(const std::string& pointer, const std::string& message);
  bool ok() const { return errors_.empty(); }
  const std::vector<std::string>& errors() const { return errors_; }
  const std::string& file() const { return file_; }
  // Throws UserErrors with every collected message, if there is any.
  void throw_if_errors() const;

 private:
  std::string file_;
  std::vector<std::string> errors_;
};

std::string json_pointer_append(const std::string& pointer, const std::string& key);
std::string json_pointer_append(const std::string& pointer, size_t index);
std::string json_type_name(const json& value);

class ObjectReader {
 public:
  // `node` may be null: then the object is absent and every read returns its default (a required
  // key is reported missing). A node that is not an object is reported once.
  ObjectReader(JsonDiagnostics& diag, const json* node, std::string pointer, bool required = false);

  int64_t integer(const std::string& key, int64_t fallback, int64_t min, int64_t max);
  std::optional<int64_t> integer_required(const std::string& key, int64_t min, int64_t max);
  double number(const std::string& key, double fallback, double min, double max);
  std::optional<double> number_required(const std::string& key, double min, double max);
  bool boolean(const std::string& key, bool fallback);
  std::string string(const std::string& key, const std::string& fallback);
  std::optional<std::string> string_required(const std::string& key);
  std::string choice(const std::string& key, const std::string& fallback,
                     std::initializer_list<const char*> allowed);
  std::optional<std::string> choice_required(const std::string& key,
                                             std::initializer_list<const char*> allowed);
  // A list of integers of length in [min_len, max_len], each in [min, max]; empty when absent.
  std::vector<int64_t> integer_list(const std::string& key, size_t min_len, size_t max_len,
                                    int64_t min, int64_t max, bool required);
  std::vector<std::string> string_list(const std::string& key, bool required);

  ObjectReader object(const std::string& key, bool required = false);
  // The raw value under key (marks it known), or null.
  const json* raw(const std::string& key);
  bool has(const std::string& key) const;

  // Reports every key that no read asked for. Call once, after all reads.
  void finish();

  const std::string& pointer() const { return pointer_; }
  std::string pointer_of(const std::string& key) const {
    return json_pointer_append(pointer_, key);
  }
  JsonDiagnostics& diagnostics() { return diag_; }
  bool present() const { return node_ != nullptr; }

 private:
  const json* lookup(const std::string& key, bool required);

  JsonDiagnostics& diag_;
  const json* node_;
  std::string pointer_;
  std::set<std::string> known_;
};

}  // namespace npusim
