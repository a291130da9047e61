#include "support/text_escape.hpp"

#include <fmt/format.h>

#include <utility>

#include "support/embedded_files.hpp"
#include "support/error.hpp"

namespace npusim {

namespace {

// Length of the well-formed UTF-8 sequence at text[i], or 0 if the byte there starts none.
size_t sequence_length(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char b0 = byte(i);
  if (b0 < 0x80) return 1;
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    if (b0 == 0xE0) lo = 0xA0;  // overlong
    if (b0 == 0xED) hi = 0x9F;  // surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    if (b0 == 0xF0) lo = 0x90;  // overlong
    if (b0 == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    return 0;
  }
  if (i + n > text.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return n;
}

std::string escape(std::string_view text, bool controls) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const unsigned char b = static_cast<unsigned char>(text[i]);
    const size_t n = sequence_length(text, i);
    if (n == 0 || (controls && (b < 0x20 || b == 0x7F))) {
      out += fmt::format("\\x{:02X}", b);
      ++i;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

bool needs_escape(const nlohmann::json& j) {
  if (j.is_string()) return !is_valid_utf8(j.get_ref<const std::string&>());
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) {
      if (!is_valid_utf8(k) || needs_escape(v)) return true;
    }
  } else if (j.is_array()) {
    for (const auto& v : j) {
      if (needs_escape(v)) return true;
    }
  }
  return false;
}

}  // namespace

bool is_valid_utf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const size_t n = sequence_length(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string escape_invalid_utf8(std::string_view text) {
  return is_valid_utf8(text) ? std::string(text) : escape(text, false);
}

std::string printable_text(std::string_view text) { return escape(text, true); }

void escape_invalid_utf8(nlohmann::json& j) {
  if (j.is_string()) {
    auto& s = j.get_ref<std::string&>();
    if (!is_valid_utf8(s)) s = escape(s, false);
  } else if (j.is_object()) {
    if (!needs_escape(j)) return;
    nlohmann::json fixed = nlohmann::json::object();
    for (auto& [k, v] : j.items()) {
      escape_invalid_utf8(v);
      // Two keys that differ only in invalid bytes could meet here; the later one keeps its value
      // under a key made unique, so no figure is lost.
      std::string key = escape_invalid_utf8(k);
      while (fixed.contains(key)) key += "~";
      fixed[key] = std::move(v);
    }
    j = std::move(fixed);
  } else if (j.is_array()) {
    for (auto& v : j) escape_invalid_utf8(v);
  }
}

std::string dump_json(const nlohmann::json& j, int indent) {
  if (!needs_escape(j)) return j.dump(indent);
  nlohmann::json copy = j;
  escape_invalid_utf8(copy);
  return copy.dump(indent);
}

std::string html_page_with_data(const std::string& page, const nlohmann::json& data) {
  const EmbeddedFile* file = find_embedded_file("html", page);
  NPUSIM_CHECK(file != nullptr, "html page '{}' is not embedded", page);
  std::string html = file->text;
  // What the pages share, where a page asks for it: the chart helpers (traces/html/charts.js) in
  // its script and their styles (traces/html/chart_styles.css) in its <style>.
  for (const auto& [marker, shared] :
       {std::pair<std::string, std::string>{"@NPUSIM_CHARTS_JS@", "charts"},
        {"@NPUSIM_CHART_STYLES@", "chart_styles"}}) {
    if (const size_t c = html.find(marker); c != std::string::npos) {
      const EmbeddedFile* text = find_embedded_file("html", shared);
      NPUSIM_CHECK(text != nullptr, "html page '{}': {} is not embedded", page, shared);
      html.replace(c, marker.size(), text->text);
    }
  }
  const std::string marker = "@NPUSIM_REPORT_DATA@";
  const size_t at = html.find(marker);
  NPUSIM_CHECK(at != std::string::npos, "html page '{}' has no data marker", page);
  const std::string dumped = dump_json(data);
  std::string text;
  text.reserve(dumped.size());
  for (size_t i = 0; i < dumped.size(); ++i) {
    text += dumped[i];
    if (dumped[i] == '<' && i + 1 < dumped.size() && dumped[i + 1] == '/') text += '\\';
  }
  html.replace(at, marker.size(), text);
  return html;
}

}  // namespace npusim
