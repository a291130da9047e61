// Zero-filled byte storage that costs no page until it is touched: a vector whose allocator takes
// fresh memory from calloc (large blocks are the kernel's zero pages) and leaves value-initialized
// elements as calloc made them, so the simulated memory image and the on-chip buffers are not
// written once with zeros at start (a timing-only run never touches most of them).
// Contract: value-initialized elements are zero only in freshly allocated storage; size it once
// (construct or resize an empty vector) and never shrink and regrow it.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <new>
#include <utility>
#include <vector>

namespace npusim {

template <class T>
struct ZeroedAllocator {
  using value_type = T;
  ZeroedAllocator() = default;
  template <class U>
  explicit ZeroedAllocator(const ZeroedAllocator<U>&) {}
  T* allocate(size_t n) {
    void* p = std::calloc(n, sizeof(T));
    if (p == nullptr) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t) { std::free(p); }
  template <class U>
  void construct(U*) noexcept {}  // calloc's zeros are the value
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
  bool operator==(const ZeroedAllocator&) const { return true; }
};

using ZeroedBytes = std::vector<uint8_t, ZeroedAllocator<uint8_t>>;

}  // namespace npusim
