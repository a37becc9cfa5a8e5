// fiber_state: a fiber's stack and saved context, and the driver's side
// of a switch (fiber.cpp; world.hpp declares the types).
#pragma once

#include <sys/mman.h>
#include <ucontext.h>

#include <cstddef>
#include <exception>
#include <functional>
#include <string>

#include "faultlane/dsim/world.hpp"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FAULTLANE_DSIM_ASAN 1
#endif
#if __has_feature(thread_sanitizer)
#define FAULTLANE_DSIM_TSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define FAULTLANE_DSIM_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
#define FAULTLANE_DSIM_TSAN 1
#endif

#if defined(FAULTLANE_DSIM_ASAN)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if defined(FAULTLANE_DSIM_TSAN)
#include <sanitizer/tsan_interface.h>
#endif

namespace faultlane::dsim {

// One side of a switch: the context to return to, and what the sanitizers
// need to know about its stack.
struct fiber_switch_side {
  ucontext_t context{};
  void* asan_fake_stack = nullptr;
  const void* stack_bottom = nullptr;
  std::size_t stack_size = 0;
  void* tsan_fiber = nullptr;
};

struct world::fiber_host {
  fiber_switch_side driver;
};

struct world::fiber {
  fiber_id id = 0;
  std::string name;
  unique_function<void()> fn;
  fiber_switch_side side;
  void* stack = nullptr;  // the mapping, guard page included
  std::size_t mapped = 0;
  bool started = false;
  bool done = false;
  // While parked: what it waits for, and the event that ends the wait at
  // its deadline (0: none).
  const std::function<bool()>* ready = nullptr;
  clock::time_point deadline = clock::time_point::max();
  event_id wake = 0;
  std::exception_ptr failure;

  fiber() = default;
  fiber(const fiber&) = delete;
  fiber& operator=(const fiber&) = delete;
  ~fiber() {
#if defined(FAULTLANE_DSIM_TSAN)
    if (side.tsan_fiber != nullptr) __tsan_destroy_fiber(side.tsan_fiber);
#endif
    if (stack != nullptr) ::munmap(stack, mapped);
  }
};

}  // namespace faultlane::dsim
