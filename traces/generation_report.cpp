#include "traces/generation_report.hpp"

#include <algorithm>

#include "support/error.hpp"
#include "support/text_escape.hpp"

namespace npusim {

namespace {

// A run's energy by component (stats.json energy.by_component_j), or null.
nlohmann::json energy_by_component(const nlohmann::json& run) {
  if (run.is_object() && run.contains("energy") && run.at("energy").contains("by_component_j")) {
    return run.at("energy").at("by_component_j");
  }
  return nullptr;
}

}  // namespace

std::string generation_html_report(const nlohmann::json& stats) {
  NPUSIM_CHECK(stats.contains("generation") && stats.contains("steps"),
               "generate html: stats without the generation and steps sections");
  nlohmann::json data;
  data["generation"] = stats.at("generation");
  data["steps"] = stats.at("steps");
  for (const char* key : {"hardware", "workload", "dtype", "values", "memory_fidelity"}) {
    if (stats.contains(key)) data[key] = stats.at(key);
  }
  if (stats.contains("prefill")) data["prefill_energy_j"] = energy_by_component(stats["prefill"]);
  if (stats.contains("decode")) {
    const nlohmann::json& decode = stats.at("decode");
    data["decode_energy_j"] = energy_by_component(decode);
    // The last decode step's layers that take the most cycles (at most 30), slowest first.
    nlohmann::json layers = nlohmann::json::array();
    if (decode.contains("layers")) {
      std::vector<const nlohmann::json*> order;
      for (const nlohmann::json& l : decode.at("layers")) order.push_back(&l);
      std::stable_sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
        return a->value("cycles", uint64_t{0}) > b->value("cycles", uint64_t{0});
      });
      order.resize(std::min<size_t>(order.size(), 30));
      for (const nlohmann::json* l : order) {
        layers.push_back({{"name", l->value("name", std::string())},
                          {"op", l->value("op", std::string())},
                          {"cycles", l->value("cycles", uint64_t{0})},
                          {"dram_read_bytes", l->value("dram_read_bytes", 0.0)}});
      }
    }
    data["decode_layers"] = layers;
  }
  return html_page_with_data("generation", data);
}

}  // namespace npusim
