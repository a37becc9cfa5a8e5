// The simulated network's rules as docs/dsim.md states them, each on both
// sides of its threshold: a FIN or reset arrives behind the bytes already
// in flight; the watermark is capped at exactly half the buffer and ends
// at end of stream; a writer wakes for a third of its buffer or all it
// offers; bytes that reach a closed socket are answered with a reset; a
// close with one unread byte resets; a crashed node's own sockets fail and
// its listeners close; a backlog refills one connect per accept; a half
// close still lets the other side write; writes and reads are cut as the
// seed draws and data pays the connection's latency; an idle peer is
// "gone or ready" only after a FIN or reset; readiness waits complete when
// the operation would not wait; and every network event enters the world's
// trace and digest.
#include <gtest/gtest.h>

#include <asio/read.hpp>
#include <asio/write.hpp>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "faultlane/dsim/timer.hpp"
#include "network_fixture.hpp"

namespace faultlane::dsim {
namespace {

using namespace std::chrono_literals;
using namespace testing;

enum class ending { fin, close, reset };

std::error_code reset_code() { return asio::error::make_error_code(asio::error::connection_reset); }

// Five writes at one instant, then the end: the end must reach the reader
// after all 500 bytes, whatever order the seed gives events due together.
TEST(dsim_network_rules, a_fin_or_reset_behind_bytes_in_flight_arrives_after_them) {
  for (auto how : {ending::fin, ending::close, ending::reset}) {
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
      network_options o = whole(64 << 10);
      o.latency_min = o.latency_max = 50us;  // every chunk due at one instant
      two_nodes t(seed, o);
      acceptor a(t.server_ctx);
      auto pair = t.connect_pair(a, t.listen(a));
      auto& client = pair.first;
      auto& server = pair.second;
      std::vector<std::byte> got(1000);
      std::error_code end;
      std::size_t n = 0;
      bool done = false;
      asio::async_read(server, asio::buffer(got), [&](std::error_code e, std::size_t k) {
        end = e;
        n = k;
        done = true;
      });
      const auto sent = pattern(500, seed);
      std::error_code ec;
      for (int i = 0; i < 5; ++i) {
        ASSERT_EQ(client.write_some(asio::buffer(sent.data() + 100 * i, 100), ec), 100u);
      }
      if (how == ending::fin) client.shutdown(socket::shutdown_send, ec);
      if (how == ending::reset) client.set_option(asio::socket_base::linger(true, 0));
      if (how != ending::fin) client.close(ec);
      ASSERT_EQ(t.w.run_until([&] { return done; }), world::wait_result::met);
      ASSERT_EQ(n, 500u) << "seed " << seed << ", ending " << static_cast<int>(how);
      EXPECT_TRUE(std::equal(sent.begin(), sent.end(), got.begin()));
      EXPECT_EQ(end, how == ending::reset ? reset_code() : eof_code()) << "seed " << seed;
    }
  }
}

// An 8192-byte buffer caps a 256 KiB watermark at 4096: 4095 bytes hold
// the read, the 4096th meets it.
TEST(dsim_network_rules, the_watermark_cap_is_half_the_buffer_exactly) {
  two_nodes t(21, whole(8192));
  acceptor a(t.server_ctx);
  auto pair = t.connect_pair(a, t.listen(a));
  auto& client = pair.first;
  auto& server = pair.second;
  server.set_option(asio::socket_base::receive_low_watermark(256 << 10));
  std::vector<std::byte> got(8192);
  std::size_t read = 0;
  server.async_read_some(asio::buffer(got), [&](std::error_code, std::size_t k) { read = k; });
  const auto bytes = pattern(4096, 21);
  std::error_code ec;
  ASSERT_EQ(client.write_some(asio::buffer(bytes.data(), 4095), ec), 4095u);
  EXPECT_EQ(t.w.run_until([&] { return read > 0; }), world::wait_result::idle);
  EXPECT_EQ(server.queued(), 4095u);
  ASSERT_EQ(client.write_some(asio::buffer(bytes.data() + 4095, 1), ec), 1u);
  EXPECT_EQ(t.w.run_until([&] { return read > 0; }), world::wait_result::met);
  EXPECT_EQ(read, 4096u);
}

// A watermark holds a read only while the stream goes on: the end of the
// stream (a FIN, a reset) gives the reader what arrived.
TEST(dsim_network_rules, the_end_of_the_stream_releases_a_read_below_its_watermark) {
  for (bool reset : {false, true}) {
    two_nodes t(22, whole(64 << 10));
    acceptor a(t.server_ctx);
    auto pair = t.connect_pair(a, t.listen(a));
    auto& client = pair.first;
    auto& server = pair.second;
    server.set_option(asio::socket_base::receive_low_watermark(2500));
    std::vector<std::byte> got(4000);
    std::size_t read = 0;
    std::error_code read_end;
    bool done = false;
    server.async_read_some(asio::buffer(got), [&](std::error_code e, std::size_t k) {
      read_end = e;
      read = k;
      done = true;
    });
    const auto bytes = pattern(1000, 22);
    std::error_code ec;
    ASSERT_EQ(client.write_some(asio::buffer(bytes), ec), 1000u);
    EXPECT_EQ(t.w.run_until([&] { return done; }), world::wait_result::idle);
    if (reset) client.set_option(asio::socket_base::linger(true, 0));
    reset ? client.close(ec) : client.shutdown(socket::shutdown_send, ec);
    ASSERT_EQ(t.w.run_until([&] { return done; }), world::wait_result::met) << "reset " << reset;
    EXPECT_FALSE(read_end) << read_end.message();
    EXPECT_EQ(read, 1000u);
    server.read_some(asio::buffer(got), ec);
    EXPECT_EQ(ec, reset ? reset_code() : eof_code());
  }
}

// A writer waits for room for a third of its buffer or for all it offers,
// whichever is less: on a 9000-byte buffer 3000 bytes of room take a write,
// 2999 do not, unless the write offers no more than the room.
TEST(dsim_network_rules, a_writer_wakes_for_a_third_of_the_buffer_or_all_it_offers) {
  two_nodes t(23, whole(9000));
  acceptor a(t.server_ctx);
  auto pair = t.connect_pair(a, t.listen(a));
  auto& client = pair.first;
  auto& server = pair.second;
  const auto bytes = pattern(9000, 23);
  std::error_code ec;
  ASSERT_EQ(client.write_some(asio::buffer(bytes.data(), 8990), ec), 8990u);
  ASSERT_EQ(t.w.run_until([&] { return server.queued() == 8990; }), world::wait_result::met);
  EXPECT_EQ(client.write_some(asio::buffer(bytes.data(), 10), ec), 10u) << ec.message();
  client.write_some(asio::buffer(bytes.data(), 1), ec);
  EXPECT_EQ(ec, asio::error::would_block) << "a full buffer took a byte";
  std::vector<std::byte> got(9000);
  asio::read(server, asio::buffer(got.data(), 2999), ec);
  ASSERT_FALSE(ec) << ec.message();
  client.write_some(asio::buffer(bytes.data(), 5000), ec);
  EXPECT_EQ(ec, asio::error::would_block) << "2999 bytes of room took a write of 5000";
  EXPECT_EQ(client.write_some(asio::buffer(bytes.data(), 2999), ec), 2999u)
      << "a write of no more than the room waited: " << ec.message();
  asio::read(server, asio::buffer(got.data(), 3000), ec);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(client.write_some(asio::buffer(bytes.data(), 5000), ec), 3000u)
      << "3000 bytes of room, a third of the buffer, took nothing: " << ec.message();
}

// A FIN closed the server with nothing unread; the client's next bytes
// reach a closed socket, which answers them with a reset.
TEST(dsim_network_rules, bytes_that_reach_a_closed_socket_are_answered_with_a_reset) {
  two_nodes t(24, whole(64 << 10));
  acceptor a(t.server_ctx);
  auto pair = t.connect_pair(a, t.listen(a));
  auto& client = pair.first;
  auto& server = pair.second;
  std::error_code ec;
  server.close(ec);
  EXPECT_EQ(t.w.run_until([] { return false; }), world::wait_result::idle);
  const auto bytes = pattern(10, 24);
  EXPECT_EQ(client.write_some(asio::buffer(bytes), ec), 10u) << ec.message();
  EXPECT_EQ(t.w.run_until([] { return false; }), world::wait_result::idle);
  client.write_some(asio::buffer(bytes.data(), 1), ec);
  EXPECT_EQ(ec, asio::error::connection_reset);
  std::byte one[1];
  client.read_some(asio::buffer(one), ec);
  EXPECT_EQ(ec, asio::error::connection_reset) << "the FIN was read, not the reset";
}

// One unread byte is enough: the close is a reset, not a FIN.
TEST(dsim_network_rules, a_close_with_one_unread_byte_is_a_reset) {
  two_nodes t(25);
  acceptor a(t.server_ctx);
  auto pair = t.connect_pair(a, t.listen(a));
  auto& client = pair.first;
  auto& server = pair.second;
  std::error_code ec;
  const std::byte one_byte[1] = {std::byte{7}};
  ASSERT_EQ(client.write_some(asio::buffer(one_byte), ec), 1u);
  ASSERT_EQ(t.w.run_until([&] { return server.queued() == 1; }), world::wait_result::met);
  server.close(ec);
  std::byte got[1];
  std::error_code end;
  bool done = false;
  client.async_read_some(asio::buffer(got), [&](std::error_code e, std::size_t) {
    end = e;
    done = true;
  });
  ASSERT_EQ(t.w.run_until([&] { return done; }), world::wait_result::met);
  EXPECT_EQ(end, asio::error::connection_reset);
}

// A crash fails the crashed node's own sockets and closes its listeners:
// after a revive, its old port is refused until it listens again.
TEST(dsim_network_rules, a_crash_fails_the_nodes_own_sockets_and_closes_its_listeners) {
  two_nodes t(26);
  acceptor a(t.server_ctx);
  const auto at = t.listen(a);
  auto pair = t.connect_pair(a, at);
  auto& server = pair.second;
  std::byte one[1];
  std::error_code read_end, accept_end;
  bool read_done = false, accept_done = false;
  server.async_read_some(asio::buffer(one), [&](std::error_code e, std::size_t) {
    read_end = e;
    read_done = true;
  });
  a.async_accept(t.server_ctx, [&](std::error_code e, socket) {
    accept_end = e;
    accept_done = true;
  });
  t.net.crash(server_node);
  ASSERT_EQ(t.w.run_until([&] { return read_done && accept_done; }), world::wait_result::met);
  EXPECT_EQ(read_end, asio::error::connection_reset);
  EXPECT_EQ(accept_end, asio::error::operation_aborted);
  std::error_code ec;
  server.write_some(asio::buffer(one), ec);
  EXPECT_EQ(ec, asio::error::connection_reset);
  t.net.revive(server_node);
  socket again(t.client_ctx);
  std::error_code connect_end;
  bool connect_done = false;
  again.async_connect(at, [&](std::error_code e) {
    connect_end = e;
    connect_done = true;
  });
  ASSERT_EQ(t.w.run_until([&] { return connect_done; }), world::wait_result::met);
  EXPECT_EQ(connect_end, asio::error::connection_refused) << "a crash left the listener open";
}

// A backlog of one with three connects: one queued, two held; an accept
// makes room for exactly one more.
TEST(dsim_network_rules, an_accept_lets_one_held_connect_into_a_full_backlog) {
  two_nodes t(27);
  acceptor a(t.server_ctx);
  const auto at = t.listen(a, 1);
  socket s0(t.client_ctx), s1(t.client_ctx), s2(t.client_ctx);
  int connected = 0;
  for (auto* s : {&s0, &s1, &s2}) {
    s->async_connect(at, [&](std::error_code ec) { connected += !ec; });
  }
  EXPECT_EQ(t.w.run_until([] { return false; }), world::wait_result::idle);
  EXPECT_EQ(connected, 1);
  int accepted = 0;
  a.async_accept(t.server_ctx, [&](std::error_code ec, socket) { accepted += !ec; });
  EXPECT_EQ(t.w.run_until([] { return false; }), world::wait_result::idle);
  EXPECT_EQ(accepted, 1);
  EXPECT_EQ(connected, 2) << "one accept is room for one held connect";
  a.close();
}

// After a shutdown of its sending side a socket cannot write (broken pipe)
// but still reads what the peer writes; the peer reads end of file.
TEST(dsim_network_rules, a_half_closed_socket_still_reads_what_its_peer_writes) {
  two_nodes t(28, whole(64 << 10));
  acceptor a(t.server_ctx);
  auto pair = t.connect_pair(a, t.listen(a));
  auto& client = pair.first;
  auto& server = pair.second;
  std::error_code ec;
  client.shutdown(socket::shutdown_send, ec);
  std::byte one[1];
  client.write_some(asio::buffer(one), ec);
  EXPECT_EQ(ec, asio::error::broken_pipe);
  std::error_code server_end;
  bool server_done = false;
  server.async_read_some(asio::buffer(one), [&](std::error_code e, std::size_t) {
    server_end = e;
    server_done = true;
  });
  ASSERT_EQ(t.w.run_until([&] { return server_done; }), world::wait_result::met);
  EXPECT_EQ(server_end, asio::error::eof);
  const auto bytes = pattern(100, 28);
  ASSERT_EQ(server.write_some(asio::buffer(bytes), ec), 100u) << ec.message();
  std::vector<std::byte> got(100);
  std::size_t n = 0;
  asio::async_read(client, asio::buffer(got), [&](std::error_code, std::size_t k) { n = k; });
  ASSERT_EQ(t.w.run_until([&] { return n == 100; }), world::wait_result::met);
  EXPECT_TRUE(got == bytes);
}

// With partial writes and reads at one half, some writes take less than
// offered and some reads return less than arrived; with them off, none do.
TEST(dsim_network_rules, writes_and_reads_are_cut_as_often_as_asked) {
  for (double partial : {0.5, 0.0}) {
    int short_writes = 0, short_reads = 0;
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
      network_options o = whole(64 << 10);
      o.partial_write = o.partial_read = partial;
      two_nodes t(seed, o);
      acceptor a(t.server_ctx);
      auto pair = t.connect_pair(a, t.listen(a));
      auto& client = pair.first;
      auto& server = pair.second;
      const auto bytes = pattern(4000, seed);
      std::error_code ec;
      const auto n = client.write_some(asio::buffer(bytes), ec);
      ASSERT_GE(n, 1u);
      ASSERT_LE(n, 4000u);
      short_writes += n < 4000;
      ASSERT_EQ(t.w.run_until([&] { return server.queued() == n; }), world::wait_result::met);
      std::vector<std::byte> got(8192);
      const auto k = server.read_some(asio::buffer(got), ec);
      ASSERT_GE(k, 1u);
      ASSERT_LE(k, n);
      short_reads += k < n;
    }
    if (partial > 0) {
      EXPECT_GT(short_writes, 0);
      EXPECT_GT(short_reads, 0);
    } else {
      EXPECT_EQ(short_writes, 0);
      EXPECT_EQ(short_reads, 0);
    }
  }
}

