#include "sim/output_attempts.hpp"

#include <fmt/format.h>

#include <exception>

#include "support/error.hpp"
#include "support/text_escape.hpp"

namespace npusim {

void OutputAttempts::attempt(const std::string& what, const std::function<void()>& write) {
  try {
    write();
  } catch (const UserError& e) {
    fail(what, e.what(), false);
  } catch (const InternalError& e) {
    fail(what, e.what(), true);
  } catch (const std::exception& e) {
    fail(what, fmt::format("internal error: {}", e.what()), true);
  }
}

void OutputAttempts::fail(const std::string& what, const std::string& message, bool bug) {
  failures_.push_back(fmt::format("{}: not written: {}", what, printable_text(message)));
  bug_ = bug_ || bug;
}

std::string OutputAttempts::report() const {
  std::string out;
  for (const std::string& f : failures_) out += fmt::format("npusim: error: {}\n", f);
  if (!failures_.empty()) {
    out += fmt::format(
        "npusim: the simulation finished; {} output(s) above could not be written, every other "
        "output was\n",
        failures_.size());
  }
  return out;
}

int OutputAttempts::exit_code() const { return failures_.empty() ? 0 : bug_ ? 1 : 2; }

}  // namespace npusim
