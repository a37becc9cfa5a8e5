// poll_window; see poll_window.hpp.
#include "faultlane/core/poll_window.hpp"
#include "faultlane/core/net.hpp"

#include <asio/post.hpp>

namespace faultlane {

// Queues the polling handler: while it is queued, the scheduler checks the
// reactor without blocking before it runs it, and it queues itself again
// until the window passed since the last event.
void poll_window::again() noexcept {
  polling_ = true;
  try {
    asio::post(context_, [this] {
      const auto now = net::clock::now();
      if (happened_) {
        happened_ = false;
        last_event_ = now;
      }
      if (now - last_event_ < window_) {
        again();
      } else {
        polling_ = false;
      }
    });
  } catch (...) {
    polling_ = false;  // out of memory: sleep as without polling
  }
}

}  // namespace faultlane
