// Allocation counting for faultlane-bench: every allocation in the process
// bumps one relaxed counter, so a run can report allocations per operation
// in its measured window (docs/benchmarks.md). Without a sanitizer this
// binary replaces the global operator new (the library and tests do not);
// under ASan or TSan, whose runtime owns operator new, the runtime's malloc
// hooks count instead.
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <optional>

#include "bench.hpp"

#if defined(FAULTLANE_COUNT_ALLOCATIONS)

namespace faultlane::bench {
namespace {
std::atomic<std::uint64_t> counted{0};

void* take(std::size_t n) {
  counted.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}

void* take_aligned(std::size_t n, std::align_val_t align) {
  counted.fetch_add(1, std::memory_order_relaxed);
  const auto a = static_cast<std::size_t>(align);
  // aligned_alloc wants a size that is a multiple of the alignment.
  if (void* p = std::aligned_alloc(a, (n + a - 1) / a * a)) return p;
  throw std::bad_alloc();
}
}  // namespace

std::optional<std::uint64_t> allocations() noexcept {
  return counted.load(std::memory_order_relaxed);
}

}  // namespace faultlane::bench

void* operator new(std::size_t n) { return faultlane::bench::take(n); }
void* operator new[](std::size_t n) { return faultlane::bench::take(n); }
void* operator new(std::size_t n, std::align_val_t a) {
  return faultlane::bench::take_aligned(n, a);
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return faultlane::bench::take_aligned(n, a);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

#elif defined(FAULTLANE_COUNT_WITH_SANITIZER_HOOKS)

// A sanitizer's runtime owns malloc and operator new, and tells hooks about
// every allocation it makes for the program (both kinds alike).
#include <sanitizer/allocator_interface.h>

namespace faultlane::bench {
namespace {
std::atomic<std::uint64_t> counted{0};

void on_allocate(const volatile void*, std::size_t) {
  counted.fetch_add(1, std::memory_order_relaxed);
}
void on_free(const volatile void*) {}

const bool hooked = __sanitizer_install_malloc_and_free_hooks(on_allocate, on_free) != 0;
}  // namespace

std::optional<std::uint64_t> allocations() noexcept {
  if (!hooked) return std::nullopt;
  return counted.load(std::memory_order_relaxed);
}

}  // namespace faultlane::bench

#else

namespace faultlane::bench {
std::optional<std::uint64_t> allocations() noexcept { return std::nullopt; }
}  // namespace faultlane::bench

#endif
