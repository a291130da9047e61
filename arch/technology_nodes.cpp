#include "arch/technology_nodes.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "support/embedded_files.hpp"

namespace npusim {

std::vector<int> technology_nodes() {
  std::vector<int> nodes;
  for (const std::string& name : embedded_file_names("energy")) {
    nodes.push_back(std::stoi(name));  // "28nm" -> 28
  }
  std::sort(nodes.begin(), nodes.end());
  return nodes;
}

bool is_technology_node(int nm) {
  return find_embedded_file("energy", fmt::format("{}nm", nm)) != nullptr;
}

std::string technology_nodes_joined() {
  std::string out;
  for (int n : technology_nodes()) out += (out.empty() ? "" : ", ") + std::to_string(n);
  return out;
}

}  // namespace npusim
