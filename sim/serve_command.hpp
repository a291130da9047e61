// `npusim serve`: a request trace replayed on the simulated chip (docs/serving.md), the command
// line over npusim::serve. Writes DIR/stats.json, DIR/report.txt, DIR/requests.csv (per request)
// and DIR/steps.csv (per step) and prints the report.
//
// Contract: `args` excludes the program name and "serve". Returns 0 on success; a bad flag or
// file is a UserError (exit code 2 from cli_main).
#pragma once

#include <string>
#include <vector>

namespace npusim {

int command_serve(const std::vector<std::string>& args);

}  // namespace npusim
