// Fuzz target: the SCALE-Sim config reader (INI text -> scalesim::Config).
#include "compat/scalesim/scalesim_config.hpp"
#include "tests/fuzz/fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  npusim::fuzz::expect_user_error_or_success([&] {
    std::string warnings;
    (void)npusim::scalesim::parse_config(npusim::fuzz::as_text(data, size), "fuzz.cfg", &warnings);
  });
  return 0;
}
