// timer: a waitable timer on the world's virtual clock, with the part of
// asio::basic_waitable_timer's interface the core uses. A wait completes
// (posted to the timer's executor) when virtual time reaches the expiry,
// or with operation_aborted when cancelled or moved.
#pragma once

#include <asio/any_io_executor.hpp>
#include <asio/associated_executor.hpp>
#include <asio/async_result.hpp>
#include <asio/error.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>

#include <cstddef>
#include <list>
#include <memory>
#include <system_error>
#include <utility>

#include "faultlane/base/unique_function.hpp"
#include "faultlane/dsim/context_alive.hpp"
#include "faultlane/dsim/world.hpp"

namespace faultlane::dsim {

template <typename Executor = asio::any_io_executor>
class basic_timer {
 public:
  using executor_type = Executor;
  using clock_type = clock;
  using duration = clock::duration;
  using time_point = clock::time_point;

  explicit basic_timer(const executor_type& ex) : ex_(ex) {}
  explicit basic_timer(asio::io_context& context) : ex_(context.get_executor()) {}
  basic_timer(const basic_timer&) = delete;
  basic_timer& operator=(const basic_timer&) = delete;
  ~basic_timer() { cancel(); }

  executor_type get_executor() noexcept { return ex_; }
  time_point expiry() const noexcept { return expiry_; }

  // Both cancel every pending wait first, as Asio's do; the count of them.
  std::size_t expires_at(time_point t) {
    const auto n = cancel();
    expiry_ = t;
    return n;
  }
  std::size_t expires_after(duration d) { return expires_at(clock::now() + d); }

  std::size_t cancel() {
    if (waits_.empty()) return 0;  // also after the world ended
    std::size_t n = 0;
    auto& w = world::current();
    while (!waits_.empty()) {
      auto wait = std::move(waits_.front());
      waits_.pop_front();
      if (w.cancel(wait->event)) {
        w.record("timer_cancel");
        complete(std::move(wait->handler), asio::error::operation_aborted);
        ++n;
      }
    }
    return n;
  }

  template <typename Token>
  auto async_wait(Token&& token) {
    return asio::async_initiate<Token, void(std::error_code)>(
        [this](auto handler) {
          auto wait = std::make_shared<pending>();
          auto ex = asio::get_associated_executor(handler, ex_);
          // Dropped, as Asio drops it, if the context is gone by then.
          auto alive = detail::alive_flag(ex);
          wait->handler = [h = std::move(handler), ex, alive](std::error_code ec) mutable {
            if (!*alive) return;
            asio::post(ex, [h = std::move(h), ec]() mutable { std::move(h)(ec); });
          };
          std::weak_ptr<pending> weak = wait;
          wait->event = world::current().at(expiry_, [this, weak] { fire(weak); });
          detail::context_alive_of(ex).on_shutdown(wait, [](void* p) {
            // Moved out first: destroying it may destroy this timer's owner.
            auto h = std::move(static_cast<pending*>(p)->handler);
          });
          waits_.push_back(std::move(wait));
        },
        token);
  }

 private:
  struct pending {
    world::event_id event = 0;
    unique_function<void(std::error_code)> handler;
  };

  void fire(const std::weak_ptr<pending>& weak) {
    auto wait = weak.lock();
    if (!wait) return;
    for (auto it = waits_.begin(); it != waits_.end(); ++it) {
      if (*it == wait) {
        waits_.erase(it);
        break;
      }
    }
    world::current().record("timer_fire");
    complete(std::move(wait->handler), std::error_code());
  }

  // An empty handler was dropped when its context shut down.
  static void complete(unique_function<void(std::error_code)> handler, std::error_code ec) {
    if (handler) handler(ec);
  }

  executor_type ex_;
  time_point expiry_{};
  std::list<std::shared_ptr<pending>> waits_;
};

using timer = basic_timer<>;

}  // namespace faultlane::dsim
