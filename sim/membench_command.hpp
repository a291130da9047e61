// `npusim membench`: drives the DRAM model alone (models/dram/membench.hpp) with a traffic pattern
// or a trace and prints one JSON report (dram::membench_report) to stdout.
//
// Contract: `args` excludes the program name and "membench". Returns 0 after printing the report
// (or the usage, with --help); a bad flag, preset or trace is a UserError naming the flag, file or
// JSON pointer (exit code 2 from cli_main).
#pragma once

#include <string>
#include <vector>

namespace npusim {

int command_membench(const std::vector<std::string>& args);

}  // namespace npusim
