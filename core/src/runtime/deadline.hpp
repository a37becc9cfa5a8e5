// deadline: one timer per connection that enforces "every step must make
// progress" without re-arming a timer for every chunk.
//
// The owner moves the deadline (set, push on progress, clear when idle);
// moving it later costs nothing, because when the timer fires early it just
// waits again for the current deadline. Only moving it earlier, or arming
// an idle timer, touches the timer. Every wait carries a generation; a
// handler from an older wait is stale, is counted, and does nothing.
//
// Single-threaded: used only on the owning connection's shard.
#pragma once

#include <asio/io_context.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

#include "faultlane/base/assert.hpp"
#include "faultlane/core/net.hpp"

namespace faultlane::detail {

// A timer on a shard whose executor is the io_context's own, not Asio's
// polymorphic any_io_executor. When its wait completes Asio then calls the
// handler directly; through any_io_executor it wraps the call in a
// function object taken from the thread's recycling cache, which under
// load missed now and then and allocated in the steady state (the deadline
// fires once per progress timeout while a connection is busy).
using shard_timer = net::shard_timer;

class deadline {
 public:
  using clock = net::clock;

  // `on_expire` runs on the shard when the deadline passes; `on_stale`
  // whenever a superseded wait completes (for the stale-handler counter).
  deadline(asio::io_context& context, std::function<void()> on_expire,
           std::function<void()> on_stale)
      : timer_(context), on_expire_(std::move(on_expire)), on_stale_(std::move(on_stale)) {}

  // `keepalive` is held by the pending wait so the owner outlives it.
  void set(clock::duration after, std::shared_ptr<void> keepalive) {
    FL_ASSERT(after.count() >= 0);
    FL_ASSERT(keepalive != nullptr);  // the pending wait must keep its owner alive
    when_ = clock::now() + after;
    active_ = true;
    if (!waiting_ || when_ < armed_for_) arm(std::move(keepalive));
  }
  // Progress: move an active deadline later. Cheap: no timer call.
  void push(clock::duration after) {
    FL_ASSERT(after.count() >= 0);
    if (active_) when_ = clock::now() + after;
  }
  void clear() noexcept { active_ = false; }
  // Cancels any pending wait (its handler becomes stale).
  void cancel() noexcept {
    active_ = false;
    if (waiting_) {
      ++generation_;
      waiting_ = false;
      timer_.cancel();
    }
    FL_ASSERT(!waiting_ && !active_);
  }
  bool active() const noexcept { return active_; }

 private:
  void arm(std::shared_ptr<void> keepalive) {
    FL_ASSERT(active_);
    FL_ASSERT(keepalive != nullptr);
    auto generation = ++generation_;
    waiting_ = true;
    armed_for_ = when_;
    timer_.expires_at(when_);
    timer_.async_wait([this, generation, keepalive = std::move(keepalive)](std::error_code) {
      if (generation != generation_) {
        on_stale_();
        return;
      }
      FL_ASSERT(waiting_);  // the current wait: cancel() would have moved the generation
      waiting_ = false;
      if (!active_) return;
      if (clock::now() < when_) {
        arm(keepalive);  // pushed later since this wait began
        return;
      }
      active_ = false;
      on_expire_();
    });
  }

  shard_timer timer_;
  std::function<void()> on_expire_;
  std::function<void()> on_stale_;
  clock::time_point when_{};
  clock::time_point armed_for_{};
  std::uint64_t generation_ = 0;
  bool active_ = false;
  bool waiting_ = false;
};

}  // namespace faultlane::detail
