// Where submitted work lives: a batch's state, its task array, its control
// block, each frame exchange (transfer_op) and each hand-off to a lane are
// carved from one pool of recycled blocks per transport, so that in the
// steady state submitting and completing work allocates nothing
// (docs/architecture.md, "Memory in the steady state").
//
// Every block holds the pool alive (a shared_ptr in the object, in its
// deleter's reach, or in the allocator of a control block or handler), so a
// batch the caller keeps after the transport is gone still frees into it.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

namespace faultlane::detail {

// Blocks of 64 B to 64 KiB in power-of-two size classes, each class a
// mutex-guarded stack of free blocks taken from the heap on first need and
// kept until the pool goes. Any thread may free a block any thread took:
// no per-thread state (std::pmr::synchronized_pool_resource keeps pools per
// thread, which a thread-per-request caller would grow without bound, and
// pays a scan of every thread's pools for a block freed elsewhere).
//
// Under AddressSanitizer the pool passes every request to the heap, so ASan
// sees each lifetime (a recycled block would hide a use after free).
class batch_memory {
 public:
  static std::shared_ptr<batch_memory> create() { return std::make_shared<batch_memory>(); }

  batch_memory();
  batch_memory(const batch_memory&) = delete;
  batch_memory& operator=(const batch_memory&) = delete;
  ~batch_memory();

  void* allocate(std::size_t bytes, std::size_t align);
  void deallocate(void* p, std::size_t bytes, std::size_t align) noexcept;

  // Blocks of at most this size are pooled (the task array of about 290
  // tasks); larger ones come from the heap, one allocation per batch.
  static constexpr std::size_t pooled_bytes_max = 64 << 10;
  // Room each free list has from the start: freeing a block allocates
  // (the list grows) only past this many free blocks of a class at once,
  // the exchanges of two batches of 32. 5.5 KiB per transport.
  static constexpr std::size_t free_room_initial = 64;
  // Free blocks currently held (for tests).
  std::size_t cached_blocks() const;

 private:
  static constexpr std::size_t smallest_shift = 6;  // 64 B
  static constexpr std::size_t class_count = 11;    // 64 B .. 64 KiB
  struct size_class {
    mutable std::mutex mutex;
    std::vector<void*> free;
  };
  // The class serving `bytes`, or class_count when it is not pooled.
  static std::size_t class_of(std::size_t bytes, std::size_t align) noexcept;
  std::array<size_class, class_count> classes_;
};

// An Allocator over a transport's batch_memory: for allocate_shared (a
// batch's control block) and for Asio's handler memory (bind_allocator).
template <typename T>
class pooled_allocator {
 public:
  using value_type = T;

  explicit pooled_allocator(std::shared_ptr<batch_memory> memory) noexcept
      : memory_(std::move(memory)) {}
  template <typename U>
  pooled_allocator(const pooled_allocator<U>& other) noexcept : memory_(other.memory()) {}

  T* allocate(std::size_t n) {
    if (n > SIZE_MAX / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(memory_->allocate(n * sizeof(T), alignof(T)));
  }
  void deallocate(T* p, std::size_t n) noexcept {
    memory_->deallocate(p, n * sizeof(T), alignof(T));
  }

  const std::shared_ptr<batch_memory>& memory() const noexcept { return memory_; }

  template <typename U>
  bool operator==(const pooled_allocator<U>& other) const noexcept {
    return memory_ == other.memory();
  }

 private:
  std::shared_ptr<batch_memory> memory_;
};

// Destroys an object made by make_pooled and gives its block back. The
// object carries the pool (`memory`); the deleter takes it out first, so the
// pool outlives the object's own destructor.
template <typename T>
struct pooled_delete {
  void operator()(T* p) const noexcept {
    auto memory = std::move(p->memory);
    p->~T();
    memory->deallocate(p, sizeof(T), alignof(T));
  }
};

template <typename T>
using pooled_ptr = std::unique_ptr<T, pooled_delete<T>>;

template <typename T>
pooled_ptr<T> make_pooled(const std::shared_ptr<batch_memory>& memory) {
  void* block = memory->allocate(sizeof(T), alignof(T));
  T* object = nullptr;
  try {
    object = new (block) T();
  } catch (...) {
    memory->deallocate(block, sizeof(T), alignof(T));
    throw;
  }
  object->memory = memory;
  return pooled_ptr<T>(object);
}

}  // namespace faultlane::detail
