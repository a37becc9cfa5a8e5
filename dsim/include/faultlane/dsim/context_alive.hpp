// context_alive: whether an Asio execution context still takes handlers,
// for the world's sockets and timers (socket.hpp, timer.hpp).
#pragma once

#include <asio/execution/context.hpp>
#include <asio/execution_context.hpp>
#include <asio/query.hpp>

#include <memory>
#include <utility>
#include <vector>

namespace faultlane::dsim::detail {

// Whether an execution context still takes handlers: false once it shut
// down (it is being destroyed). Asio then destroys every operation still
// pending on it without running it; a simulated socket's completion that
// comes later is dropped the same way, never posted to a context that is
// gone (found by a planted bug whose shutdown left lanes behind their
// io_context: a heap-use-after-free on the world, not on Asio).
class context_alive final : public asio::execution_context::service {
 public:
  using key_type = context_alive;
  inline static asio::execution_context::id id;
  explicit context_alive(asio::execution_context& owner) : service(owner) {}
  const std::shared_ptr<bool> flag = std::make_shared<bool>(true);

  // At shutdown, `drop(owner)` runs for each owner still alive: a socket's
  // or a timer wait's pending handlers are destroyed there, as Asio's
  // services destroy their operations, which breaks the cycles a handler
  // holding its own socket's owner makes.
  using drop_fn = void (*)(void*);
  void on_shutdown(std::weak_ptr<void> owner, drop_fn drop) {
    if (owners_.size() == owners_.capacity())
      std::erase_if(owners_, [](const auto& o) { return o.first.expired(); });
    owners_.emplace_back(std::move(owner), drop);
  }

 private:
  void shutdown() override {
    *flag = false;
    auto owners = std::move(owners_);
    for (auto& [weak, drop] : owners) {
      if (auto owner = weak.lock()) drop(owner.get());
    }
  }
  std::vector<std::pair<std::weak_ptr<void>, drop_fn>> owners_;
};

template <typename Executor>
context_alive& context_alive_of(const Executor& ex) {
  return asio::use_service<context_alive>(asio::query(ex, asio::execution::context));
}
template <typename Executor>
std::shared_ptr<bool> alive_flag(const Executor& ex) {
  return context_alive_of(ex).flag;
}

}  // namespace faultlane::dsim::detail
