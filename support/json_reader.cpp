#include "support/json_reader.hpp"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "support/error.hpp"

namespace npusim {

json parse_json_text(const std::string& text, const std::string& origin) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    // Locate the byte offset nlohmann reports as a line and column.
    size_t line = 1, column = 1;
    for (size_t i = 0; i + 1 < e.byte && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    std::string what = e.what();
    auto pos = what.find("syntax error");
    if (pos != std::string::npos) what = what.substr(pos);
    throw UserError(fmt::format("{}:{}:{}: malformed JSON: {}", origin, line, column, what));
  } catch (const json::out_of_range& e) {
    // A number too large for a double (found by fuzzing: "7e777777").
    std::string what = e.what();
    auto pos = what.find("] ");
    if (pos != std::string::npos) what = what.substr(pos + 2);
    throw UserError(fmt::format("{}: malformed JSON: {}", origin, what));
  }
}

json parse_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(fmt::format("{}: cannot open file", path));
  std::stringstream buffer;
  buffer << in.rdbuf();
  return parse_json_text(buffer.str(), path);
}

void JsonDiagnostics::error(const std::string& pointer, const std::string& message) {
  errors_.push_back(fmt::format("{}: {}: {}", file_, pointer.empty() ? "/" : pointer, message));
}

void JsonDiagnostics::throw_if_errors() const {
  if (!errors_.empty()) throw UserErrors(errors_);
}

std::string json_pointer_append(const std::string& pointer, const std::string& key) {
  std::string escaped;
  for (char c : key) {
    if (c == '~') {
      escaped += "~0";
    } else if (c == '/') {
      escaped += "~1";
    } else {
      escaped += c;
    }
  }
  return pointer + "/" + escaped;
}

std::string json_pointer_append(const std::string& pointer, size_t index) {
  return pointer + "/" + std::to_string(index);
}

std::string json_type_name(const json& value) {
  switch (value.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "an integer";
    case json::value_t::number_float:
      return "a number";
    case json::value_t::string:
      return "a string";
    case json::value_t::array:
      return "an array";
    case json::value_t::object:
      return "an object";
    default:
      return "an unsupported value";
  }
}

namespace {
bool is_integral(const json& v) {
  if (v.is_number_integer() || v.is_number_unsigned()) return true;
  if (v.is_number_float()) {
    double d = v.get<double>();
    return std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e15;
  }
  return false;
}
int64_t as_integer(const json& v) {
  if (v.is_number_float()) return static_cast<int64_t>(v.get<double>());
  if (v.is_number_unsigned()) {
    auto u = v.get<uint64_t>();
    return u > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(u);
  }
  return v.get<int64_t>();
}
std::string allowed_list(std::initializer_list<const char*> allowed) {
  std::string out;
  for (const char* a : allowed) {
    if (!out.empty()) out += ", ";
    out += fmt::format("\"{}\"", a);
  }
  return out;
}
}  // namespace

ObjectReader::ObjectReader(JsonDiagnostics& diag, const json* node, std::string pointer,
                           bool required)
    : diag_(diag), node_(node), pointer_(std::move(pointer)) {
  if (node_ == nullptr) {
    if (required) diag_.error(pointer_, "required object is missing");
    return;
  }
  if (!node_->is_object()) {
    diag_.error(pointer_, fmt::format("expected an object, got {}", json_type_name(*node_)));
    node_ = nullptr;
  }
}

bool ObjectReader::has(const std::string& key) const {
  return node_ != nullptr && node_->contains(key);
}

const json* ObjectReader::lookup(const std::string& key, bool required) {
  known_.insert(key);
  if (node_ != nullptr) {
    auto it = node_->find(key);
    if (it != node_->end()) return &*it;
  }
  if (required && node_ != nullptr) diag_.error(pointer_of(key), "required key is missing");
  return nullptr;
}

const json* ObjectReader::raw(const std::string& key) { return lookup(key, false); }

std::optional<int64_t> ObjectReader::integer_required(const std::string& key, int64_t min,
                                                      int64_t max) {
  const json* v = lookup(key, true);
  if (v == nullptr) return std::nullopt;
  if (!is_integral(*v)) {
    diag_.error(pointer_of(key), fmt::format("expected an integer in [{}, {}], got {}", min, max,
                                             json_type_name(*v)));
    return std::nullopt;
  }
  int64_t x = as_integer(*v);
  if (x < min || x > max) {
    diag_.error(pointer_of(key),
                fmt::format("expected an integer in [{}, {}], got {}", min, max, x));
    return std::nullopt;
  }
  return x;
}

int64_t ObjectReader::integer(const std::string& key, int64_t fallback, int64_t min, int64_t max) {
  if (!has(key)) {
    known_.insert(key);
    return fallback;
  }
  return integer_required(key, min, max).value_or(fallback);
}

std::optional<double> ObjectReader::number_required(const std::string& key, double min,
                                                    double max) {
  const json* v = lookup(key, true);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number()) {
    diag_.error(pointer_of(key),
                fmt::format("expected a number in [{}, {}], got {}", min, max, json_type_name(*v)));
    return std::nullopt;
  }
  double x = v->get<double>();
  if (!(x >= min && x <= max)) {
    diag_.error(pointer_of(key), fmt::format("expected a number in [{}, {}], got {}", min, max, x));
    return std::nullopt;
  }
  return x;
}

