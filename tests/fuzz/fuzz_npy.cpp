// Fuzz target: the .npy reader and the conversions the CLI applies to what it reads (--input).
#include <vector>

#include "support/npy.hpp"
#include "tests/fuzz/fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  npusim::fuzz::expect_user_error_or_success([&] {
    const npusim::NpyArray a =
        npusim::parse_npy(std::vector<uint8_t>(data, data + size), "fuzz.npy");
    NPUSIM_CHECK(a.data.size() == a.elements() * npusim::npy_item_size(a.dtype),
                 "an accepted array of {} elements of {} holds {} bytes", a.elements(), a.dtype,
                 a.data.size());
    // What the reader accepted writes back to the same bytes' meaning.
    const npusim::NpyArray b = npusim::parse_npy(npusim::serialize_npy(a), "round trip");
    NPUSIM_CHECK(a.dtype == b.dtype && a.shape == b.shape && a.data == b.data,
                 "the array does not survive a write and a read");
    npusim::fuzz::expect_user_error_or_success(
        [&] { (void)npusim::npy_to_float32(a, "fuzz.npy"); });
    npusim::fuzz::expect_user_error_or_success([&] { (void)npusim::npy_to_int8(a, "fuzz.npy"); });
  });
  return 0;
}
