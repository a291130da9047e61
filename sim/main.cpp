// npusim's entry point. SystemC's banner would mix with the command's output, so main() turns it
// off before handing over to SystemC, which calls sc_main.
#include <cstdlib>
#include <string>
#include <systemc>
#include <vector>

#include "sim/cli.hpp"

int sc_main(int argc, char* argv[]) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return npusim::cli_main(args);
}

int main(int argc, char* argv[]) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  return sc_core::sc_elab_and_sim(argc, argv);
}