// Data pays the connection's one-way latency: 100 us from write to arrival.
TEST(dsim_network_rules, bytes_arrive_one_latency_after_their_write) {
  network_options o = whole(64 << 10);
  o.latency_min = o.latency_max = 100us;
  two_nodes t(29, o);
  acceptor a(t.server_ctx);
  auto pair = t.connect_pair(a, t.listen(a));
  auto& client = pair.first;
  auto& server = pair.second;
  const auto t0 = t.w.now();
  const auto bytes = pattern(10, 29);
  std::error_code ec;
  ASSERT_EQ(client.write_some(asio::buffer(bytes), ec), 10u);
  ASSERT_EQ(t.w.run_until([&] { return server.queued() == 10; }), world::wait_result::met);
  EXPECT_EQ(t.w.now() - t0, std::chrono::nanoseconds(100us));
}

// The seam's idle-lane check (docs/dsim.md): a connection whose peer sent
// nothing is not "gone or ready"; a FIN or a reset makes it so, each with
// nothing unread.
TEST(dsim_network_rules, an_idle_peer_is_gone_or_ready_only_after_a_fin_or_a_reset) {
  for (bool reset : {false, true}) {
    two_nodes t(31, whole(64 << 10));
    acceptor a(t.server_ctx);
    auto pair = t.connect_pair(a, t.listen(a));
    auto& client = pair.first;
    auto& server = pair.second;
    EXPECT_FALSE(client.peer_gone_or_ready());
    std::error_code ec;
    if (reset) server.set_option(asio::socket_base::linger(true, 0));
    server.close(ec);
    EXPECT_EQ(t.w.run_until([] { return false; }), world::wait_result::idle);
    EXPECT_EQ(client.queued(), 0u);
    EXPECT_TRUE(client.peer_gone_or_ready()) << (reset ? "after a reset" : "after a FIN");
  }
}

