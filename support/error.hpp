// Three kinds of failure, kept apart (docs/architecture.md):
//   UserError      - bad input from a user (config, graph, CLI). Exit code 2.
//   InternalError  - a broken invariant: a bug in npusim. Exit code 1.
//   (a workload that does not fit is a compiler result with a reason, CompileResult in
//   compiler/lowering.hpp, not an exception)
#pragma once

#include <fmt/core.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace npusim {

class UserError : public std::runtime_error {
 public:
  explicit UserError(const std::string& message) : std::runtime_error(message) {}
};

// Several user errors found in one pass (e.g. every problem in a config file).
class UserErrors : public UserError {
 public:
  explicit UserErrors(std::vector<std::string> messages);
  const std::vector<std::string>& messages() const { return messages_; }

 private:
  std::vector<std::string> messages_;
};

class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& message) : std::logic_error(message) {}
};

[[noreturn]] void fail_check(const char* file, int line, const char* condition,
                             const std::string& detail);

}  // namespace npusim

// Always-on invariant check. `...` is a fmt format string and its arguments that say which unit,
// which instruction or cycle, and what went wrong.
#define NPUSIM_CHECK(cond, ...)                                                             \
  do {                                                                                      \
    if (!(cond)) ::npusim::fail_check(__FILE__, __LINE__, #cond, fmt::format(__VA_ARGS__)); \
  } while (0)
