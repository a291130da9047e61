// Fuzz target: the hardware description reader (JSON text -> HwConfig), and the round trip of
// what it accepts (docs/fuzzing.md).
#include "arch/hw_config.hpp"
#include "support/json_reader.hpp"
#include "tests/fuzz/fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  npusim::fuzz::expect_user_error_or_success([&] {
    const npusim::json root =
        npusim::parse_json_text(npusim::fuzz::as_text(data, size), "fuzz.json");
    const npusim::HwConfig hw = npusim::parse_hw_config(root, "fuzz.json");
    // What the reader accepted, written back out, reads back the same (hw_config.hpp's contract).
    const npusim::json resolved = npusim::to_json(hw);
    NPUSIM_CHECK(npusim::to_json(npusim::parse_hw_config(resolved, "resolved")) == resolved,
                 "the resolved description does not read back the same");
  });
  return 0;
}
