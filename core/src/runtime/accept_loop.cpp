// accept_loop: accept, back off after a failure, try again; see
// accept_loop.hpp.
#include "faultlane/core/accept_loop.hpp"

#include <asio/post.hpp>

#include <algorithm>
#include <chrono>

#include "faultlane/base/assert.hpp"
#include "faultlane/core/failpoint.hpp"
#include "faultlane/core/limits.hpp"
#include "faultlane/core/net.hpp"

namespace faultlane {

using asio::ip::tcp;

accept_loop::accept_loop(asio::io_context& context, accept_hooks hooks)
    : hooks_(std::move(hooks)), acceptor_(context), backoff_(context) {
  FL_ASSERT(hooks_.place && hooks_.failed && hooks_.accepted);
}

std::error_code accept_loop::listen(const tcp::endpoint& at) {
  FL_ASSERT(!acceptor_.is_open());
  std::error_code ec;
  acceptor_.open(at.protocol(), ec);
  if (!ec) acceptor_.set_option(net::acceptor::reuse_address(true), ec);
  if (!ec) acceptor_.bind(at, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (!ec) acceptor_.non_blocking(true, ec);  // accept_after_backoff never waits
  if (!ec) port_ = acceptor_.local_endpoint(ec).port();
  if (ec) close();
  return ec;
}

void accept_loop::start(std::shared_ptr<void> owner) { accept_next(owner); }

void accept_loop::close() noexcept {
  std::error_code ignored;
  acceptor_.close(ignored);
  backoff_.cancel();
}

void accept_loop::accept_next(const keep_alive& owner) {
  if (!acceptor_.is_open()) return;
  auto to = hooks_.place();
  // return_error here fails the accept as EMFILE does: the connection
  // stays queued. Keyed by the listening port, to fail one listener.
  if (FAULTLANE_FAILPOINT_KEY("accept_loop.before_accept", port_)) {
    asio::post(acceptor_.get_executor(), [this, owner, to] {
      on_accept(owner, asio::error::no_descriptors, net::socket(to.context), to.shard);
    });
    return;
  }
  acceptor_.async_accept(to.context,
                         [this, owner, shard = to.shard](std::error_code ec, net::socket socket) {
                           on_accept(owner, ec, std::move(socket), shard);
                         });
}

void accept_loop::on_accept(const keep_alive& owner, const std::error_code& ec, net::socket socket,
                            std::size_t shard) {
  if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
  if (ec) {
    hooks_.failed(ec);
    return back_off(owner);
  }
  backoff_ms_ = 0;
  hooks_.accepted(std::move(socket), shard);
  accept_next(owner);
}

void accept_loop::back_off(const keep_alive& owner) {
  if (!acceptor_.is_open()) return;  // the hook closed it
  backoff_ms_ =
      std::clamp(backoff_ms_ * 2, limits::accept_backoff_ms_min, limits::accept_backoff_ms_max);
  backoff_.expires_after(std::chrono::milliseconds(backoff_ms_));
  backoff_.async_wait([this, owner](std::error_code ec) {
    if (ec || !acceptor_.is_open()) return;
    accept_after_backoff(owner);
  });
}

// The connection that failed to be accepted is still queued, and an
// edge-triggered reactor will not report the listener readable again
// until another one arrives: try once without waiting first.
void accept_loop::accept_after_backoff(const keep_alive& owner) {
  FL_ASSERT(acceptor_.non_blocking());
  auto to = hooks_.place();
  net::socket socket(to.context);
  std::error_code ec;
  if (FAULTLANE_FAILPOINT_KEY("accept_loop.before_accept", port_)) {
    ec = asio::error::no_descriptors;
  } else {
    acceptor_.accept(socket, ec);
  }
  if (ec == asio::error::would_block || ec == asio::error::try_again) return accept_next(owner);
  on_accept(owner, ec, std::move(socket), to.shard);
}

}  // namespace faultlane
