// npusim's front door. `npusim scalesim` runs here, in a small executable that loads neither
// SystemC nor ONNX, protobuf or oneDNN: for a one-layer SCALE-Sim run the process start is most of
// the time (docs/performance.md). Every other command is handed, arguments unchanged, to the
// simulator itself, `npusim-core` in the same directory, by exec.
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#ifdef NPUSIM_HAVE_SCALESIM
#include "compat/scalesim/scalesim_cli.hpp"
#endif

int main(int argc, char* argv[]) {
#ifdef NPUSIM_HAVE_SCALESIM
  if (argc > 1 && std::strcmp(argv[1], "scalesim") == 0) {
    return npusim::scalesim::run_cli(std::vector<std::string>(argv + 2, argv + argc));
  }
#endif
  char self[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) {
    std::fprintf(stderr, "npusim: internal error: cannot find this executable: %s\n",
                 std::strerror(errno));
    return 1;
  }
  self[n] = '\0';
  std::string core(self, size_t(n));
  core = core.substr(0, core.rfind('/') + 1) + "npusim-core";
  execv(core.c_str(), argv);
  std::fprintf(stderr, "npusim: internal error: cannot run %s: %s\n", core.c_str(),
               std::strerror(errno));
  return 1;
}
