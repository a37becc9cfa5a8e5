// The simulated network: bytes exact and in order through seeded partial
// writes and reads, FIN and reset told apart, refused connects, a backlog
// that holds a connect, node crashes, and one seed giving the same digest
// in two processes. Flow control and contexts that go: network_flow_test.
#include <gtest/gtest.h>

#include <asio/read.hpp>
#include <asio/write.hpp>
#include <fmt/format.h>

#include <array>
#include <cstdlib>
#include <functional>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "child_digest.hpp"
#include "faultlane/dsim/socket.hpp"
#include "network_fixture.hpp"

namespace faultlane::dsim {
namespace {

using namespace std::chrono_literals;
using namespace testing;

// The server echoes what it reads; the client writes `total` bytes in
// writes of drawn sizes and reads them back. Returns the world's digest.
std::uint64_t echo_run(std::uint64_t seed, std::size_t total = 300000) {
  network_options o;
  o.buffer_min = 4096;
  o.buffer_max = 65536;
  o.partial_write = 0.5;
  o.partial_read = 0.5;
  two_nodes t(seed, o);
  acceptor a(t.server_ctx);
  auto pair = t.connect_pair(a, t.listen(a));
  auto& client = pair.first;
  auto& server = pair.second;
  // The echo: read some, write it all, again, until end of file.
  std::vector<std::byte> echo_buf(8192);
  std::function<void()> echo_next = [&] {
    server.async_read_some(asio::buffer(echo_buf), [&](std::error_code ec, std::size_t n) {
      if (ec) {
        server.shutdown(socket::shutdown_send, ec);
        return;
      }
      asio::async_write(server, asio::buffer(echo_buf.data(), n),
                        [&](std::error_code ec2, std::size_t) {
                          if (!ec2) echo_next();
                        });
    });
  };
  echo_next();
  const auto sent = pattern(total, seed);
  std::vector<std::byte> back(total);
  bool written = false, read_back = false;
  asio::async_write(client, asio::buffer(sent), [&](std::error_code ec, std::size_t n) {
    EXPECT_FALSE(ec);
    EXPECT_EQ(n, total);
    written = true;
  });
  asio::async_read(client, asio::buffer(back), [&](std::error_code ec, std::size_t n) {
    EXPECT_FALSE(ec);
    EXPECT_EQ(n, total);
    read_back = true;
  });
  EXPECT_EQ(t.w.run_until([&] { return written && read_back; }), world::wait_result::met)
      << t.w.trace_text();
  EXPECT_TRUE(back == sent) << "the echo came back different";
  EXPECT_GT(t.w.now(), clock::time_point{});
  // Writers wait for room as Linux's do (a third of the buffer), not byte
  // by byte: byte-sized writes took 905,744 steps here, not ~1,200.
  EXPECT_LT(t.w.steps(), 40 * total / o.buffer_min);
  return t.w.digest();
}

TEST(dsim_network, bytes_arrive_exact_and_in_order_through_partial_writes_and_reads) {
  for (std::uint64_t seed = 1; seed <= 5; ++seed) echo_run(seed);
}

TEST(dsim_network, one_seed_one_digest_and_seeds_differ) {
  EXPECT_EQ(echo_run(7), echo_run(7));
  EXPECT_NE(echo_run(7), echo_run(8));
}

// Run in a child process by the next test.
TEST(dsim_network, DISABLED_print_echo_digest) {
  const char* seed = std::getenv("FAULTLANE_DSIM_SEED");
  ASSERT_NE(seed, nullptr);
  testing::print_digest(echo_run(std::strtoull(seed, nullptr, 10)));
}

std::string child_digest(std::uint64_t seed) {
  return testing::child_digest("dsim_network.DISABLED_print_echo_digest", seed);
}

TEST(dsim_network, one_seed_gives_one_digest_in_another_process_too) {
  const auto here = fmt::format("{:016x}", echo_run(11));
  EXPECT_EQ(child_digest(11), here);
  EXPECT_EQ(child_digest(11), here);
}

TEST(dsim_network, a_connect_to_no_listener_is_refused_after_a_latency) {
  two_nodes t(1);
  socket s(t.client_ctx);
  std::error_code result;
  bool done = false;
  s.async_connect({server_node, 4000}, [&](std::error_code ec) {
    result = ec;
    done = true;
  });
  EXPECT_EQ(t.w.run_until([&] { return done; }), world::wait_result::met);
  EXPECT_EQ(result, asio::error::connection_refused);
  EXPECT_GT(t.w.now(), clock::time_point{});
}

TEST(dsim_network, a_fin_ends_the_stream_after_its_bytes) {
  two_nodes t(2);
  acceptor a(t.server_ctx);
  auto pair = t.connect_pair(a, t.listen(a));
  auto& client = pair.first;
  auto& server = pair.second;
  const auto sent = pattern(5000, 2);
  std::error_code ec;
  std::size_t n = 0;
  asio::async_write(client, asio::buffer(sent), [&](std::error_code, std::size_t k) { n = k; });
  EXPECT_EQ(t.w.run_until([&] { return n == sent.size(); }), world::wait_result::met);
  client.shutdown(socket::shutdown_send, ec);
  std::vector<std::byte> got(6000);
  std::error_code end;
  std::size_t got_n = 0;
  bool done = false;
  asio::async_read(server, asio::buffer(got), [&](std::error_code e, std::size_t k) {
    end = e;
    got_n = k;
    done = true;
  });
  EXPECT_EQ(t.w.run_until([&] { return done; }), world::wait_result::met);
  EXPECT_EQ(end, asio::error::eof);
  ASSERT_EQ(got_n, sent.size());
  EXPECT_TRUE(std::equal(sent.begin(), sent.end(), got.begin()));
}

// As on Linux: bytes that arrived before a reset are still read, then the
// reset is the answer, to reads and writes alike.
TEST(dsim_network, after_a_reset_what_arrived_is_read_then_the_reset_fails_the_peer) {
  two_nodes t(3);
  acceptor a(t.server_ctx);
  auto pair = t.connect_pair(a, t.listen(a));
  auto& client = pair.first;
  auto& server = pair.second;
  const auto sent = pattern(100, 3);
  std::size_t n = 0;
  asio::async_write(server, asio::buffer(sent), [&](std::error_code, std::size_t k) { n = k; });
  EXPECT_EQ(t.w.run_until([&] { return client.queued() == sent.size(); }), world::wait_result::met);
  server.set_option(asio::socket_base::linger(true, 0));
  std::error_code ec;
  server.close(ec);  // a reset: linger 0
  EXPECT_EQ(t.w.run_until([&] { return false; }), world::wait_result::idle);
  EXPECT_TRUE(client.peer_gone_or_ready());
  std::byte one[1];
  client.write_some(asio::buffer(one), ec);
  EXPECT_EQ(ec, asio::error::connection_reset);
  std::vector<std::byte> got(200);
  const auto k = client.read_some(asio::buffer(got), ec);
  EXPECT_FALSE(ec) << ec.message();
  ASSERT_EQ(k, sent.size());
  EXPECT_TRUE(std::equal(sent.begin(), sent.end(), got.begin()));
  client.read_some(asio::buffer(got), ec);
  EXPECT_EQ(ec, asio::error::connection_reset);
}

// A connect held by a full backlog and closed meanwhile never connects:
// the listener accepts nothing for it.
TEST(dsim_network, a_connect_closed_while_the_backlog_held_it_is_never_accepted) {
  two_nodes t(10);
  acceptor a(t.server_ctx);
  const auto at = t.listen(a, 1);
  socket first(t.client_ctx), second(t.client_ctx);
  bool first_done = false;
  std::error_code second_end;
  bool second_done = false;
  first.async_connect(at, [&](std::error_code ec) { first_done = !ec; });
  EXPECT_EQ(t.w.run_until([&] { return first_done; }), world::wait_result::met);
  second.async_connect(at, [&](std::error_code ec) {
    second_end = ec;
    second_done = true;
  });
  EXPECT_EQ(t.w.run_until([&] { return second_done; }), world::wait_result::idle);  // held
  std::error_code ec;
  second.close(ec);
  EXPECT_EQ(t.w.run_until([&] { return second_done; }), world::wait_result::met);
  EXPECT_EQ(second_end, asio::error::operation_aborted);
  int accepted = 0;
  std::function<void()> accept_next = [&] {
    a.async_accept(t.server_ctx, [&](std::error_code e, socket) {
      if (e) return;
      ++accepted;
      accept_next();
    });
  };
  accept_next();
  EXPECT_EQ(t.w.run_until([] { return false; }), world::wait_result::idle);
  EXPECT_EQ(accepted, 1);  // the first, not the closed second
  a.close();
}

// A listener on 0.0.0.0 takes connects to its port on any node.
TEST(dsim_network, a_wildcard_listener_takes_connects_to_any_node) {
  two_nodes t(12);
  acceptor a(t.server_ctx);
  const auto port = listen_on_every_node(a);
  auto pair = t.connect_pair(a, {server_node, port});
  EXPECT_TRUE(pair.second.is_open());
}

// A crashed node stays down: its own connects are refused, and so are
// connects to it, until it is revived.
TEST(dsim_network, a_crashed_node_stays_down_until_revived) {
  two_nodes t(13);
  acceptor a(t.server_ctx);
  const auto at = t.listen(a);
  t.net.crash(client_node);
  socket s(t.client_ctx);
  std::error_code end;
  bool done = false;
  s.async_connect(at, [&](std::error_code e) {
    end = e;
    done = true;
  });
  EXPECT_EQ(t.w.run_until([&] { return done; }), world::wait_result::met);
  EXPECT_EQ(end, asio::error::connection_refused);
  t.net.revive(client_node);
  socket again(t.client_ctx);
  bool connected = false;
  again.async_connect(at, [&](std::error_code e) { connected = !e; });
  EXPECT_EQ(t.w.run_until([&] { return connected; }), world::wait_result::met);
}

TEST(dsim_network, closing_with_unread_bytes_resets_instead_of_a_fin) {
  two_nodes t(4);
  acceptor a(t.server_ctx);
  auto pair = t.connect_pair(a, t.listen(a));
  auto& client = pair.first;
  auto& server = pair.second;
  const auto sent = pattern(10, 4);
  std::size_t n = 0;
  asio::async_write(client, asio::buffer(sent), [&](std::error_code, std::size_t k) { n = k; });
  EXPECT_EQ(t.w.run_until([&] { return server.queued() == sent.size(); }), world::wait_result::met);
  std::error_code ec;
  server.close(ec);  // 10 bytes unread
  std::byte one[1];
  std::error_code end;
  bool done = false;
  client.async_read_some(asio::buffer(one), [&](std::error_code e, std::size_t) {
    end = e;
    done = true;
  });
  EXPECT_EQ(t.w.run_until([&] { return done; }), world::wait_result::met);
  EXPECT_EQ(end, asio::error::connection_reset);
}

TEST(dsim_network, a_full_backlog_holds_a_connect_until_an_accept_makes_room) {
  two_nodes t(5);
  acceptor a(t.server_ctx);
  const auto at = t.listen(a, 1);
  socket first(t.client_ctx), second(t.client_ctx);
  bool first_done = false, second_done = false;
  first.async_connect(at, [&](std::error_code ec) { first_done = !ec; });
  second.async_connect(at, [&](std::error_code ec) { second_done = !ec; });
  EXPECT_EQ(t.w.run_until([&] { return first_done && second_done; }), world::wait_result::idle);
  EXPECT_NE(first_done, second_done);  // one is queued, the other held
  bool accepted = false;
  a.async_accept(t.server_ctx, [&](std::error_code ec, socket) { accepted = !ec; });
  EXPECT_EQ(t.w.run_until([&] { return accepted && first_done && second_done; }),
            world::wait_result::met);
}

TEST(dsim_network, a_non_blocking_accept_with_nothing_queued_would_block) {
  two_nodes t(6);
  acceptor a(t.server_ctx);
  t.listen(a);
  socket s(t.server_ctx);
  std::error_code ec;
  a.accept(s, ec);
  EXPECT_EQ(ec, asio::error::would_block);
}

TEST(dsim_network, a_crashed_node_resets_its_peers_and_stops_listening) {
  two_nodes t(7);
  acceptor a(t.server_ctx);
  const auto at = t.listen(a);
  auto pair = t.connect_pair(a, at);
  auto& client = pair.first;
  // pair.second, the server end, lives until the test ends: the crash resets it.
  std::byte one[1];
  std::error_code end;
  bool done = false;
  client.async_read_some(asio::buffer(one), [&](std::error_code e, std::size_t) {
    end = e;
    done = true;
  });
  t.net.crash(server_node);
  EXPECT_EQ(t.w.run_until([&] { return done; }), world::wait_result::met);
  EXPECT_EQ(end, asio::error::connection_reset);
  socket again(t.client_ctx);
  std::error_code connect_end;
  bool connect_done = false;
  again.async_connect(at, [&](std::error_code e) {
    connect_end = e;
    connect_done = true;
  });
  EXPECT_EQ(t.w.run_until([&] { return connect_done; }), world::wait_result::met);
  EXPECT_EQ(connect_end, asio::error::connection_refused);
}

}  // namespace
}  // namespace faultlane::dsim
