// The npusim command line: subcommands run, compile, validate, presets, zoo, scalesim, membench.
// Exit codes: 0 success, 2 bad input or usage, 1 internal error (or outputs that do not match the
// reference).
#pragma once

#include <string>
#include <vector>

namespace npusim {

int cli_main(const std::vector<std::string>& args);

}  // namespace npusim
