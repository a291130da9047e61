// Zero-filled byte storage that costs no page until it is touched: a vector whose allocator maps
// large blocks straight from the kernel (anonymous mmap: zero pages, given a frame on first
// write) and takes small ones from calloc, and leaves value-initialized elements as they come, so
// the simulated memory image, the on-chip buffers and the tensor shadows are not written once with
// zeros at start (a timing-only run never touches most of them).
// Not calloc for the large blocks: glibc serves a large calloc with a fresh mmap only until the
// first such block is freed, then raises its mmap threshold and serves the next from the heap,
// zeroing it with memset; a process that runs one simulation after another (the Python module, a
// sweep's worker) would write every buffer with zeros at every run.
// Contract: value-initialized elements are zero only in freshly allocated storage; size it once
// (construct or resize an empty vector) and never shrink and regrow it.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <new>
#include <utility>
#include <vector>

namespace npusim {

// `bytes` of zeros from an anonymous mapping (lazy pages); nullptr if the kernel refuses.
void* map_zeroed_pages(size_t bytes);
void unmap_zeroed_pages(void* p, size_t bytes);

template <class T>
struct ZeroedAllocator {
  using value_type = T;
  ZeroedAllocator() = default;
  template <class U>
  explicit ZeroedAllocator(const ZeroedAllocator<U>&) {}
  // Blocks of at least this many bytes are mapped from the kernel.
  static constexpr size_t kMappedBytes = size_t{1} << 20;
  T* allocate(size_t n) {
    if (n > SIZE_MAX / sizeof(T)) throw std::bad_alloc();
    const size_t bytes = n * sizeof(T);
    void* p = bytes >= kMappedBytes ? map_zeroed_pages(bytes) : std::calloc(n, sizeof(T));
    if (p == nullptr) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) {
    if (n * sizeof(T) >= kMappedBytes) {
      unmap_zeroed_pages(p, n * sizeof(T));
    } else {
      std::free(p);
    }
  }
  template <class U>
  void construct(U*) noexcept {}  // the fresh zeros are the value
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
  bool operator==(const ZeroedAllocator&) const { return true; }
};

using ZeroedBytes = std::vector<uint8_t, ZeroedAllocator<uint8_t>>;

}  // namespace npusim