// Readiness waits complete when a read or a write would not wait: a read
// wait on a byte, a FIN or a reset; a write wait on room for a third of
// the buffer (3000 of 9000 bytes), not on 2999.
TEST(dsim_network_rules, readiness_waits_complete_when_the_operation_would_not_wait) {
  enum class wakes { byte, fin, reset };
  for (auto how : {wakes::byte, wakes::fin, wakes::reset}) {
    two_nodes t(32, whole(64 << 10));
    acceptor a(t.server_ctx);
    auto pair = t.connect_pair(a, t.listen(a));
    auto& client = pair.first;
    auto& server = pair.second;
    bool readable = false;
    server.async_wait(socket::wait_read, [&](std::error_code) { readable = true; });
    EXPECT_EQ(t.w.run_until([&] { return readable; }), world::wait_result::idle);
    std::error_code ec;
    const std::byte one[1] = {std::byte{1}};
    if (how == wakes::byte) client.write_some(asio::buffer(one), ec);
    if (how == wakes::fin) client.shutdown(socket::shutdown_send, ec);
    if (how == wakes::reset) client.set_option(asio::socket_base::linger(true, 0));
    if (how == wakes::reset) client.close(ec);
    EXPECT_EQ(t.w.run_until([&] { return readable; }), world::wait_result::met)
        << static_cast<int>(how);
  }
  two_nodes t(33, whole(9000));
  acceptor a(t.server_ctx);
  auto pair = t.connect_pair(a, t.listen(a));
  auto& client = pair.first;
  auto& server = pair.second;
  bool writable = false;
  client.async_wait(socket::wait_write, [&](std::error_code) { writable = true; });
  EXPECT_EQ(t.w.run_until([&] { return writable; }), world::wait_result::met) << "empty buffer";
  const auto bytes = pattern(9000, 33);
  std::error_code ec;
  ASSERT_EQ(client.write_some(asio::buffer(bytes), ec), 9000u);
  ASSERT_EQ(t.w.run_until([&] { return server.queued() == 9000; }), world::wait_result::met);
  writable = false;
  client.async_wait(socket::wait_write, [&](std::error_code) { writable = true; });
  std::vector<std::byte> got(3000);
  asio::read(server, asio::buffer(got.data(), 2999), ec);
  EXPECT_EQ(t.w.run_until([&] { return writable; }), world::wait_result::idle) << "2999 free";
  asio::read(server, asio::buffer(got.data(), 1), ec);
  EXPECT_EQ(t.w.run_until([&] { return writable; }), world::wait_result::met) << "3000 free";
}

