// Stand-alone driver for the SCALE-Sim compatible mode: `npusim_scalesim_run -c CFG -t CSV -p DIR`
// behaves exactly as `npusim scalesim -c CFG -t CSV -p DIR`.
#include <string>
#include <vector>

#include "compat/scalesim/scalesim_cli.hpp"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return npusim::scalesim::run_cli(args);
}
