// `npusim membench`: command-line front end of membench (models/dram/membench.hpp).
//
// Contract: `args` excludes the program name and "membench". Prints one JSON object to stdout on
// success and returns 0; a bad flag, preset or trace prints a message naming the flag, file or
// JSON pointer to stderr and returns 2; an internal error prints it and returns 1. --help prints
// the usage and returns 0.
#pragma once

#include <string>
#include <vector>

namespace npusim::dram {

int run_membench_cli(const std::vector<std::string>& args);

}  // namespace npusim::dram
