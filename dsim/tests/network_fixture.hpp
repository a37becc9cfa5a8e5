// network_fixture: a world, a network and two contexts on two nodes, for
// the network's tests (network_test.cpp, network_flow_test.cpp).
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "faultlane/dsim/socket.hpp"

namespace faultlane::dsim::testing {

inline const auto server_node = asio::ip::make_address("127.0.0.1");
inline const auto client_node = asio::ip::make_address("127.0.0.2");

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
    std::error_code ec;
    a.open(asio::ip::tcp::v4(), ec);
    a.bind({server_node, 0}, ec);
    a.listen(backlog, ec);
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

inline std::vector<std::byte> pattern(std::size_t n, std::uint64_t seed) {
  std::vector<std::byte> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = std::byte((i * 131 + seed * 7) & 0xff);
  return out;
}

}  // namespace faultlane::dsim::testing
