#include "traces/training_report.hpp"

#include "support/error.hpp"
#include "support/text_escape.hpp"

namespace npusim {

std::string training_html_report(const nlohmann::json& stats) {
  NPUSIM_CHECK(stats.contains("training") && stats.contains("steps"),
               "train html: stats without the training and steps sections");
  nlohmann::json data;
  data["training"] = stats.at("training");
  data["steps"] = stats.at("steps");
  if (stats.contains("first_step")) {
    const nlohmann::json& first = stats.at("first_step");
    if (first.contains("energy") && first.at("energy").contains("by_component_j")) {
      data["energy_by_component_j"] = first.at("energy").at("by_component_j");
    }
  }
  return html_page_with_data("training", data);
}

}  // namespace npusim
