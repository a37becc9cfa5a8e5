// sync: what the core's blocking calls and threads become in the dsim build.
//
// condition_variable: a wait pumps the world until its predicate holds or
// its (virtual) deadline passes. Everything runs on the world's one thread,
// so the predicate is read between steps; notify does nothing, because the
// waiter looks again after every step. A wait that the world can no longer
// meet (idle, no deadline) is a deadlock: it stops the run with the trace.
// A wait from inside a handler is an assertion failure: the handler would
// wait for work that only its own return lets run.
//
// no_thread: the type net::thread names in the dsim build. Starting one is
// an assertion failure (DESIGN 3.5: code on the world starts no OS thread).
#pragma once

#include <chrono>
#include <cstdio>
#include <mutex>
#include <thread>

#include "faultlane/core/assert.hpp"
#include "faultlane/dsim/world.hpp"

namespace faultlane::dsim {

class condition_variable {
 public:
  void notify_one() noexcept {}
  void notify_all() noexcept {}

  template <typename Lock, typename Pred>
  bool wait_until(Lock& lock, clock::time_point deadline, Pred pred) {
    if (pred()) return true;
    auto& w = world::current();
    lock.unlock();
    const auto r = w.run_until([&] { return static_cast<bool>(pred()); }, deadline);
    lock.lock();
    if (r == world::wait_result::idle && deadline == clock::time_point::max()) {
      std::fprintf(stderr, "dsim: deadlock: a wait with no deadline, and nothing left to run\n%s",
                   w.trace_text().c_str());
      detail_deadlock();
    }
    return pred();
  }
  template <typename Lock, typename Rep, typename Period, typename Pred>
  bool wait_for(Lock& lock, std::chrono::duration<Rep, Period> timeout, Pred pred) {
    const auto now = clock::now();
    // Compared in the caller's units first: milliseconds::max() in
    // nanoseconds would overflow.
    const auto left = std::chrono::duration_cast<std::chrono::duration<Rep, Period>>(
        clock::time_point::max() - now);
    if (timeout >= left) return wait_until(lock, clock::time_point::max(), std::move(pred));
    return wait_until(lock, now + std::chrono::duration_cast<clock::duration>(timeout),
                      std::move(pred));
  }
  template <typename Lock, typename Pred>
  void wait(Lock& lock, Pred pred) {
    (void)wait_until(lock, clock::time_point::max(), std::move(pred));
  }

 private:
  [[noreturn]] static void detail_deadlock() {
    ::faultlane::detail::assert_failed("no deadlock in the simulated world", __FILE__, __LINE__);
  }
};

class no_thread {
 public:
  no_thread() noexcept = default;
  template <typename F>
  explicit no_thread(F&&) {
    ::faultlane::detail::assert_failed("no OS thread is started from core code in the dsim build",
                                       __FILE__, __LINE__);
  }
  bool joinable() const noexcept { return false; }
  // Never a running thread's id.
  std::thread::id get_id() const noexcept { return {}; }
  void join() noexcept {}
  void detach() noexcept {}
};

}  // namespace faultlane::dsim
