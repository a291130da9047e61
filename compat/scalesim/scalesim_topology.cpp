#include "compat/scalesim/scalesim_topology.hpp"

#include <fmt/core.h>

#include <cctype>
#include <charconv>
#include <fstream>
#include <sstream>

#include "support/error.hpp"

namespace npusim::scalesim {

namespace {

std::string trim(const std::string& s) {
  size_t b = 0;
  size_t e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) {
      out.push_back(s.substr(start));
      break;
    }
    out.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

const char* const kConvFields[] = {"Layer name",    "IFMAP Height", "IFMAP Width",
                                   "Filter Height", "Filter Width", "Channels",
                                   "Num Filter",    "Strides",      "Column Stride"};
const char* const kGemmFields[] = {"Layer", "M", "N", "K"};
// Layers one topology may expand to (depthwise rows become one layer per channel).
constexpr int64_t kMaxLayers = 16384;

}  // namespace

std::vector<Layer> parse_topology(const std::string& text, const std::string& path,
                                  TopologyKind kind) {
  std::vector<Layer> layers;
  std::vector<std::string> errors;
  std::istringstream in(text);
  std::string raw;
  int line_no = 0;
  bool header_seen = false;
  while (std::getline(in, raw)) {
    ++line_no;
    std::string row = trim(raw);
    if (!header_seen) {  // SCALE-Sim skips the first line, whatever it holds
      header_seen = true;
      continue;
    }
    if (row.empty()) continue;
    std::vector<std::string> fields = split(row);
    const std::string tail = trim(fields.back());
    fields.pop_back();  // SCALE-Sim: row.split(',')[:-1]
    for (auto& f : fields) f = trim(f);
    const size_t min_fields = kind == TopologyKind::kConv ? 8 : 4;
    const size_t max_fields = kind == TopologyKind::kConv ? 9 : 4;
    // GEMM files shipped with SCALE-Sim (topologies/GEMM_mnk) write `name,M,N,K` without the
    // trailing comma; four fields are unambiguous, so that form is accepted too.
    if (!tail.empty() && kind == TopologyKind::kGemm && fields.size() == 3) {
      fields.push_back(tail);
    } else if (!tail.empty()) {
      errors.push_back(fmt::format(
          "{}:{}: expected the row to end with ',' (SCALE-Sim ignores the text after the last "
          "comma, here '{}')",
          path, line_no, tail));
      continue;
    }
    if (fields.size() < min_fields || fields.size() > max_fields) {
      errors.push_back(fmt::format(
          "{}:{}: expected {} fields ({}) followed by ',', got {}", path, line_no,
          kind == TopologyKind::kConv ? "8 or 9" : "4",
          kind == TopologyKind::kConv
              ? "name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num "
                "Filter, Strides[, Column Stride]"
              : "name, M, N, K",
          fields.size()));
      continue;
    }
    std::vector<int64_t> values(fields.size(), 0);
    bool ok = true;
    for (size_t i = 1; i < fields.size(); ++i) {
      const std::string& f = fields[i];
      int64_t v = 0;
      auto [p, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
      const char* field_name = kind == TopologyKind::kConv ? kConvFields[i] : kGemmFields[i];
      if (f.empty() || ec != std::errc() || p != f.data() + f.size() || v <= 0) {
        errors.push_back(fmt::format("{}:{}: field '{}': expected a positive integer, got '{}'",
                                     path, line_no, field_name, f));
        ok = false;
      }
      values[i] = v;
    }
    if (fields[0].empty()) {
      errors.push_back(fmt::format("{}:{}: field '{}': expected a layer name, got ''", path,
                                   line_no,
                                   kind == TopologyKind::kConv ? kConvFields[0] : kGemmFields[0]));
      ok = false;
    }
    if (!ok) continue;
    Layer layer;
    layer.name = fields[0];
    if (kind == TopologyKind::kGemm) {
      const int64_t m = values[1], n = values[2], k = values[3];
      layer.ifmap_h = m;
      layer.ifmap_w = k;
      layer.filter_h = 1;
      layer.filter_w = k;
      layer.channels = 1;
      layer.num_filters = n;
      layer.stride_h = layer.stride_w = 1;
      layers.push_back(layer);
      continue;
    }
    layer.ifmap_h = values[1];
    layer.ifmap_w = values[2];
    layer.filter_h = values[3];
    layer.filter_w = values[4];
    layer.channels = values[5];
    layer.num_filters = values[6];
    layer.stride_h = values[7];
    layer.stride_w = fields.size() == 9 ? values[8] : values[7];
    if (layer.filter_h > layer.ifmap_h) {
      errors.push_back(fmt::format(
          "{}:{}: field 'Filter Height': expected at most the IFMAP Height {}, got '{}'", path,
          line_no, layer.ifmap_h, fields[3]));
      continue;
    }
    if (layer.filter_w > layer.ifmap_w) {
      errors.push_back(
          fmt::format("{}:{}: field 'Filter Width': expected at most the IFMAP Width {}, got '{}'",
                      path, line_no, layer.ifmap_w, fields[4]));
      continue;
    }
    // SCALE-Sim treats a layer whose name contains "DP" as depthwise: one layer per channel.
    if (layer.name.find("DP") != std::string::npos) {
      // Bounded, or a short row could ask for billions of layers (found by fuzzing).
      constexpr int64_t kMaxDepthwiseChannels = 65536;
      if (layer.channels > kMaxDepthwiseChannels) {
        errors.push_back(fmt::format(
            "{}:{}: field 'Channels': a depthwise layer (its name contains DP) becomes one layer "
            "per channel; expected at most {}, got '{}'",
            path, line_no, kMaxDepthwiseChannels, fields[5]));
        continue;
      }
      const int64_t channels = layer.channels;
      // And so is the whole file's expansion: the simulation runs every layer.
      if (int64_t(layers.size()) + channels > kMaxLayers) {
        errors.push_back(fmt::format(
            "{}:{}: field 'Channels': this depthwise layer brings the topology to {} layers; "
            "expected at most {} in all",
            path, line_no, int64_t(layers.size()) + channels, kMaxLayers));
        continue;
      }
      layer.channels = 1;
      const std::string base = layer.name;
      for (int64_t c = 0; c < channels; ++c) {
        layers.push_back(layer);
        layers.back().name = base + "Channel_" + std::to_string(c);
      }
      continue;
    }
    layers.push_back(layer);
  }
  if (errors.empty() && layers.empty()) {
    errors.push_back(fmt::format(
        "{}: no layers: expected a header line followed by at least one row like '{}'", path,
        kind == TopologyKind::kConv ? "Conv1, 224, 224, 7, 7, 3, 64, 2,"
                                    : "layer1, 512, 512, 512,"));
  }
  if (!errors.empty()) throw UserErrors(errors);
  return layers;
}

std::vector<Layer> read_topology(const std::string& path, TopologyKind kind) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(fmt::format("{}: cannot open the SCALE-Sim topology file", path));
  std::stringstream buffer;
  buffer << in.rdbuf();
  return parse_topology(buffer.str(), path, kind);
}

}  // namespace npusim::scalesim
