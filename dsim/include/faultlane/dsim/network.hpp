// network: a simulated TCP network between named nodes (an address is a
// node), after FoundationDB's simulated connections, for the world's one
// thread.
//
// Per connection the seed draws a one-way latency and a buffer size (send
// buffer and receive window together: what a writer may have outstanding
// before the reader takes some). A write takes a seeded prefix of what it
// offers (at least one byte when there is room); a read returns a seeded cut
// of what has arrived. Bytes arrive in order, `latency` after they were
// written. A FIN follows the bytes written before it, and so does a reset
// (close with linger 0, close with unread bytes, a crashed node): the
// reader reads what arrived, then gets the reset. A connect to an address and port
// nobody listens on is refused after one latency; a full accept backlog
// holds a connect until an accept makes room. crash(node) resets every
// connection with an end on the node and closes its listeners.
//
// Every connect, accept, write, delivery, read, FIN and reset is recorded
// in the world's digest.
#pragma once

#include <asio/ip/address.hpp>
#include <asio/ip/tcp.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "faultlane/dsim/world.hpp"

namespace faultlane::dsim {

using endpoint = asio::ip::tcp::endpoint;

struct network_options {
  // One-way latency per connection, drawn in [min, max].
  std::chrono::nanoseconds latency_min{std::chrono::microseconds(5)};
  std::chrono::nanoseconds latency_max{std::chrono::microseconds(200)};
  // Outstanding bytes per direction, drawn in [min, max].
  std::size_t buffer_min = 16u << 10;
  std::size_t buffer_max = 4u << 20;
  // How often a write takes less than it could, and a read returns less
  // than has arrived.
  double partial_write = 0.2;
  double partial_read = 0.2;
};

namespace detail {
struct connection;
struct socket_state;
struct listener;
}  // namespace detail

class network {
 public:
  explicit network(world& w, network_options options = {});
  network(const network&) = delete;
  network& operator=(const network&) = delete;
  ~network();

  // The network of this thread; asserts that there is one.
  static network& current();

  world& owner() noexcept { return world_; }
  const network_options& options() const noexcept { return options_; }

  // Sockets whose io_context is placed on a node take its address as
  // their own when they connect unbound (127.0.0.1 otherwise).
  void place(asio::io_context& context, const asio::ip::address& node);
  asio::ip::address node_of(asio::io_context& context) const;

  // Resets every connection with an end on `node` and closes its
  // listeners (a process killed: its peers see a reset). The node stays
  // down until revive(): its connects, and connects to it, are refused.
  void crash(const asio::ip::address& node);
  void revive(const asio::ip::address& node);
  bool is_down(const asio::ip::address& node) const { return down_.count(node) != 0; }

  // Sockets and acceptors open on this network: each holds it by address,
  // so it must outlive them (the destructor asserts none is left).
  void object_opened() noexcept { ++objects_; }
  void object_closed() noexcept { --objects_; }

  // Connections opened so far, and those still open at both ends.
  std::uint64_t connections_opened() const noexcept { return next_connection_ - 1; }
  std::size_t connections_open() const;

  // Used by sockets and acceptors.
  std::uint16_t ephemeral_port(const asio::ip::address& node);
  bool port_in_use(const endpoint& at) const;
  void listen(const endpoint& at, const std::shared_ptr<detail::listener>& l);
  void unlisten(const endpoint& at);
  std::shared_ptr<detail::listener> listener_at(const endpoint& at) const;
  std::uint64_t connection_id() noexcept { return next_connection_++; }
  void opened(const std::shared_ptr<detail::connection>& c);

 private:
  world& world_;
  const network_options options_;
  network* previous_;
  std::map<asio::io_context*, asio::ip::address> placed_;
  std::map<endpoint, std::weak_ptr<detail::listener>> listeners_;
  std::map<asio::ip::address, std::uint16_t> next_port_;
  std::vector<std::weak_ptr<detail::connection>> connections_;
  std::set<asio::ip::address> down_;
  std::uint64_t next_connection_ = 1;
  std::int64_t objects_ = 0;
};

}  // namespace faultlane::dsim
