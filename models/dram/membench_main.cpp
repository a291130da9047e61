// Stand-alone `membench` until `npusim membench` is wired in; the same entry point either way.
#include <string>
#include <vector>

#include "models/dram/membench_cli.hpp"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args.front() == "membench") args.erase(args.begin());
  return npusim::dram::run_membench_cli(args);
}
