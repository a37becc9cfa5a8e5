// The simulated network's ends, as network.hpp and socket.hpp state them:
// a connection joins the client's ephemeral endpoint on its node to the
// listener's; ephemeral ports count up from 32768, skip ports in use and
// wrap after 65535, per node; a listening port and both ends of a live
// connection are in use until they go; the network counts connections
// opened and those open at both ends; each misuse of a socket or an
// acceptor ends with the error code Asio gives it; an option set on a
// socket that is not open does nothing; and a network outlives its ends.
#include <gtest/gtest.h>

#include <asio/error.hpp>

#include <cstdlib>
#include <memory>
#include <vector>

#include "network_fixture.hpp"

namespace faultlane::dsim {
namespace {

using namespace testing;

TEST(dsim_network_ends, a_connection_joins_the_clients_ephemeral_endpoint_to_the_listeners) {
  two_nodes t(41);
  acceptor a(t.server_ctx);
  const auto at = t.listen(a);
  EXPECT_EQ(at.address(), server_node);
  auto pair = t.connect_pair(a, at);
  auto& client = pair.first;
  auto& server = pair.second;
  const auto mine = client.local_endpoint();
  EXPECT_EQ(mine.address(), client_node) << "a placed context connects from its node";
  EXPECT_GE(mine.port(), 32768);
  EXPECT_EQ(client.remote_endpoint(), at);
  EXPECT_EQ(server.local_endpoint(), at);
  EXPECT_EQ(server.remote_endpoint(), mine);
}

TEST(dsim_network_ends, a_socket_on_an_unplaced_context_connects_from_127_0_0_1) {
  two_nodes t(42);
  acceptor a(t.server_ctx);
  const auto at = t.listen(a);
  asio::io_context unplaced;
  t.w.add_context(unplaced, "unplaced");
  EXPECT_EQ(t.net.node_of(unplaced), asio::ip::make_address("127.0.0.1"));
  EXPECT_EQ(t.net.node_of(t.client_ctx), client_node);
  {
    socket s(unplaced);
    bool connected = false;
    s.async_connect(at, [&](std::error_code ec) { connected = !ec; });
    ASSERT_EQ(t.w.run_until([&] { return connected; }), world::wait_result::met);
    EXPECT_EQ(s.local_endpoint().address(), asio::ip::make_address("127.0.0.1"));
  }
  settle(t);
  t.w.remove_context(unplaced);
}

// A socket bound before it connects connects from that endpoint.
TEST(dsim_network_ends, a_bound_socket_connects_from_the_endpoint_it_bound) {
  two_nodes t(43);
  acceptor a(t.server_ctx);
  const auto at = t.listen(a);
  socket client(t.client_ctx), server(t.server_ctx);
  std::error_code ec;
  const endpoint chosen(client_node, 40001);
  client.bind(chosen, ec);
  ASSERT_FALSE(ec) << ec.message();
  bool connected = false, accepted = false;
  client.async_connect(at, [&](std::error_code e) { connected = !e; });
  a.async_accept(t.server_ctx, [&](std::error_code e, socket s) {
    accepted = !e;
    server = std::move(s);
  });
  ASSERT_EQ(t.w.run_until([&] { return connected && accepted; }), world::wait_result::met);
  EXPECT_EQ(client.local_endpoint(), chosen);
  EXPECT_EQ(server.remote_endpoint(), chosen);
  socket any(t.client_ctx);
  any.bind({client_node, 0}, ec);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_GE(any.local_endpoint().port(), 32768) << "port 0 is an ephemeral port";
}

// Each node counts its own ports: 32768 up, past a port a listener holds,
// to 65535, then 32768 again.
TEST(dsim_network_ends, ephemeral_ports_count_up_skip_ports_in_use_and_wrap_after_65535) {
  two_nodes t(44);
  EXPECT_EQ(t.net.ephemeral_port(server_node), 32768);
  EXPECT_EQ(t.net.ephemeral_port(server_node), 32769);
  EXPECT_EQ(t.net.ephemeral_port(client_node), 32768) << "one counter for every node";
  acceptor a(t.server_ctx);
  const auto ec = listen_at(a, {server_node, 32770}, 4);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(t.net.ephemeral_port(server_node), 32771) << "a listening port was handed out";
  std::uint16_t last = 32771;
  while (last != 65535) {
    const auto next = t.net.ephemeral_port(server_node);
    ASSERT_EQ(next, last + 1);
    last = next;
  }
  EXPECT_EQ(t.net.ephemeral_port(server_node), 32768) << "no wrap after 65535";
  EXPECT_EQ(t.net.ephemeral_port(server_node), 32769);
  EXPECT_EQ(t.net.ephemeral_port(server_node), 32771) << "the listening port, after the wrap";
}

TEST(dsim_network_ends, a_listening_port_is_in_use_until_its_listener_closes) {
  two_nodes t(45);
  const endpoint at(server_node, 40002);
  acceptor first(t.server_ctx), second(t.server_ctx);
  auto ec = listen_at(first, at, 4);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(listen_at(second, at, 4), asio::error::address_in_use) << "a second listener";
  socket s(t.client_ctx);
  s.bind(at, ec);
  EXPECT_EQ(ec, asio::error::address_in_use) << "a socket took a listening port";
  s.bind({server_node, 40003}, ec);
  EXPECT_FALSE(ec) << "a free port: " << ec.message();
  first.close();
  second.bind(at, ec);
  ASSERT_FALSE(ec) << "a closed listener's port: " << ec.message();
  second.listen(4, ec);
  ASSERT_FALSE(ec) << ec.message();
  auto pair = t.connect_pair(second, at);
  EXPECT_TRUE(pair.second.is_open());
}

// Both ends of a connection hold their ports (no SO_REUSEADDR here) until
// the connection is gone: the client's ephemeral one, and the listener's
// after the listener closed.
TEST(dsim_network_ends, a_connections_ends_hold_their_ports_until_it_is_gone) {
  two_nodes t(46);
  endpoint client_end, listener_end;
  {
    acceptor a(t.server_ctx);
    listener_end = t.listen(a);
    auto pair = t.connect_pair(a, listener_end);
    client_end = pair.first.local_endpoint();
    a.close();
    std::error_code ec;
    socket s(t.client_ctx);
    s.bind(client_end, ec);
    EXPECT_EQ(ec, asio::error::address_in_use) << "the client's end";
    acceptor again(t.server_ctx);
    again.open(asio::ip::tcp::v4(), ec);
    again.bind(listener_end, ec);
    EXPECT_EQ(ec, asio::error::address_in_use) << "the accepted end";
  }
  settle(t);  // the FINs of the closes, then nothing refers to the connection
  std::error_code ec;
  socket s(t.client_ctx);
  s.bind(client_end, ec);
  EXPECT_FALSE(ec) << "the client's end, after the connection: " << ec.message();
  acceptor again(t.server_ctx);
  again.open(asio::ip::tcp::v4(), ec);
  again.bind(listener_end, ec);
  EXPECT_FALSE(ec) << "the accepted end, after the connection: " << ec.message();
}

// Opened counts every connect that connected; open counts those that
// neither end closed, whichever end closes first, and none once they are
// gone. A refused connect opens nothing.
TEST(dsim_network_ends, the_network_counts_connections_opened_and_open_at_both_ends) {
  two_nodes t(47);
  EXPECT_EQ(t.net.connections_opened(), 0u);
  EXPECT_EQ(t.net.connections_open(), 0u);
  acceptor a(t.server_ctx);
  const auto at = t.listen(a);
  {
    auto one = t.connect_pair(a, at);
    EXPECT_EQ(t.net.connections_opened(), 1u);
    EXPECT_EQ(t.net.connections_open(), 1u);
    auto two = t.connect_pair(a, at);
    EXPECT_EQ(t.net.connections_opened(), 2u);
    EXPECT_EQ(t.net.connections_open(), 2u);
    one.first.close();  // the connecting end
    EXPECT_EQ(t.net.connections_open(), 1u) << "a connection its client closed is open";
    two.second.close();  // the accepted end
    EXPECT_EQ(t.net.connections_open(), 0u) << "a connection its server closed is open";
    socket refused(t.client_ctx);
    bool done = false;
    refused.async_connect({server_node, static_cast<unsigned short>(at.port() + 1)},
                          [&](std::error_code) { done = true; });
    ASSERT_EQ(t.w.run_until([&] { return done; }), world::wait_result::met);
    EXPECT_EQ(t.net.connections_opened(), 2u) << "a refused connect counted";
  }
  settle(t);
  EXPECT_EQ(t.net.connections_open(), 0u) << "connections gone are counted";
  EXPECT_EQ(t.net.connections_opened(), 2u);
}

// A read and a write of `s`, at once and through their handlers, end with
// `expected`.
void expect_reads_and_writes_end_with(two_nodes& t, socket& s, std::error_code expected) {
  std::error_code ec;
  std::byte one[1] = {};
  s.read_some(asio::buffer(one), ec);
  EXPECT_EQ(ec, expected) << "read_some";
  s.write_some(asio::buffer(one), ec);
  EXPECT_EQ(ec, expected) << "write_some";
  std::error_code read_end, write_end;
  int done = 0;
  s.async_read_some(asio::buffer(one), [&](std::error_code e, std::size_t) {
    read_end = e;
    ++done;
  });
  s.async_write_some(asio::buffer(one), [&](std::error_code e, std::size_t) {
    write_end = e;
    ++done;
  });
  ASSERT_EQ(t.w.run_until([&] { return done == 2; }), world::wait_result::met);
  EXPECT_EQ(read_end, expected) << "async_read_some";
  EXPECT_EQ(write_end, expected) << "async_write_some";
}

// A socket that is open but not connected: reads, writes, its peer and a
// shutdown say not_connected, at once or through the handler; it counts as
// a peer gone (the idle lane's check sends nothing on it).
TEST(dsim_network_ends, a_socket_that_is_not_connected_says_not_connected) {
  two_nodes t(48);
  socket s(t.client_ctx);
  s.open();
  expect_reads_and_writes_end_with(t, s, code(asio::error::not_connected));
  std::error_code ec;
  s.remote_endpoint(ec);
  EXPECT_EQ(ec, code(asio::error::not_connected)) << "remote_endpoint";
  s.shutdown(socket::shutdown_send, ec);
  EXPECT_EQ(ec, code(asio::error::not_connected)) << "shutdown";
  EXPECT_TRUE(s.peer_gone_or_ready());
  EXPECT_EQ(s.queued(), 0u);
  s.open(asio::ip::tcp::v4(), ec);
  EXPECT_EQ(ec, code(asio::error::already_open));
}

// A closed socket has no descriptor: everything says bad_descriptor.
TEST(dsim_network_ends, a_closed_socket_says_bad_descriptor) {
  connected_nodes t(49);
  auto& s = t.client;
  s.close();
  EXPECT_FALSE(s.is_open());
  EXPECT_TRUE(s.peer_gone_or_ready()) << "a closed socket's peer is gone";
  EXPECT_EQ(s.queued(), 0u);
  expect_reads_and_writes_end_with(t, s, code(asio::error::bad_descriptor));
  std::error_code ec;
  s.local_endpoint(ec);
  EXPECT_EQ(ec, code(asio::error::bad_descriptor)) << "local_endpoint";
  s.available(ec);
  EXPECT_EQ(ec, code(asio::error::bad_descriptor)) << "available";
  EXPECT_EQ(completion_code(t, [&](auto done) { s.async_wait(socket::wait_read, done); }),
            code(asio::error::bad_descriptor))
      << "async_wait";
}

TEST(dsim_network_ends, connecting_a_connected_socket_says_already_connected) {
  two_nodes t(50);
  acceptor a(t.server_ctx);
  const auto at = t.listen(a);
  auto pair = t.connect_pair(a, at);
  EXPECT_EQ(completion_code(t, [&](auto done) { pair.first.async_connect(at, done); }),
            code(asio::error::already_connected));
  EXPECT_EQ(t.net.connections_opened(), 1u);
}

// An acceptor listens only once open and bound; opened twice it says so;
// closed, its accepts and its endpoint say bad_descriptor.
TEST(dsim_network_ends, an_acceptor_listens_only_open_and_bound_and_closed_is_bad_descriptor) {
  two_nodes t(51);
  std::error_code ec;
  acceptor unbound(t.server_ctx);
  unbound.open(asio::ip::tcp::v4(), ec);
  ASSERT_FALSE(ec);
  unbound.open(asio::ip::tcp::v4(), ec);
  EXPECT_EQ(ec, code(asio::error::already_open));
  unbound.listen(4, ec);
  EXPECT_EQ(ec, code(asio::error::invalid_argument)) << "listening unbound";
  acceptor unopened(t.server_ctx);
  unopened.bind({server_node, 0}, ec);
  ASSERT_FALSE(ec);
  unopened.listen(4, ec);
  EXPECT_EQ(ec, code(asio::error::invalid_argument)) << "listening unopened";
  acceptor a(t.server_ctx);
  const auto at = t.listen(a);
  EXPECT_EQ(a.local_endpoint(ec), at);
  EXPECT_FALSE(ec);
  a.close();
  a.local_endpoint(ec);
  EXPECT_EQ(ec, code(asio::error::bad_descriptor)) << "local_endpoint";
  socket s(t.server_ctx);
  a.accept(s, ec);
  EXPECT_EQ(ec, code(asio::error::bad_descriptor)) << "accept";
  EXPECT_EQ(completion_code(t, [&](auto done) { a.async_accept(t.server_ctx, done); }),
            code(asio::error::bad_descriptor))
      << "async_accept";
}

// A non-blocking accept takes a connection the backlog holds, with the
// ends a connection has.
TEST(dsim_network_ends, a_non_blocking_accept_takes_a_queued_connection) {
  two_nodes t(52);
  acceptor a(t.server_ctx);
  const auto at = t.listen(a);
  socket client(t.client_ctx), server(t.server_ctx);
  bool connected = false;
  client.async_connect(at, [&](std::error_code e) { connected = !e; });
  ASSERT_EQ(t.w.run_until([&] { return connected; }), world::wait_result::met);
  std::error_code ec;
  a.accept(server, ec);
  ASSERT_FALSE(ec) << ec.message();
  ASSERT_TRUE(server.is_open());
  EXPECT_EQ(server.remote_endpoint(), client.local_endpoint());
  socket none(t.server_ctx);
  a.accept(none, ec);
  EXPECT_EQ(ec, code(asio::error::would_block)) << "one connect accepted twice";
}

// A listener on 0.0.0.0 takes its port on every node, a third one too.
TEST(dsim_network_ends, a_wildcard_listener_takes_its_port_on_a_node_it_was_never_told_of) {
  two_nodes t(53);
  acceptor a(t.server_ctx);
  const auto port = listen_on_every_node(a);
  auto pair = t.connect_pair(a, {third_node, port});
  EXPECT_EQ(pair.first.remote_endpoint().port(), port);
  EXPECT_EQ(t.net.connections_open(), 1u);
}

// Rule: an option set on a socket that is not open (before the connect
// that opens it, or after its close) does nothing: the socket the connect
// opens reads with no watermark and closes with a FIN, not a reset.
TEST(dsim_network_ends, an_option_set_on_a_socket_that_is_not_open_does_nothing) {
  two_nodes t(54, whole(64 << 10));
  acceptor a(t.server_ctx);
  const auto at = t.listen(a);
  socket client(t.client_ctx), server(t.server_ctx);
  client.set_option(asio::socket_base::linger(true, 0));
  client.set_option(asio::socket_base::receive_low_watermark(500));
  bool connected = false;
  client.async_connect(at, [&](std::error_code e) { connected = !e; });
  a.async_accept(t.server_ctx, [&](std::error_code, socket s) { server = std::move(s); });
  ASSERT_EQ(t.w.run_until([&] { return connected && server.is_open(); }),
            world::wait_result::met);
  write_all_now(t, server, pattern(10, 54));
  std::vector<std::byte> got(100);
  std::size_t n = 0;
  client.async_read_some(asio::buffer(got), [&](std::error_code, std::size_t k) { n = k; });
  EXPECT_EQ(t.w.run_until([&] { return n > 0; }), world::wait_result::met) << "a watermark";
  EXPECT_EQ(n, 10u);
  client.close();
  client.set_option(asio::socket_base::linger(true, 0));
  client.set_option(asio::socket_base::receive_low_watermark(500));
  EXPECT_FALSE(client.is_open());
  settle(t);
  std::error_code ec;
  server.read_some(asio::buffer(got), ec);
  EXPECT_EQ(ec, eof_code()) << "linger 0 set before the open reset the close";
}

// Rule: a network must outlive its sockets and acceptors: destroying it
// while one is open is an assertion failure, not a dangling pointer.
TEST(dsim_network_ends_death, a_network_destroyed_before_its_open_socket_or_acceptor_asserts) {
  for (bool an_acceptor : {false, true}) {
    EXPECT_DEATH(
        {
          world w(55);
          asio::io_context ctx;
          auto net = std::make_unique<network>(w);
          socket s(ctx);
          acceptor a(ctx);
          std::error_code ec;
          an_acceptor ? a.open(asio::ip::tcp::v4(), ec) : s.open(asio::ip::tcp::v4(), ec);
          net.reset();
          std::_Exit(0);  // with no assertion: the socket's close would use the network
        },
        "objects_ == 0")
        << (an_acceptor ? "an acceptor" : "a socket");
  }
}

}  // namespace
}  // namespace faultlane::dsim
