// unique_function: a move-only std::function (C++23's move_only_function is
// not in our C++20 toolchain). Callables up to inline_bytes_max are stored
// in place, so completion callbacks that capture a pointer or two never
// allocate on the hot path.
#pragma once

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

#include "faultlane/base/assert.hpp"

namespace faultlane {

template <typename Signature>
class unique_function;

template <typename R, typename... Args>
class unique_function<R(Args...)> {
 public:
  static constexpr std::size_t inline_bytes_max = 48;

  unique_function() noexcept = default;
  unique_function(std::nullptr_t) noexcept {}

  template <typename F, typename D = std::decay_t<F>,
            typename = std::enable_if_t<!std::is_same_v<D, unique_function> &&
                                        std::is_invocable_r_v<R, D&, Args...>>>
  unique_function(F&& f) {  // NOLINT: implicit like std::function
    if constexpr (fits_inline<D>) {
      ::new (static_cast<void*>(storage_)) D(std::forward<F>(f));
      ops_ = &inline_ops<D>;
    } else {
      // new-ok: the heap fallback of a type-erased box; heap_ops deletes it.
      *reinterpret_cast<D**>(storage_) = new D(std::forward<F>(f));
      ops_ = &heap_ops<D>;
    }
  }

  unique_function(unique_function&& other) noexcept { take(other); }
  unique_function& operator=(unique_function&& other) noexcept {
    if (this != &other) {
      reset();
      take(other);
    }
    return *this;
  }
  unique_function(const unique_function&) = delete;
  unique_function& operator=(const unique_function&) = delete;
  ~unique_function() { reset(); }

  explicit operator bool() const noexcept { return ops_ != nullptr; }

  R operator()(Args... args) {
    FL_ASSERT(ops_ != nullptr);
    return ops_->invoke(storage_, std::forward<Args>(args)...);
  }

  void reset() noexcept {
    if (ops_ != nullptr) {
      ops_->destroy(storage_);
      ops_ = nullptr;
    }
  }

 private:
  struct ops {
    R (*invoke)(void*, Args&&...);
    void (*move)(void* from, void* to) noexcept;
    void (*destroy)(void*) noexcept;
  };

  template <typename D>
  static constexpr bool fits_inline =
      sizeof(D) <= inline_bytes_max &&
      alignof(D) <= alignof(std::max_align_t) && std::is_nothrow_move_constructible_v<D>;

  template <typename D>
  static constexpr ops inline_ops{
      [](void* s, Args&&... a) -> R { return (*static_cast<D*>(s))(std::forward<Args>(a)...); },
      [](void* from, void* to) noexcept {
        ::new (to) D(std::move(*static_cast<D*>(from)));
        static_cast<D*>(from)->~D();
      },
      [](void* s) noexcept { static_cast<D*>(s)->~D(); }};

  template <typename D>
  static constexpr ops heap_ops{
      [](void* s, Args&&... a) -> R { return (**static_cast<D**>(s))(std::forward<Args>(a)...); },
      [](void* from, void* to) noexcept { *static_cast<D**>(to) = *static_cast<D**>(from); },
      // delete-ok: frees what the constructor's heap fallback allocated.
      [](void* s) noexcept { delete *static_cast<D**>(s); }};

  void take(unique_function& other) noexcept {
    if (other.ops_ != nullptr) {
      other.ops_->move(other.storage_, storage_);
      ops_ = std::exchange(other.ops_, nullptr);
    }
  }

  alignas(std::max_align_t) unsigned char storage_[inline_bytes_max];
  const ops* ops_ = nullptr;
};

}  // namespace faultlane
