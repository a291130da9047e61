// `npusim train`: training steps of a classifier on the simulated chip (docs/training.md), the
// command line over npusim::train. Writes DIR/stats.json, DIR/report.txt and DIR/loss.npy (float64
// [steps]) and prints the report.
//
// Contract: `args` excludes the program name and "train". Returns 0 on success, 1 when a step's
// functional check fails (a bug), and a bad flag or file is a UserError (exit code 2 from
// cli_main).
#pragma once

#include <string>
#include <vector>

namespace npusim {

int command_train(const std::vector<std::string>& args);

}  // namespace npusim
