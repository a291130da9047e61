// Writing a run's results: every output file is attempted on its own, so one that cannot be
// written (a full disk, a directory removed meanwhile, a bug in one writer) costs that file only.
// The run writes what it can, then names each failure and exits non-zero: 2 when every failure
// was the environment's or the user's (a file that cannot be written), 1 when one was a bug.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace npusim {

class OutputAttempts {
 public:
  // Runs `write`; an exception it throws is recorded against `what` ("stats.json", "--trace")
  // instead of ending the run.
  void attempt(const std::string& what, const std::function<void()>& write);
  // Records a failure found elsewhere (the VCD file, written during the simulation).
  void fail(const std::string& what, const std::string& message, bool bug);

  bool failed() const { return !failures_.empty(); }
  // One line per failure, for stderr.
  std::string report() const;
  // 0, 2 or 1 (see above).
  int exit_code() const;

 private:
  std::vector<std::string> failures_;
  bool bug_ = false;
};

}  // namespace npusim