// Every kind of network and timer event is recorded: the trace and the
// digest are fed by one call, so a kind missing here is missing from the
// digest, and two runs that differ in it would digest alike.
TEST(dsim_network_rules, every_network_and_timer_event_enters_the_trace) {
  two_nodes t(30);
  acceptor a(t.server_ctx);
  const auto at = t.listen(a);
  socket refused(t.client_ctx);
  bool refused_done = false;
  refused.async_connect({server_node, static_cast<unsigned short>(at.port() + 1)},
                        [&](std::error_code) { refused_done = true; });
  ASSERT_EQ(t.w.run_until([&] { return refused_done; }), world::wait_result::met);
  {
    auto pair = t.connect_pair(a, at);
    const auto bytes = pattern(10, 30);
    std::error_code ec;
    ASSERT_EQ(pair.first.write_some(asio::buffer(bytes), ec), 10u);
    ASSERT_EQ(t.w.run_until([&] { return pair.second.queued() == 10; }), world::wait_result::met);
    std::vector<std::byte> got(10);
    asio::read(pair.second, asio::buffer(got), ec);
    pair.first.shutdown(socket::shutdown_send, ec);
    EXPECT_EQ(t.w.run_until([] { return false; }), world::wait_result::idle);
    pair.second.set_option(asio::socket_base::linger(true, 0));
    pair.second.close(ec);
    EXPECT_EQ(t.w.run_until([] { return false; }), world::wait_result::idle);
  }
  timer fires(t.client_ctx), cancelled(t.client_ctx);
  bool fired = false;
  fires.expires_after(1ms);
  fires.async_wait([&](std::error_code) { fired = true; });
  cancelled.expires_after(1s);
  cancelled.async_wait([](std::error_code) {});
  cancelled.cancel();
  ASSERT_EQ(t.w.run_until([&] { return fired; }), world::wait_result::met);
  std::set<std::string> kinds;
  for (const auto& e : t.w.trace()) kinds.insert(e.kind);
  for (const char* kind : {"step", "time", "listen", "connect", "accept", "refused", "write",
                           "deliver", "read", "fin", "fin_arrived", "rst", "rst_arrived",
                           "timer_fire", "timer_cancel"}) {
    EXPECT_TRUE(kinds.count(kind)) << kind << " is not in the trace";
  }
}

// Worlds that record one event differing in its kind or in either value
// digest differently.
TEST(dsim_network_rules, each_field_of_a_recorded_event_enters_the_digest) {
  auto digest_of = [](std::string_view kind, std::uint64_t a, std::uint64_t b) {
    world w(1);
    w.record(kind, a, b);
    return w.digest();
  };
  const auto base = digest_of("k", 1, 1);
  EXPECT_EQ(base, digest_of("k", 1, 1));
  EXPECT_NE(base, digest_of("j", 1, 1));
  EXPECT_NE(base, digest_of("k", 2, 1));
  EXPECT_NE(base, digest_of("k", 1, 2));
}

}  // namespace
}  // namespace faultlane::dsim
