#include "serving/request_trace.hpp"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "support/error.hpp"
#include "support/text_escape.hpp"

namespace npusim::serving {

namespace {

constexpr std::array<const char*, 4> kColumns{"id", "arrival_s", "prompt_tokens", "output_tokens"};
// Bounds that keep a trace's simulation finite and its arithmetic exact.
constexpr int64_t kMaxTokens = int64_t(1) << 24;
constexpr size_t kMaxRequests = size_t(1) << 22;

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

std::vector<std::string> split_fields(const std::string& line) {
  std::vector<std::string> out;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, ',')) out.push_back(trim(field));
  if (!line.empty() && line.back() == ',') out.push_back("");
  return out;
}

bool parse_int(const std::string& s, int64_t& v) {
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, v);
  return ec == std::errc() && p == end;
}

bool parse_seconds(const std::string& s, double& v) {
  if (s.empty()) return false;
  try {
    size_t used = 0;
    v = std::stod(s, &used);
    return used == s.size() && std::isfinite(v);
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

std::vector<Request> parse_request_trace(const std::string& text, const std::string& path) {
  std::vector<std::string> errors;
  std::vector<Request> requests;
  std::map<std::string, int> line_of_id;
  std::istringstream in(text);
  std::string line;
  int line_no = 0;
  std::array<int, kColumns.size()> column_of{};  // field index of each expected column
  bool header = false;
  while (std::getline(in, line)) {
    ++line_no;
    if (trim(line).empty() || trim(line)[0] == '#') continue;
    const auto fields = split_fields(line);
    if (!header) {
      header = true;
      column_of.fill(-1);
      for (size_t f = 0; f < fields.size(); ++f) {
        size_t c = 0;
        while (c < kColumns.size() && fields[f] != kColumns[c]) ++c;
        if (c == kColumns.size() || column_of[c] >= 0) {
          errors.push_back(fmt::format(
              "{}:{}: header column {} '{}': expected each of id, arrival_s, prompt_tokens, "
              "output_tokens once",
              path, line_no, f + 1, printable_text(fields[f])));
          continue;
        }
        column_of[c] = static_cast<int>(f);
      }
      for (size_t c = 0; c < kColumns.size(); ++c) {
        if (column_of[c] < 0) {
          errors.push_back(
              fmt::format("{}:{}: the header has no column '{}' (expected id, "
                          "arrival_s, prompt_tokens, output_tokens)",
                          path, line_no, kColumns[c]));
        }
      }
      if (!errors.empty()) break;
      continue;
    }
    if (fields.size() != kColumns.size()) {
      errors.push_back(
          fmt::format("{}:{}: expected {} fields (id, arrival_s, prompt_tokens, "
                      "output_tokens), got {}",
                      path, line_no, kColumns.size(), fields.size()));
      continue;
    }
    Request r;
    r.line = line_no;
    r.id = fields[column_of[0]];
    const std::string& arrival = fields[column_of[1]];
    const std::string& prompt = fields[column_of[2]];
    const std::string& output = fields[column_of[3]];
    bool ok = true;
    if (r.id.empty()) {
      errors.push_back(fmt::format("{}:{}: column 'id': empty", path, line_no));
      ok = false;
    } else if (auto [it, fresh] = line_of_id.emplace(r.id, line_no); !fresh) {
      errors.push_back(fmt::format("{}:{}: column 'id': '{}' is already the id of line {}", path,
                                   line_no, printable_text(r.id), it->second));
      ok = false;
    }
    if (!parse_seconds(arrival, r.arrival_s) || r.arrival_s < 0) {
      errors.push_back(fmt::format("{}:{}: column 'arrival_s': expected a number >= 0, got '{}'",
                                   path, line_no, printable_text(arrival)));
      ok = false;
    }
    if (!parse_int(prompt, r.prompt_tokens) || r.prompt_tokens < 1 ||
        r.prompt_tokens > kMaxTokens) {
      errors.push_back(
          fmt::format("{}:{}: column 'prompt_tokens': expected an integer in [1, {}], got '{}'",
                      path, line_no, kMaxTokens, printable_text(prompt)));
      ok = false;
    }
    if (!parse_int(output, r.output_tokens) || r.output_tokens < 1 ||
        r.output_tokens > kMaxTokens) {
      errors.push_back(
          fmt::format("{}:{}: column 'output_tokens': expected an integer in [1, {}], got '{}'",
                      path, line_no, kMaxTokens, printable_text(output)));
      ok = false;
    }
    if (ok) requests.push_back(r);
    if (requests.size() > kMaxRequests) {
      errors.push_back(fmt::format("{}:{}: more than {} requests", path, line_no, kMaxRequests));
      break;
    }
  }
  if (errors.empty() && requests.empty()) {
    errors.push_back(fmt::format(
        "{}: no requests: expected the header 'id,arrival_s,prompt_tokens,output_tokens' and at "
        "least one row like 'r0,0.0,128,32'",
        path));
  }
  if (!errors.empty()) throw UserErrors(errors);
  return requests;
}

std::vector<Request> read_request_trace(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(fmt::format("{}: cannot open the request trace", path));
  std::stringstream buffer;
  buffer << in.rdbuf();
  return parse_request_trace(buffer.str(), path);
}

}  // namespace npusim::serving
