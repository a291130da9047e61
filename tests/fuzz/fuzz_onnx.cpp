// Fuzz target: the ONNX importer (protobuf bytes -> graph IR, shape inference and checks). The
// importer reads a path, so each input goes through a file in the temporary directory.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "compiler/frontend/onnx_import.hpp"
#include "tests/fuzz/fuzz_target.hpp"

namespace {

// The file each input goes through, removed when the process ends.
struct InputFile {
  std::string path = (std::filesystem::temp_directory_path() /
                      ("npusim-fuzz-onnx-" + std::to_string(::getpid()) + ".onnx"))
                         .string();
  ~InputFile() {
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const InputFile file;
  {
    std::ofstream out(file.path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), std::streamsize(size));
  }
  npusim::fuzz::expect_user_error_or_success(
      [&] { (void)npusim::import_onnx(file.path, std::nullopt); });
  return 0;
}
