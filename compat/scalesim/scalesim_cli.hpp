// `npusim scalesim -c CONFIG.cfg -t TOPOLOGY.csv [-i conv|gemm] -p OUTDIR`: runs a SCALE-Sim v2
// config and topology and writes COMPUTE_REPORT.csv, BANDWIDTH_REPORT.csv and
// DETAILED_ACCESS_REPORT.csv into OUTDIR/<run_name>/, as SCALE-Sim does.
#pragma once

#include <string>
#include <vector>

namespace npusim::scalesim {

// `args` excludes the program name and the word "scalesim". Prints to std::cout / std::cerr.
// Returns 0 on success, 2 on bad input or usage, 1 on an internal error.
int run_cli(const std::vector<std::string>& args);

}  // namespace npusim::scalesim
