// The per-transport pool of recycled blocks; see batch_memory.hpp.
#include "memory/batch_memory.hpp"

#include <algorithm>
#include <bit>

#if defined(__SANITIZE_ADDRESS__)
#define FAULTLANE_POOL_PASSES_THROUGH 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FAULTLANE_POOL_PASSES_THROUGH 1
#endif
#endif

namespace faultlane::detail {

std::size_t batch_memory::class_of(std::size_t bytes, std::size_t align) noexcept {
#if defined(FAULTLANE_POOL_PASSES_THROUGH)
  (void)bytes;
  (void)align;
  return class_count;
#else
  if (bytes > pooled_bytes_max || align > __STDCPP_DEFAULT_NEW_ALIGNMENT__) return class_count;
  const std::size_t rounded = std::bit_ceil(std::max<std::size_t>(bytes, 1u << smallest_shift));
  return static_cast<std::size_t>(std::countr_zero(rounded)) - smallest_shift;
#endif
}

batch_memory::batch_memory() {
  for (auto& c : classes_) c.free.reserve(free_room_initial);
}

void* batch_memory::allocate(std::size_t bytes, std::size_t align) {
  const std::size_t k = class_of(bytes, align);
  if (k == class_count) return ::operator new (bytes, std::align_val_t{align});
  auto& c = classes_[k];
  {
    std::lock_guard lock(c.mutex);
    if (!c.free.empty()) {
      void* block = c.free.back();
      c.free.pop_back();
      return block;
    }
  }
  return ::operator new (std::size_t{1} << (k + smallest_shift));
}

void batch_memory::deallocate(void* p, std::size_t bytes, std::size_t align) noexcept {
  if (p == nullptr) return;
  const std::size_t k = class_of(bytes, align);
  if (k == class_count) return ::operator delete (p, std::align_val_t{align});
  auto& c = classes_[k];
  try {
    std::lock_guard lock(c.mutex);
    c.free.push_back(p);  // grows only past the largest number ever free at once
    return;
  } catch (...) {
    // No room to keep it: give it back to the heap instead.
  }
  ::operator delete(p);
}

batch_memory::~batch_memory() {
  for (auto& c : classes_) {
    for (void* block : c.free) ::operator delete(block);
  }
}

std::size_t batch_memory::cached_blocks() const {
  std::size_t n = 0;
  for (const auto& c : classes_) {
    std::lock_guard lock(c.mutex);
    n += c.free.size();
  }
  return n;
}

}  // namespace faultlane::detail
