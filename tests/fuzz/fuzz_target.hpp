// What every fuzz target shares: the input becomes the reader's input, a UserError (a clear
// message about bad input) is the expected way to refuse it, and anything else escaping the
// reader (an InternalError, a std::exception from a library, a sanitizer report) is a bug.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "support/error.hpp"

namespace npusim::fuzz {

inline std::string as_text(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// Runs `read` and swallows the user errors it throws; every other exception propagates, which
// libFuzzer reports as a crash ("uncaught exception").
template <typename Fn>
void expect_user_error_or_success(Fn&& read) {
  try {
    read();
  } catch (const UserError&) {
  }
}

}  // namespace npusim::fuzz
