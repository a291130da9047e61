// `npusim generate`: autoregressive generation with a decoder-only transformer (docs/llm.md),
// the command line over npusim::generate. Writes DIR/stats.json, DIR/report.txt and
// DIR/tokens.npy (the generated ids, int32 [batch, new tokens]) and prints the report.
//
// Contract: `args` excludes the program name and "generate". Returns 0 on success, 1 when a
// program's functional check or the greedy ids disagree with the reference (a bug), and a bad
// flag or file is a UserError (exit code 2 from cli_main).
#pragma once

#include <string>
#include <vector>

namespace npusim {

int command_generate(const std::vector<std::string>& args);

}  // namespace npusim
