// Names are bytes: an ONNX model's node and tensor names, a file name that becomes a network's
// name, are whatever bytes their author wrote, not necessarily UTF-8 (docs/reliability.md "Names
// are bytes"). Every writer of a run's outputs passes them through one of these escapes, so that no
// name can make a writer fail after the simulation and lose the run's results.
//
// Contract: text that is valid UTF-8 (and, for printable_text, has no control characters) comes
// back unchanged; every other byte becomes the four characters \xNN (NN: two upper-case hex
// digits). The result is always valid UTF-8. The escape is not reversible when a valid name
// already holds the text "\xNN"; no output relies on reversing it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace npusim {

// Whether `text` is well-formed UTF-8 (Unicode 15, table 3-7: no overlong forms, no surrogates,
// nothing above U+10FFFF): exactly what nlohmann's dump() accepts.
bool is_valid_utf8(std::string_view text);

// For JSON (stats.json, trace.json, the HTML report's data): each byte that is not part of a
// well-formed UTF-8 sequence as \xNN. JSON then escapes the backslash itself ("\\xFF" on disk).
std::string escape_invalid_utf8(std::string_view text);

// For line-oriented text (report.txt, the terminal, messages): as escape_invalid_utf8, and the
// control characters (bytes below 0x20 and 0x7F) as \xNN too, so a name is one run of visible text
// on one line.
std::string printable_text(std::string_view text);

// Every string and object key of `j` through escape_invalid_utf8, in place.
void escape_invalid_utf8(nlohmann::json& j);

// j.dump(indent) of `j` with its strings and keys through escape_invalid_utf8 (a copy is made
// only when one needs escaping): never throws for a string's bytes.
std::string dump_json(const nlohmann::json& j, int indent = -1);

// The embedded HTML page `page` (traces/html/<page>.html) with `data` in place of its marker
// @NPUSIM_REPORT_DATA@ (inside a <script> element: dump_json(data) with "</", which would end
// the element, written "<\/", the same string to a JSON parser), and the shared chart helpers
// (traces/html/charts.js) and styles (traces/html/chart_styles.css) in place of
// @NPUSIM_CHARTS_JS@ and @NPUSIM_CHART_STYLES@ when the page has them.
std::string html_page_with_data(const std::string& page, const nlohmann::json& data);

}  // namespace npusim
