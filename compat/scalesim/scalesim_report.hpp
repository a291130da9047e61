// SCALE-Sim v2's three CSV reports, byte for byte: a header line, then one line per layer whose
// items are joined by ", " and end with ",". Numbers are printed as Python prints them (cycles
// that SCALE-Sim keeps as floats print as "12.0", ratios use Python's shortest repr).
#pragma once

#include <string>
#include <vector>

#include "compat/scalesim/scalesim_sim.hpp"

namespace npusim::scalesim {

// Python's repr() of a float: shortest round-trip digits, fixed notation for exponents in
// [-4, 16), otherwise scientific ("1e+16", "1.5e-05"); integral values keep ".0".
std::string python_float(double value);

std::string compute_report(const std::vector<LayerResult>& layers);
std::string bandwidth_report(const std::vector<LayerResult>& layers);
std::string detailed_access_report(const std::vector<LayerResult>& layers);

}  // namespace npusim::scalesim
