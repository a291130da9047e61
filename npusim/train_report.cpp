// TrainResult's HTML report (npusim/npusim.hpp): the page traces/training_report.hpp writes.
#include "npusim/npusim.hpp"
#include "traces/training_report.hpp"

namespace npusim {

std::string TrainResult::html() const { return training_html_report(stats); }

}  // namespace npusim
