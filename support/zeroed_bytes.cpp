#include "support/zeroed_bytes.hpp"

#include <sys/mman.h>

namespace npusim {

void* map_zeroed_pages(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

void unmap_zeroed_pages(void* p, size_t bytes) { munmap(p, bytes); }

}  // namespace npusim
