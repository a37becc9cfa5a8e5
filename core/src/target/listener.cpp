// The target's listeners: one per rail (or one on bind_address), accepts
// spread round-robin over the shards and the connection limit at accept.
// The accepting itself, with its backoff after an error, is accept_loop's;
// sessions are server.cpp's.
#include <fmt/format.h>

#include "faultlane/base/probe.hpp"
#include "faultlane/core/failpoint.hpp"
#include "faultlane/core/net.hpp"
#include "target/server.hpp"

namespace faultlane::detail {

using asio::ip::tcp;

// Opens one listener on `address`:`port` on shard 0.
result<std::uint16_t> server::open_listener(const std::string& address, std::uint16_t port) {
  std::error_code ec;
  auto ip = asio::ip::make_address(address, ec);
  if (ec)
    return error{status::invalid_argument,
                 fmt::format("listen address {}: {}", address, ec.message())};
  listener l;
  l.shard = 0;
  l.loop = std::make_unique<accept_loop>(rt_.pool->context(l.shard), listener_hooks());
  ec = l.loop->listen(tcp::endpoint(ip, port));
  if (ec) {
    return error{status::connection_failed,
                 fmt::format("listen on {}:{}: {}", address, port, ec.message())};
  }
  auto bound = l.loop->port();
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
    post_guarded(rt_, each.shard, [&each] { each.loop->start(); });
  }
  return {};
}

// Each hook's body runs guarded: a throw marks the runtime failed, and the
// loop goes on (after an error, once it has waited).
accept_hooks server::listener_hooks() {
  return {
      .place =
          [this] {
            auto shard = rt_.pool->next_shard();
            return accept_destination{rt_.pool->context(shard), shard};
          },
      .failed =
          [this](const std::error_code&) {
            run_guarded(rt_, [&] {
              (void)FAULTLANE_FAILPOINT("server.on_accept");
              bump(rt_.stats.accept_errors);
            });
          },
      .accepted =
          [this](net::socket socket, std::size_t shard) {
            run_guarded(rt_, [&] { on_accept(shard, std::move(socket)); });
          },
  };
}

void server::on_accept(std::size_t shard, net::socket socket) {
  (void)FAULTLANE_FAILPOINT("server.on_accept");
  auto live = rt_.stats.sessions_live.fetch_add(1, std::memory_order_acq_rel);
  if (live >= rt_.config.max_connections || !rt_.accepting_work()) {
    // Over the connection limit: refuse this one at once; the peer sees
    // the connection close before any byte.
    rt_.stats.sessions_live.fetch_sub(1, std::memory_order_acq_rel);
    FAULTLANE_PROBE_IF(live >= rt_.config.max_connections, session_refused_at_connection_limit);
    bump(rt_.stats.sessions_rejected_limit);
    std::error_code ignored;
    socket.close(ignored);
  } else {
    bump(rt_.stats.sessions_accepted);
    start_session(shard, std::move(socket));
  }
}

void server::stop_accepting(std::size_t shard) {
  for (auto& l : listeners_) {
    if (l.shard != shard) continue;
    l.loop->close();
    FL_ASSERT(!l.loop->is_open());
  }
}

}  // namespace faultlane::detail
