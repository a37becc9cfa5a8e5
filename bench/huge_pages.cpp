// The benchmark's large buffers on transparent huge pages (bench.hpp).
#include <sys/mman.h>

#include <cstdlib>
#include <new>

#include "bench.hpp"

namespace faultlane::bench {
namespace {
constexpr std::size_t huge_page_bytes = std::size_t{2} << 20;
}

void* huge_page_allocate(std::size_t bytes) {
  if (bytes < huge_page_bytes) return ::operator new(bytes);
  // aligned_alloc wants a size that is a multiple of the alignment.
  const std::size_t rounded = (bytes + huge_page_bytes - 1) / huge_page_bytes * huge_page_bytes;
  void* p = std::aligned_alloc(huge_page_bytes, rounded);
  if (p == nullptr) throw std::bad_alloc();
  // Advice only: where the kernel has no huge page to give, 4 KiB pages.
  (void)::madvise(p, rounded, MADV_HUGEPAGE);
  return p;
}

void huge_page_free(void* p, std::size_t bytes) noexcept {
  if (bytes < huge_page_bytes) return ::operator delete(p);
  std::free(p);
}

}  // namespace faultlane::bench
