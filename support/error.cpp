#include "support/error.hpp"

namespace npusim {

namespace {
std::string join_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& line : lines) {
    if (!out.empty()) out += '\n';
    out += line;
  }
  return out;
}
}  // namespace

UserErrors::UserErrors(std::vector<std::string> messages)
    : UserError(join_lines(messages)), messages_(std::move(messages)) {}

void fail_check(const char* file, int line, const char* condition, const std::string& detail) {
  throw InternalError(
      fmt::format("internal error at {}:{}: check `{}` failed: {}", file, line, condition, detail));
}

}  // namespace npusim
