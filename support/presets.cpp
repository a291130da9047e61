#include "support/presets.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "support/embedded_files.hpp"

namespace npusim {

namespace {

// $NPUSIM_CONFIG_DIR/<kind>, or empty when the variable is not set.
std::filesystem::path user_dir(const std::string& kind) {
  const char* env = std::getenv("NPUSIM_CONFIG_DIR");
  if (env == nullptr || *env == '\0') return {};
  return std::filesystem::path(env) / kind;
}

std::optional<PresetFile> read_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  return PresetFile{std::string(std::istreambuf_iterator<char>(in), {}), path.string()};
}

bool is_name(const std::string& spec) {
  return !spec.empty() && spec.find('/') == std::string::npos && spec != "." && spec != "..";
}

}  // namespace

std::optional<PresetFile> find_preset(const std::string& kind, const std::string& spec) {
  if (is_name(spec)) {
    if (const auto dir = user_dir(kind); !dir.empty()) {
      if (auto file = read_file(dir / (spec + ".json"))) return file;
    }
    if (const EmbeddedFile* preset = find_embedded_file(kind, spec)) {
      return PresetFile{preset->text, fmt::format("configs/{}/{}.json", kind, spec)};
    }
  }
  return read_file(spec);
}

std::vector<std::string> preset_names(const std::string& kind) {
  std::vector<std::string> names = embedded_file_names(kind);
  std::vector<std::string> user;
  std::error_code ec;
  if (const auto dir = user_dir(kind); !dir.empty()) {
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
      const std::string name = entry.path().stem().string();
      if (entry.path().extension() == ".json" &&
          std::find(names.begin(), names.end(), name) == names.end()) {
        user.push_back(name);
      }
    }
  }
  std::sort(user.begin(), user.end());
  names.insert(names.end(), user.begin(), user.end());
  return names;
}

std::string preset_not_found(const std::string& kind) {
  const std::vector<std::string> names = preset_names(kind);
  return fmt::format("no such file and no such preset (presets: {})",
                     names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", ")));
}

}  // namespace npusim