double ObjectReader::number(const std::string& key, double fallback, double min, double max) {
  if (!has(key)) {
    known_.insert(key);
    return fallback;
  }
  return number_required(key, min, max).value_or(fallback);
}

bool ObjectReader::boolean(const std::string& key, bool fallback) {
  const json* v = lookup(key, false);
  if (v == nullptr) return fallback;
  if (!v->is_boolean()) {
    diag_.error(pointer_of(key), fmt::format("expected true or false, got {}", json_type_name(*v)));
    return fallback;
  }
  return v->get<bool>();
}

std::optional<std::string> ObjectReader::string_required(const std::string& key) {
  const json* v = lookup(key, true);
  if (v == nullptr) return std::nullopt;
  if (!v->is_string()) {
    diag_.error(pointer_of(key), fmt::format("expected a string, got {}", json_type_name(*v)));
    return std::nullopt;
  }
  return v->get<std::string>();
}

std::string ObjectReader::string(const std::string& key, const std::string& fallback) {
  if (!has(key)) {
    known_.insert(key);
    return fallback;
  }
  return string_required(key).value_or(fallback);
}

std::optional<std::string> ObjectReader::choice_required(
    const std::string& key, std::initializer_list<const char*> allowed) {
  const json* v = lookup(key, true);
  if (v == nullptr) return std::nullopt;
  if (v->is_string()) {
    auto s = v->get<std::string>();
    for (const char* a : allowed) {
      if (s == a) return s;
    }
    diag_.error(pointer_of(key),
                fmt::format("expected one of {}, got \"{}\"", allowed_list(allowed), s));
    return std::nullopt;
  }
  diag_.error(pointer_of(key),
              fmt::format("expected one of {}, got {}", allowed_list(allowed), json_type_name(*v)));
  return std::nullopt;
}

std::string ObjectReader::choice(const std::string& key, const std::string& fallback,
                                 std::initializer_list<const char*> allowed) {
  if (!has(key)) {
    known_.insert(key);
    return fallback;
  }
  return choice_required(key, allowed).value_or(fallback);
}

std::vector<int64_t> ObjectReader::integer_list(const std::string& key, size_t min_len,
                                                size_t max_len, int64_t min, int64_t max,
                                                bool required) {
  const json* v = lookup(key, required);
  std::vector<int64_t> out;
  if (v == nullptr) return out;
  std::string expectation =
      min_len == max_len
          ? fmt::format("expected a list of {} integers in [{}, {}]", min_len, min, max)
          : fmt::format("expected a list of {} to {} integers in [{}, {}]", min_len, max_len, min,
                        max);
  if (!v->is_array() || v->size() < min_len || v->size() > max_len) {
    diag_.error(pointer_of(key),
                fmt::format("{}, got {}{}", expectation, json_type_name(*v),
                            v->is_array() ? fmt::format(" of length {}", v->size()) : ""));
    return out;
  }
  bool ok = true;
  for (size_t i = 0; i < v->size(); ++i) {
    const json& e = (*v)[i];
    if (!is_integral(e) || as_integer(e) < min || as_integer(e) > max) {
      diag_.error(json_pointer_append(pointer_of(key), i),
                  fmt::format("expected an integer in [{}, {}], got {}", min, max,
                              is_integral(e) ? std::to_string(as_integer(e)) : json_type_name(e)));
      ok = false;
      continue;
    }
    out.push_back(as_integer(e));
  }
  if (!ok) out.clear();
  return out;
}

std::vector<std::string> ObjectReader::string_list(const std::string& key, bool required) {
  const json* v = lookup(key, required);
  std::vector<std::string> out;
  if (v == nullptr) return out;
  if (!v->is_array()) {
    diag_.error(pointer_of(key),
                fmt::format("expected a list of strings, got {}", json_type_name(*v)));
    return out;
  }
  for (size_t i = 0; i < v->size(); ++i) {
    const json& e = (*v)[i];
    if (!e.is_string()) {
      diag_.error(json_pointer_append(pointer_of(key), i),
                  fmt::format("expected a string, got {}", json_type_name(e)));
      continue;
    }
    out.push_back(e.get<std::string>());
  }
  return out;
}

ObjectReader ObjectReader::object(const std::string& key, bool required) {
  const json* v = lookup(key, required);
  return ObjectReader(diag_, v, pointer_of(key), false);
}

void ObjectReader::finish() {
  if (node_ == nullptr) return;
  for (auto it = node_->begin(); it != node_->end(); ++it) {
    if (known_.count(it.key()) == 0) {
      std::string keys;
      for (const auto& k : known_) {
        if (!keys.empty()) keys += ", ";
        keys += k;
      }
      diag_.error(pointer_of(it.key()),
                  fmt::format("unknown key \"{}\" (known keys here: {})", it.key(), keys));
    }
  }
}

}  // namespace npusim
