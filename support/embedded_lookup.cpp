#include "support/embedded_files.hpp"

namespace npusim {

const EmbeddedFile* find_embedded_file(const std::string& kind, const std::string& name) {
  for (const auto& f : embedded_files()) {
    if (f.kind == kind && f.name == name) return &f;
  }
  return nullptr;
}

std::vector<std::string> embedded_file_names(const std::string& kind) {
  std::vector<std::string> names;
  for (const auto& f : embedded_files()) {
    if (f.kind == kind) names.push_back(f.name);
  }
  return names;
}

std::string embedded_file_names_joined(const std::string& kind) {
  std::string out;
  for (const auto& n : embedded_file_names(kind)) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

}  // namespace npusim
