// sync: what the core's blocking calls and threads become in the dsim build.
//
// condition_variable: a wait is world::wait: it parks a fiber, or steps
// the world from the driver's stack, until its predicate holds or its
// (virtual) deadline passes. Everything runs on the world's one thread, so
// the predicate is read between steps; notify does nothing, because the
// waiter looks again after every step. A wait that the world can no longer
// meet (idle, no deadline) is a deadlock: it stops the run with the trace.
// A wait from inside a handler is an assertion failure: the handler would
// wait for work that only its own return lets run.
//
// mutex, shared_mutex: for state that fibers share and may hold across a
// wait (the runner's events lock, a transport slot's lock). Taking one that
// is held waits (world::wait) for its release; taking it again from the
// fiber that holds it, or from a handler, is an assertion failure, where
// std::mutex would hang the world's one thread.
//
// fiber_thread: a thread of control that waits in the dsim build (the
// runner's threads, the control plane's workers: net::worker_thread): a
// fiber on the world (world::spawn), joined by waiting for it to end.
//
// no_thread: the type net::thread names in the dsim build. Starting one is
// an assertion failure (DESIGN 3.5: code on the world starts no OS thread).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <thread>
#include <utility>

#include "faultlane/base/assert.hpp"
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
    (void)w.wait([&] { return static_cast<bool>(pred()); }, deadline);
    lock.lock();
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
};

class mutex {
 public:
  void lock() {
    auto& w = world::current();
    const auto me = holder_id(w);
    FL_ASSERT(!locked_ || holder_ != me);  // relocked by its holder
    if (locked_) (void)w.wait([this] { return !locked_; });
    locked_ = true;
    holder_ = me;
  }
  bool try_lock() {
    if (locked_) return false;
    locked_ = true;
    holder_ = holder_id(world::current());
    return true;
  }
  void unlock() {
    FL_ASSERT(locked_);
    locked_ = false;
  }

 private:
  // The fiber that holds it (0: the driver's stack).
  static std::uint64_t holder_id(world& w) { return w.in_fiber() ? w.current_fiber() : 0; }
  bool locked_ = false;
  std::uint64_t holder_ = 0;
};

class shared_mutex {
 public:
  void lock() {
    auto& w = world::current();
    const auto me = w.in_fiber() ? w.current_fiber() : 0;
    FL_ASSERT(!writer_ || writer_holder_ != me);  // relocked by its writer
    if (writer_ || readers_ != 0) (void)w.wait([this] { return !writer_ && readers_ == 0; });
    writer_ = true;
    writer_holder_ = me;
  }
  bool try_lock() {
    if (writer_ || readers_ != 0) return false;
    auto& w = world::current();
    writer_ = true;
    writer_holder_ = w.in_fiber() ? w.current_fiber() : 0;
    return true;
  }
  void unlock() {
    FL_ASSERT(writer_);
    writer_ = false;
  }
  void lock_shared() {
    auto& w = world::current();
    FL_ASSERT(!writer_ || writer_holder_ != (w.in_fiber() ? w.current_fiber() : 0));
    if (writer_) (void)w.wait([this] { return !writer_; });
    ++readers_;
  }
  bool try_lock_shared() {
    if (writer_) return false;
    ++readers_;
    return true;
  }
  void unlock_shared() {
    FL_ASSERT(readers_ > 0);
    --readers_;
  }

 private:
  bool writer_ = false;
  std::uint64_t writer_holder_ = 0;  // the fiber that writes (0: the driver's stack)
  std::size_t readers_ = 0;
};

class fiber_thread {
 public:
  fiber_thread() noexcept = default;
  template <typename F>
  explicit fiber_thread(F&& fn)
      : id_(world::current().spawn("thread", unique_function<void()>(std::forward<F>(fn)))) {}
  fiber_thread(fiber_thread&& o) noexcept : id_(std::exchange(o.id_, 0)) {}
  fiber_thread& operator=(fiber_thread&& o) noexcept {
    FL_ASSERT(id_ == 0);
    id_ = std::exchange(o.id_, 0);
    return *this;
  }
  fiber_thread(const fiber_thread&) = delete;
  fiber_thread& operator=(const fiber_thread&) = delete;
  ~fiber_thread() { FL_ASSERT(id_ == 0); }  // as std::thread: joined first

  using id = world::fiber_id;
  bool joinable() const noexcept { return id_ != 0; }
  // 0 (never a fiber's) once joined or detached.
  id get_id() const noexcept { return id_; }
  // The fiber runs on and is gone when it returns (the world forgets a
  // finished fiber).
  void detach() noexcept { id_ = 0; }
  // The fiber running now, to compare with get_id(); on the driver's stack
  // an id no fiber_thread has (0 is a joined or detached one's).
  static id current() {
    const auto f = world::current().current_fiber();
    return f != 0 ? f : ~id{0};
  }
  void join() {
    FL_ASSERT(id_ != 0);
    // Joined even when the fiber's exception comes out of the wait.
    const auto id = std::exchange(id_, 0);
    auto& w = world::current();
    (void)w.wait([&] { return w.finished(id); });
  }

 private:
  world::fiber_id id_ = 0;
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
