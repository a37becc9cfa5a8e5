// network_fixture: a world, a network and two contexts on two nodes (and
// one connection between them), for the network's tests
// (network_*_test.cpp), and the helpers they share.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <system_error>
#include <utility>
#include <vector>

#include <asio/error.hpp>

#include "faultlane/dsim/socket.hpp"

namespace faultlane::dsim::testing {

inline const auto server_node = asio::ip::make_address("127.0.0.1");
inline const auto client_node = asio::ip::make_address("127.0.0.2");

// Opens `a`, binds it to `at` and listens: the first step's error, or none.
inline std::error_code listen_at(acceptor& a, const endpoint& at, int backlog) {
  std::error_code ec;
  a.open(asio::ip::tcp::v4(), ec);
  if (!ec) a.bind(at, ec);
  if (!ec) a.listen(backlog, ec);
  return ec;
}

// A world, a network and two contexts on two nodes.
struct two_nodes {
  explicit two_nodes(std::uint64_t seed, network_options o = {}) : w(seed), net(w, o) {
    w.add_context(server_ctx, "server");
    w.add_context(client_ctx, "client");
    net.place(server_ctx, server_node);
    net.place(client_ctx, client_node);
  }
  ~two_nodes() {
    w.remove_context(server_ctx);
    w.remove_context(client_ctx);
  }
  // Listens on the server node at an ephemeral port.
  endpoint listen(acceptor& a, int backlog = 16) {
    auto ec = listen_at(a, {server_node, 0}, backlog);
    EXPECT_FALSE(ec) << ec.message();
    return a.local_endpoint(ec);
  }
  // A connected pair: [0] the client's, [1] the server's.
  std::pair<socket, socket> connect_pair(acceptor& a, const endpoint& at) {
    socket client(client_ctx), server(server_ctx);
    bool connected = false, accepted = false;
    client.async_connect(at, [&](std::error_code ec) { connected = !ec; });
    a.async_accept(server_ctx, [&](std::error_code ec, socket s) {
      accepted = !ec;
      server = std::move(s);
    });
    EXPECT_EQ(w.run_until([&] { return connected && accepted; }), world::wait_result::met);
    return {std::move(client), std::move(server)};
  }
  world w;
  network net;
  asio::io_context server_ctx, client_ctx;
};

// The error code an operation's handler gets: `start` begins the
// operation with the handler it is given, and the world runs until that
// handler ran (in_progress if it never does).
template <typename Start>
std::error_code completion_code(two_nodes& t, Start start) {
  std::error_code end = asio::error::in_progress;
  bool done = false;
  start([&end, &done](std::error_code e, auto&&...) {
    end = e;
    done = true;
  });
  EXPECT_EQ(t.w.run_until([&] { return done; }), world::wait_result::met) << "no handler ran";
  return end;
}

// Listens on 0.0.0.0, every node's address, at an ephemeral port: that port.
inline std::uint16_t listen_on_every_node(acceptor& a) {
  auto ec = listen_at(a, {asio::ip::address_v4::any(), 0}, 4);
  EXPECT_FALSE(ec) << ec.message();
  return a.local_endpoint(ec).port();
}

// Two nodes joined by one connection, accepted from a listener on the
// server node.
struct connected_nodes : two_nodes {
  explicit connected_nodes(std::uint64_t seed, network_options o = {})
      : two_nodes(seed, o), ends(connect_pair(listener, listen(listener))) {}
  acceptor listener{server_ctx};
  std::pair<socket, socket> ends;
  socket& client = ends.first;
  socket& server = ends.second;
};

inline std::vector<std::byte> pattern(std::size_t n, std::uint64_t seed) {
  std::vector<std::byte> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = std::byte((i * 131 + seed * 7) & 0xff);
  return out;
}

inline const auto third_node = asio::ip::make_address("127.0.0.3");

// Buffers of exactly `buffer` bytes each way, and no partial reads or
// writes: a test of one rule sees no other draw.
inline network_options whole(std::size_t buffer) {
  network_options o;
  o.buffer_min = o.buffer_max = buffer;
  o.partial_write = 0;
  o.partial_read = 0;
  return o;
}

// Runs the world until nothing is left to do.
inline void settle(two_nodes& t) {
  EXPECT_EQ(t.w.run_until([] { return false; }), world::wait_result::idle);
}

// `s` writes all of `bytes` at once (they fit the room its buffer has),
// then the world settles.
inline void write_all_now(two_nodes& t, socket& s, const std::vector<std::byte>& bytes) {
  std::error_code ec;
  ASSERT_EQ(s.write_some(asio::buffer(bytes), ec), bytes.size()) << ec.message();
  settle(t);
}

template <typename E>
std::error_code code(E e) {
  return asio::error::make_error_code(e);
}
inline std::error_code eof_code() { return asio::error::make_error_code(asio::error::eof); }

}  // namespace faultlane::dsim::testing
