// ZeroedBytes (support/zeroed_bytes.hpp), the storage of the simulated memory image, the on-chip
// buffers and the tensor shadows: it reads as zeros, keeps what is written, costs no page until a
// page is written, and stays so when a process allocates it again and again (a sweep's worker, the
// Python module), where glibc's calloc would start zeroing reused heap memory with memset.
#include "support/zeroed_bytes.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>

namespace {

using npusim::ZeroedBytes;

// Resident pages of this process (/proc/self/statm, second field) in bytes.
uint64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * uint64_t(sysconf(_SC_PAGESIZE));
}

bool all_zero(const ZeroedBytes& b, size_t step) {
  for (size_t i = 0; i < b.size(); i += step) {
    if (b[i] != 0) return false;
  }
  return b.empty() || b.back() == 0;
}

TEST(ZeroedBytes, ReadsZerosAndKeepsWrites) {
  for (size_t size : {size_t{100}, size_t{4096}, size_t{3} << 20}) {  // calloc and mapped blocks
    ZeroedBytes b(size);
    ASSERT_EQ(b.size(), size);
    EXPECT_TRUE(all_zero(b, 1)) << size;
    for (size_t i = 0; i < size; i += 4099) b[i] = uint8_t(1 + i % 251);
    b.back() = 7;
    for (size_t i = 0; i < size; i += 4099) EXPECT_EQ(b[i], uint8_t(1 + i % 251)) << i;
    EXPECT_EQ(b.back(), 7);
    EXPECT_EQ(b[1], 0) << size;
  }
}

// 1 GiB costs (almost) no resident memory until written. Sampled reads only: on some kernels (this
// machine's included) a read fault takes a page of its own instead of the shared zero page.
TEST(ZeroedBytes, PagesCostNothingUntilWritten) {
  const uint64_t before = resident_bytes();
  ZeroedBytes b(size_t{1} << 30);
  EXPECT_TRUE(all_zero(b, size_t{16} << 20));
  EXPECT_LT(resident_bytes(), before + (uint64_t{16} << 20));
  for (size_t i = 0; i < (size_t{64} << 20); i += 4096) b[i] = 1;  // 64 MiB of pages written
  EXPECT_GE(resident_bytes(), before + (uint64_t{64} << 20));
}

// Freed and allocated again (one run after another in a process): zeros again, the old contents
// gone, and still no page until written. 24 MiB (the on-chip buffers' size) is below glibc's
// largest mmap threshold: calloc would hand back the written heap block, its pages resident.
TEST(ZeroedBytes, ReallocatedStorageIsZeroAndLazyAgain) {
  const size_t size = size_t{24} << 20;
  const uint64_t before = resident_bytes();
  for (int round = 0; round < 4; ++round) {
    ZeroedBytes b(size);
    EXPECT_TRUE(all_zero(b, size_t{1} << 20)) << "round " << round;
    EXPECT_LT(resident_bytes(), before + (uint64_t{8} << 20)) << "round " << round;
    EXPECT_EQ(b[12345], 0) << "round " << round;  // the previous round wrote this byte
    for (size_t i = 0; i < size; i += 4096) b[i + 12345 % 4096] = uint8_t(round + 1);
    EXPECT_GE(resident_bytes(), before + (uint64_t{20} << 20)) << "round " << round;
  }
}

}  // namespace
