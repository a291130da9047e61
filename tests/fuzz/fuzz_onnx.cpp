// Fuzz target: the ONNX importer (protobuf bytes -> graph IR, shape inference and checks), fed the
// bytes directly (import_onnx_bytes; import_onnx reads a file into the same function).
#include "compiler/frontend/onnx_import.hpp"
#include "tests/fuzz/fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  npusim::fuzz::expect_user_error_or_success([&] {
    (void)npusim::import_onnx_bytes(npusim::fuzz::as_text(data, size), "fuzz.onnx", std::nullopt);
  });
  return 0;
}
