// How the simulated network's connections end, as docs/dsim.md states it:
// a close or a cancel aborts what is pending; only linger on with zero
// seconds turns a close into a reset; shutdown(send) and shutdown(both)
// send a FIN, shutdown(receive) does not, and one FIN per direction; a
// listener that closes resets what it queued and refuses what it held; a
// held connect that was cancelled, or whose node went down, never
// connects; and a crash touches only the connections with an end on its
// node still open, and every one of them however many were opened, resets
// them behind the bytes already written, and frees its ports for the
// node's next run.
#include <gtest/gtest.h>

#include <asio/error.hpp>
#include <asio/post.hpp>
#include <asio/read.hpp>

#include <algorithm>
#include <vector>

#include "network_fixture.hpp"

namespace faultlane::dsim {
namespace {

using namespace testing;
using namespace std::chrono_literals;

// What the next read of `s` ends with once the world has settled: eof,
// connection_reset, or no error when bytes wait.
std::error_code next_read(two_nodes& t, socket& s) {
  settle(t);
  std::byte one[1];
  std::error_code ec;
  s.read_some(asio::buffer(one), ec);
  return ec;
}

// The four operations a socket can have pending: a read, a write held by
// a full buffer, and both readiness waits.
struct pending_four {
  explicit pending_four(socket& s) {
    s.async_read_some(asio::buffer(in), [this](std::error_code e, std::size_t) { ends[0] = e; });
    s.async_write_some(asio::buffer(out), [this](std::error_code e, std::size_t) { ends[1] = e; });
    s.async_wait(socket::wait_read, [this](std::error_code e) { ends[2] = e; });
    s.async_wait(socket::wait_write, [this](std::error_code e) { ends[3] = e; });
  }
  bool all_aborted() const {
    for (const auto& e : ends) {
      if (e != code(asio::error::operation_aborted)) return false;
    }
    return true;
  }
  std::byte in[16] = {};
  std::byte out[16] = {};
  std::error_code ends[4] = {code(asio::error::in_progress), code(asio::error::in_progress),
                             code(asio::error::in_progress), code(asio::error::in_progress)};
};

// A cancel aborts every pending operation and leaves the socket open and
// connected; a close aborts them too.
TEST(dsim_network_close, a_cancel_or_a_close_aborts_every_pending_operation) {
  connected_nodes t(61, whole(9000));
  auto& client = t.client;
  ASSERT_NO_FATAL_FAILURE(write_all_now(t, client, pattern(9000, 61)));
  std::error_code ec;
  for (bool close : {false, true}) {
    pending_four p(client);
    settle(t);
    for (const auto& e : p.ends) EXPECT_EQ(e, code(asio::error::in_progress)) << "not pending";
    close ? client.close(ec) : client.cancel(ec);
    settle(t);
    EXPECT_TRUE(p.all_aborted()) << (close ? "close" : "cancel") << ": " << p.ends[0].message()
                                 << ", " << p.ends[1].message() << ", " << p.ends[2].message()
                                 << ", " << p.ends[3].message();
    EXPECT_EQ(client.is_open(), !close);
  }
  EXPECT_EQ(t.server.queued(), 9000u);
}

// A socket assigned over a connected one closes that connection: its peer
// reads end of file.
TEST(dsim_network_close, a_socket_moved_over_a_connected_one_closes_its_connection) {
  connected_nodes t(62, whole(64 << 10));
  t.client = socket(t.client_ctx);
  EXPECT_FALSE(t.client.is_open());
  EXPECT_EQ(t.net.connections_open(), 0u);
  EXPECT_EQ(next_read(t, t.server), eof_code());
}

// Only linger on with a timeout of zero resets; linger on with a timeout,
// or off, closes with a FIN.
TEST(dsim_network_close, only_linger_on_with_zero_seconds_turns_a_close_into_a_reset) {
  struct option_case {
    bool on;
    int seconds;
    bool resets;
  };
  for (const auto& c : {option_case{true, 0, true}, option_case{true, 5, false},
                        option_case{false, 0, false}, option_case{true, 1, false}}) {
    connected_nodes t(63, whole(64 << 10));
    t.server.set_option(asio::socket_base::linger(c.on, c.seconds));
    t.server.close();
    EXPECT_EQ(next_read(t, t.client), c.resets ? code(asio::error::connection_reset) : eof_code())
        << "linger " << c.on << ", " << c.seconds << " s";
  }
}

// shutdown(send) and shutdown(both) end the stream for the peer;
// shutdown(receive) sends nothing, and the socket still writes.
TEST(dsim_network_close, shutdown_send_or_both_sends_a_fin_and_shutdown_receive_does_not) {
  for (auto what : {socket::shutdown_send, socket::shutdown_both, socket::shutdown_receive}) {
    connected_nodes t(64, whole(64 << 10));
    auto& client = t.client;
    auto& server = t.server;
    std::error_code ec;
    client.shutdown(what, ec);
    EXPECT_FALSE(ec) << ec.message();
    settle(t);
    if (what == socket::shutdown_receive) {
      EXPECT_FALSE(server.peer_gone_or_ready()) << "shutdown(receive) sent a FIN";
      const std::byte one[1] = {std::byte{5}};
      EXPECT_EQ(client.write_some(asio::buffer(one), ec), 1u) << ec.message();
      continue;
    }
    EXPECT_EQ(next_read(t, server), eof_code()) << static_cast<int>(what);
    const std::byte one[1] = {std::byte{5}};
    client.write_some(asio::buffer(one), ec);
    EXPECT_EQ(ec, code(asio::error::broken_pipe));
  }
}

// One FIN per direction: a shutdown repeated, then a close, send one.
TEST(dsim_network_close, a_direction_carries_one_fin_however_often_it_is_ended) {
  connected_nodes t(65, whole(64 << 10));
  std::error_code ec;
  t.client.shutdown(socket::shutdown_send, ec);
  t.client.shutdown(socket::shutdown_both, ec);
  t.client.close();
  settle(t);
  int fins = 0, arrived = 0;
  for (const auto& e : t.w.trace()) {
    fins += e.kind == "fin" ? 1 : 0;
    arrived += e.kind == "fin_arrived" ? 1 : 0;
  }
  EXPECT_EQ(fins, 1);
  EXPECT_EQ(arrived, 1);
  EXPECT_EQ(next_read(t, t.server), eof_code());
}

// A reset that reached a socket whose sending side was shut down fails its
// writes with the reset (as Linux reports the socket's error first).
TEST(dsim_network_close, a_reset_outranks_a_shutdown_in_what_a_write_says) {
  connected_nodes t(66, whole(64 << 10));
  std::error_code ec;
  t.client.shutdown(socket::shutdown_send, ec);
  t.server.set_option(asio::socket_base::linger(true, 0));
  t.server.close();
  settle(t);
  const std::byte one[1] = {};
  t.client.write_some(asio::buffer(one), ec);
  EXPECT_EQ(ec, code(asio::error::connection_reset));
}

// A listener with a backlog of one: the connect of `queued` is in it, then
// that of `held` (from `held_from`) waits for room.
struct backlog_of_one {
  backlog_of_one(two_nodes& t, asio::io_context& held_from)
      : a(t.server_ctx), at(t.listen(a, 1)), queued(t.client_ctx), held(held_from) {
    queued.async_connect(at, [this](std::error_code e) { queued_end = e; });
    settle(t);
    held.async_connect(at, [this](std::error_code e) { held_end = e; });
    settle(t);
  }
  acceptor a;
  endpoint at;
  socket queued, held;
  std::error_code queued_end = code(asio::error::in_progress);
  std::error_code held_end = code(asio::error::in_progress);
};

// A listener that closes resets the connections it queued and never
// accepted, and refuses the connects its full backlog held.
TEST(dsim_network_close, a_closing_listener_resets_what_it_queued_and_refuses_what_it_held) {
  two_nodes t(67);
  backlog_of_one b(t, t.client_ctx);
  ASSERT_FALSE(b.queued_end) << b.queued_end.message();
  ASSERT_EQ(b.held_end, code(asio::error::in_progress)) << "a full backlog took a connect";
  b.a.close();
  settle(t);
  EXPECT_EQ(b.held_end, code(asio::error::connection_refused));
  EXPECT_EQ(next_read(t, b.queued), code(asio::error::connection_reset));
  EXPECT_EQ(t.net.connections_open(), 0u);
}

// Accepts one connection after another until one fails; counts them.
struct accept_all {
  accept_all(two_nodes& t, acceptor& a) : t(t), a(a) { next(); }
  void next() {
    a.async_accept(t.server_ctx, [this](std::error_code e, socket s) {
      if (e) return;
      ++accepted;
      taken.push_back(std::move(s));
      next();
    });
  }
  two_nodes& t;
  acceptor& a;
  int accepted = 0;
  std::vector<socket> taken;
};

// A connect cancelled or closed before it reached the listener never
// connects: no connection is opened, and the listener queues nothing.
TEST(dsim_network_close, a_connect_given_up_on_its_way_opens_no_connection) {
  for (bool close : {false, true}) {
    two_nodes t(77);
    acceptor a(t.server_ctx);
    const auto at = t.listen(a);
    socket s(t.client_ctx);
    std::error_code end = code(asio::error::in_progress);
    s.async_connect(at, [&](std::error_code e) { end = e; });
    close ? s.close() : s.cancel();
    settle(t);
    EXPECT_EQ(end, code(asio::error::operation_aborted));
    EXPECT_EQ(t.net.connections_opened(), 0u) << (close ? "closed" : "cancelled");
    socket none(t.server_ctx);
    std::error_code ec;
    a.accept(none, ec);
    EXPECT_EQ(ec, code(asio::error::would_block));
  }
}

// A connect's result is read when its completion runs, as Asio's reactor
// reads SO_ERROR when the thread gets to the socket: a listener that
// accepts and resets at once fails a connect whose thread was still busy
// when the reset came (connection_reset), and leaves one whose completion
// ran first connected, its next read failing with the reset.
TEST(dsim_network_close, a_reset_before_a_connects_completion_runs_fails_the_connect) {
  for (bool busy : {false, true}) {
    two_nodes t(78);
    // After every handler its context is held 5 to 10 ms: far longer than
    // the reset takes to come back (two latencies of at most 200 us).
    if (busy) t.w.set_load({.handler_cost_max = {}, .hiccup_probability = 1, .hiccup_max = 10ms});
    acceptor a(t.server_ctx);
    const auto at = t.listen(a);
    socket server(t.server_ctx);
    a.async_accept(t.server_ctx, [&](std::error_code ec, socket s) {
      ASSERT_FALSE(ec) << ec.message();
      s.set_option(asio::socket_base::linger(true, 0));
      s.close();
    });
    bool ran = false;
    asio::post(t.client_ctx, [&] { ran = true; });  // the client's thread is busy after it
    socket client(t.client_ctx);
    std::error_code end = code(asio::error::in_progress);
    client.async_connect(at, [&](std::error_code e) { end = e; });
    settle(t);
    EXPECT_TRUE(ran);
    EXPECT_EQ(t.net.connections_opened(), 1u);
    if (busy) {
      EXPECT_EQ(end, code(asio::error::connection_reset));
    } else {
      EXPECT_FALSE(end) << end.message();
      std::byte one[1];
      std::error_code ec;
      client.read_some(asio::buffer(one), ec);
      EXPECT_EQ(ec, code(asio::error::connection_reset));
    }
    a.close();
    settle(t);
  }
}

// A held connect cancelled is given up: the listener never queues it.
TEST(dsim_network_close, a_connect_cancelled_while_the_backlog_held_it_is_never_accepted) {
  two_nodes t(68);
  backlog_of_one b(t, t.client_ctx);
  b.held.cancel();
  settle(t);
  EXPECT_EQ(b.held_end, code(asio::error::operation_aborted));
  accept_all all(t, b.a);
  settle(t);
  EXPECT_FALSE(b.queued_end) << b.queued_end.message();
  EXPECT_EQ(all.accepted, 1) << "a cancelled connect was accepted";
  EXPECT_EQ(t.net.connections_opened(), 1u);
  b.a.close();
}

// A connect held by a full backlog whose node crashes meanwhile is
// refused when room comes, not connected.
TEST(dsim_network_close, a_held_connect_from_a_node_that_went_down_is_refused) {
  two_nodes t(69);
  asio::io_context third;
  t.w.add_context(third, "third");
  t.net.place(third, third_node);
  {
    backlog_of_one b(t, third);
    t.net.crash(third_node);
    accept_all all(t, b.a);
    settle(t);
    EXPECT_FALSE(b.queued_end) << b.queued_end.message();
    EXPECT_EQ(b.held_end, code(asio::error::connection_refused));
    EXPECT_EQ(all.accepted, 1);
    b.a.close();
    settle(t);
  }
  settle(t);
  t.w.remove_context(third);
}

// Bytes and a FIN that came before the accept wait for the socket it
// makes.
TEST(dsim_network_close, bytes_and_a_fin_sent_before_the_accept_are_read_after_it) {
  two_nodes t(70, whole(64 << 10));
  acceptor a(t.server_ctx);
  const auto at = t.listen(a);
  socket client(t.client_ctx);
  bool connected = false;
  client.async_connect(at, [&](std::error_code e) { connected = !e; });
  ASSERT_EQ(t.w.run_until([&] { return connected; }), world::wait_result::met);
  const auto sent = pattern(300, 70);
  std::error_code ec;
  ASSERT_EQ(client.write_some(asio::buffer(sent), ec), 300u);
  client.shutdown(socket::shutdown_send, ec);
  settle(t);
  socket server(t.server_ctx);
  a.accept(server, ec);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(server.queued(), 300u);
  std::vector<std::byte> got(300);
  asio::read(server, asio::buffer(got), ec);
  EXPECT_FALSE(ec) << ec.message();
  EXPECT_TRUE(got == sent);
  EXPECT_EQ(next_read(t, server), eof_code());
}

// A crash resets only connections with an end on its node.
TEST(dsim_network_close, a_crash_leaves_connections_between_other_nodes_open) {
  connected_nodes t(71, whole(64 << 10));
  t.net.crash(third_node);
  settle(t);
  EXPECT_EQ(t.net.connections_open(), 1u);
  const auto sent = pattern(10, 71);
  std::error_code ec;
  EXPECT_EQ(t.client.write_some(asio::buffer(sent), ec), 10u) << ec.message();
  settle(t);
  std::vector<std::byte> got(10);
  asio::read(t.server, asio::buffer(got), ec);
  EXPECT_FALSE(ec) << ec.message();
  EXPECT_TRUE(got == sent);
}

// Rule: a crash resets every connection with an end on its node, however
// many the network opened: 100 connections, every other one closed on the
// way (the network forgets only connections gone), 50 open, all reset.
TEST(dsim_network_close, a_crash_resets_every_connection_of_its_node_however_many_were_opened) {
  two_nodes t(74, whole(4096));
  acceptor a(t.server_ctx);
  const auto at = t.listen(a, 128);
  std::vector<std::pair<socket, socket>> kept;
  for (int i = 0; i < 100; ++i) {
    auto pair = t.connect_pair(a, at);
    if (i % 2 == 0) kept.push_back(std::move(pair));  // the others close here
  }
  settle(t);
  EXPECT_EQ(t.net.connections_opened(), 100u);
  EXPECT_EQ(t.net.connections_open(), 50u);
  t.net.crash(server_node);
  settle(t);
  EXPECT_EQ(t.net.connections_open(), 0u);
  std::size_t reset = 0;
  for (auto& [client, server] : kept) {
    reset += next_read(t, client) == code(asio::error::connection_reset) ? 1 : 0;
  }
  EXPECT_EQ(reset, 50u);
}

// What the crashed node wrote just before its crash still reaches its
// peer, then the reset; the peer's own socket is not crashed with it
// (network.hpp: "A FIN follows the bytes written before it, and so does a
// reset (..., a crashed node): the reader reads what arrived, then gets
// the reset"). crash_end marks the crashed end reset at once; a delivery
// from that end must still go through.
TEST(dsim_network_close, bytes_a_node_wrote_before_its_crash_arrive_before_the_reset) {
  connected_nodes t(72, whole(64 << 10));
  const auto sent = pattern(100, 72);
  std::error_code ec;
  ASSERT_EQ(t.server.write_some(asio::buffer(sent), ec), 100u);
  t.net.crash(server_node);
  EXPECT_EQ(t.client.queued(), 0u);
  settle(t);
  std::vector<std::byte> got(200);
  EXPECT_EQ(t.client.read_some(asio::buffer(got), ec), 100u) << ec.message();
  EXPECT_TRUE(std::equal(sent.begin(), sent.end(), got.begin()));
  t.client.read_some(asio::buffer(got), ec);
  EXPECT_EQ(ec, code(asio::error::connection_reset));
}

// An end its node had closed with a FIN before the crash is not crashed
// again: the peer reads the FIN, not a reset.
TEST(dsim_network_close, an_end_closed_before_the_crash_leaves_its_peer_the_fin) {
  connected_nodes t(73, whole(64 << 10));
  t.server.close();
  t.net.crash(server_node);
  EXPECT_EQ(next_read(t, t.client), eof_code());
}

// A node that is down takes no connect, even on a listener opened while
// it was down, until it is revived.
TEST(dsim_network_close, a_down_node_takes_no_connect_until_it_is_revived) {
  two_nodes t(74);
  t.net.crash(server_node);
  EXPECT_TRUE(t.net.is_down(server_node));
  acceptor a(t.server_ctx);
  const auto at = t.listen(a);
  auto connect = [&] {
    socket s(t.client_ctx);
    std::error_code end = code(asio::error::in_progress);
    s.async_connect(at, [&](std::error_code e) { end = e; });
    EXPECT_EQ(t.w.run_until([&] { return end != code(asio::error::in_progress); }),
              world::wait_result::met);
    return end;
  };
  EXPECT_EQ(connect(), code(asio::error::connection_refused));
  t.net.revive(server_node);
  EXPECT_FALSE(t.net.is_down(server_node));
  EXPECT_FALSE(connect()) << "a revived node refused";
  a.close();
}

// A crash frees its node's listening ports: the node's next run listens on
// the same port, and the crashed run's acceptor, closed later, takes
// nothing from it.
TEST(dsim_network_close, after_a_crash_the_nodes_next_run_listens_on_its_old_port) {
  two_nodes t(75);
  acceptor old_run(t.server_ctx);
  const auto at = t.listen(old_run);
  t.net.crash(server_node);
  t.net.revive(server_node);
  acceptor next_run(t.server_ctx);
  const auto ec = listen_at(next_run, at, 4);
  ASSERT_FALSE(ec) << "the crashed listener kept its port: " << ec.message();
  old_run.close();
  auto pair = t.connect_pair(next_run, at);
  EXPECT_TRUE(pair.second.is_open()) << "closing the old acceptor closed the new listener";
}

// An acceptor's cancel aborts its pending accepts; it goes on listening.
TEST(dsim_network_close, cancelling_an_acceptor_aborts_its_accepts_and_it_still_listens) {
  two_nodes t(76);
  acceptor a(t.server_ctx);
  const auto at = t.listen(a);
  std::error_code end = code(asio::error::in_progress);
  a.async_accept(t.server_ctx, [&](std::error_code e, socket) { end = e; });
  std::error_code ec;
  a.cancel(ec);
  settle(t);
  EXPECT_EQ(end, code(asio::error::operation_aborted));
  auto pair = t.connect_pair(a, at);
  EXPECT_TRUE(pair.second.is_open());
}

}  // namespace
}  // namespace faultlane::dsim
