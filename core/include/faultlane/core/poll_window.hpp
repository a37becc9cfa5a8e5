// poll_window: busy polling inside one io_context::run().
//
//   poll_window polling(context, std::chrono::microseconds(50));
//   ... in a handler on the context's thread ...
//   polling.event();   // poll, not sleep, for 50 us from here
//
// After an event the thread keeps checking the reactor without blocking
// (while a handler is queued, Asio's scheduler polls epoll instead of
// waiting in it) until the window passed with no further event, then
// sleeps in the kernel as before. It all happens inside the thread's one
// run(): a thread that called poll() or run_one() in a loop would drop
// Asio's per-thread handler memory at every call and allocate for every
// socket operation. Used by the core's io threads (io_pool) and by each
// relay's thread. Touched by the context's thread only.
#pragma once

#include <asio/io_context.hpp>

#include <chrono>

#include "faultlane/core/net.hpp"

namespace faultlane {

class poll_window {
 public:
  // A zero window never polls.
  poll_window(asio::io_context& context, std::chrono::microseconds window) noexcept
      : context_(context), window_(window) {}
  poll_window(const poll_window&) = delete;
  poll_window& operator=(const poll_window&) = delete;

  // On the context's thread: something happened, so the thread polls for
  // the window from the next polling round on. Cheap enough per handler:
  // the clock is read once per round, not per event.
  void event() noexcept {
    if (window_.count() == 0) return;
    happened_ = true;
    if (!polling_) again();
  }

 private:
  void again() noexcept;

  asio::io_context& context_;
  const std::chrono::microseconds window_;
  bool polling_ = false;   // the polling handler is queued
  bool happened_ = false;  // an event since the polling handler last looked
  net::clock::time_point last_event_{};
};

}  // namespace faultlane
