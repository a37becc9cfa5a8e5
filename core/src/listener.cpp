// The target's listeners: one per rail (or one on bind_address), accepts
// spread round-robin over the shards, the connection limit at accept, and
// the bounded backoff after an accept error. Sessions are server.cpp's.
#include <fmt/format.h>

#include <algorithm>

#include "faultlane/core/failpoint.hpp"
#include "faultlane/core/limits.hpp"
#include "server.hpp"

namespace faultlane::detail {

using asio::ip::tcp;
using namespace std::chrono;

// Opens one listener on `address`:`port` on shard 0.
result<std::uint16_t> server::open_listener(const std::string& address, std::uint16_t port) {
  std::error_code ec;
  auto ip = asio::ip::make_address(address, ec);
  if (ec)
    return error{status::invalid_argument,
                 fmt::format("listen address {}: {}", address, ec.message())};
  listener l;
  l.shard = 0;
  l.acceptor = std::make_unique<tcp::acceptor>(rt_.pool->context(l.shard));
  tcp::endpoint ep(ip, port);
  l.acceptor->open(ep.protocol(), ec);
  if (!ec) l.acceptor->set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) l.acceptor->bind(ep, ec);
  if (!ec) l.acceptor->listen(asio::socket_base::max_listen_connections, ec);
  if (!ec) l.acceptor->non_blocking(true, ec);  // accept_after_backoff never waits
  if (ec) {
    return error{status::connection_failed,
                 fmt::format("listen on {}:{}: {}", address, port, ec.message())};
  }
  auto bound = l.acceptor->local_endpoint().port();
  FL_ASSERT(port == 0 || bound == port);
  listeners_.push_back(std::move(l));
  return bound;
}

// Without rails: one listener on bind_address, published as
// advertise_address (or bind_address). With rails: one listener per rail,
// bound to the rail's own address, so nothing listens on a wildcard and
// each rail's endpoint is reachable only through that rail.
result<void> server::listen() {
  const auto& c = rt_.config;
  if (c.rail_addresses.empty()) {
    auto port = open_listener(c.bind_address.empty() ? "0.0.0.0" : c.bind_address, c.port);
    if (!port.ok()) return port.error();
    endpoints_.push_back(
        {c.advertise_address.empty() ? c.bind_address : c.advertise_address, port.value()});
  } else {
    for (const auto& rail : c.rail_addresses) {
      auto port = open_listener(rail, c.port);
      if (!port.ok()) return port.error();
      endpoints_.push_back({rail, port.value()});
    }
  }
  FL_ASSERT(endpoints_.size() == listeners_.size());  // one published endpoint per listener
  for (auto& each : listeners_) {
    post_guarded(rt_, each.shard, [this, &each] { accept_next(each); });
  }
  return {};
}

void server::accept_next(listener& l) {
  FL_ASSERT(l.acceptor);
  auto shard = rt_.pool->next_shard();
  l.acceptor->async_accept(rt_.pool->context(shard),
                           [this, &l, shard](std::error_code ec, tcp::socket socket) {
                             run_guarded(
                                 rt_, [&] { on_accept(l, shard, ec, std::move(socket)); },
                                 [&] {
                                   if (l.acceptor->is_open()) accept_next(l);
                                 });
                           });
}

void server::on_accept(listener& l, std::size_t shard, const std::error_code& ec,
                       tcp::socket socket) {
  if (ec == asio::error::operation_aborted || !l.acceptor->is_open()) return;
  (void)FAULTLANE_FAILPOINT("server.on_accept");
  if (ec) {
    // A transient error (out of descriptors or buffers): retrying at once
    // would spin, so wait, longer each time, and go on when it clears.
    bump(rt_.stats.accept_errors);
    return back_off(l);
  }
  l.backoff_ms = 0;
  auto live = rt_.stats.sessions_live.fetch_add(1, std::memory_order_acq_rel);
  if (live >= rt_.config.max_connections || !rt_.accepting_work()) {
    // Over the connection limit: refuse this one at once; the peer sees
    // the connection close before any byte.
    rt_.stats.sessions_live.fetch_sub(1, std::memory_order_acq_rel);
    bump(rt_.stats.sessions_rejected_limit);
    std::error_code ignored;
    socket.close(ignored);
  } else {
    bump(rt_.stats.sessions_accepted);
    start_session(shard, std::move(socket));
  }
  accept_next(l);
}

void server::back_off(listener& l) {
  FL_ASSERT(l.acceptor->is_open());
  l.backoff_ms =
      std::clamp(l.backoff_ms * 2, limits::accept_backoff_ms_min, limits::accept_backoff_ms_max);
  if (!l.backoff) l.backoff = std::make_unique<asio::steady_timer>(rt_.pool->context(l.shard));
  l.backoff->expires_after(milliseconds(l.backoff_ms));
  l.backoff->async_wait([this, &l](std::error_code ec) {
    if (ec || !l.acceptor->is_open()) return;
    run_guarded(rt_, [&] { accept_after_backoff(l); });
  });
}

// The connection that failed to be accepted is still queued, and an
// edge-triggered reactor will not report the listener readable again
// until another one arrives: try once without waiting first.
void server::accept_after_backoff(listener& l) {
  FL_ASSERT(l.acceptor->non_blocking());
  auto shard = rt_.pool->next_shard();
  tcp::socket socket(rt_.pool->context(shard));
  std::error_code ec;
  l.acceptor->accept(socket, ec);
  if (ec == asio::error::would_block || ec == asio::error::try_again) return accept_next(l);
  on_accept(l, shard, ec, std::move(socket));
}

void server::stop_accepting(std::size_t shard) {
  for (auto& l : listeners_) {
    if (l.shard != shard) continue;
    std::error_code ignored;
    l.acceptor->close(ignored);
    if (l.backoff) l.backoff->cancel();
    FL_ASSERT(!l.acceptor->is_open());
  }
}

}  // namespace faultlane::detail
