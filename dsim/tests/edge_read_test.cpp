// The edge-triggered read the core's unprobed read runs on: bytes that
// arrived while no read waited raised an edge nobody saw, so a read queued
// after them without a probe waits for the next arrival (the hazard the
// core's rule guards against), while a probe finds them; a read performed
// on an arrival says whether it left the socket empty, a FIN included.
#include <gtest/gtest.h>

#include <asio/post.hpp>
#include <asio/write.hpp>

#include <functional>
#include <optional>
#include <vector>

#include "network_fixture.hpp"

namespace faultlane::dsim {
namespace {

using namespace testing;
using namespace std::chrono_literals;

struct edge_result {
  std::error_code ec;
  std::size_t n = 0;
  bool left_nothing = false;
};

network_options whole() {
  network_options o;
  o.partial_write = 0;
  o.partial_read = 0;
  return o;
}

struct edge_pair {
  explicit edge_pair(std::uint64_t seed) : t(seed, whole()), a(t.server_ctx) {
    auto pair = t.connect_pair(a, t.listen(a));
    client = std::move(pair.first);
    server = std::move(pair.second);
  }
  void write(std::size_t n) {
    bool done = false;
    bytes = pattern(n, n);
    asio::async_write(client, asio::buffer(bytes),
                      [&](std::error_code, std::size_t) { done = true; });
    // Until the bytes arrived: waiting in the socket, or taken by a read.
    EXPECT_EQ(t.w.run_until([&] { return done && (server.queued() >= n || got.has_value()); }),
              world::wait_result::met);
  }
  // Bytes from the client, written from the driver (no client handler).
  void send_now(std::size_t n) {
    std::error_code ec;
    bytes = pattern(n, n);
    EXPECT_EQ(client.write_some(asio::buffer(bytes), ec), n);
    EXPECT_FALSE(ec) << ec.message();
  }
  // Holds the server's context busy for 5-10 ms from now (a hiccup after
  // every handler), so that what arrives meanwhile is one report.
  void hold_server() {
    t.w.set_load({.handler_cost_max = {}, .hiccup_probability = 1, .hiccup_max = 10ms});
    bool ran = false;
    asio::post(t.server_ctx, [&] { ran = true; });
    EXPECT_EQ(t.w.run_until([&] { return ran; }), world::wait_result::met);
  }
  void read(bool probe) {
    got.reset();
    server.start_edge_read({asio::buffer(buffer)}, probe,
                           [this](std::error_code ec, std::size_t n, bool left) {
                             got = edge_result{ec, n, left};
                           });
  }
  two_nodes t;
  acceptor a;
  socket client{t.client_ctx}, server{t.server_ctx};
  std::vector<std::byte> bytes;
  std::vector<std::byte> buffer = std::vector<std::byte>(4096);
  std::optional<edge_result> got;
};

TEST(dsim_edge_read, bytes_that_came_before_an_unprobed_read_wait_for_the_next_arrival) {
  edge_pair p(1);
  p.write(100);  // arrived with no read queued: that edge is gone
  p.read(/*probe=*/false);
  EXPECT_EQ(p.t.w.run_until([&] { return p.got.has_value(); }), world::wait_result::idle);
  p.write(20);  // the next arrival performs it, and it takes both
  ASSERT_EQ(p.t.w.run_until([&] { return p.got.has_value(); }), world::wait_result::met);
  EXPECT_EQ(p.got->n, 120u);
  EXPECT_TRUE(p.got->left_nothing);
}

TEST(dsim_edge_read, a_probe_finds_what_is_there_and_never_says_it_left_nothing) {
  edge_pair p(2);
  p.write(100);
  p.read(/*probe=*/true);
  ASSERT_EQ(p.t.w.run_until([&] { return p.got.has_value(); }), world::wait_result::met);
  EXPECT_EQ(p.got->n, 100u);
  EXPECT_FALSE(p.got->left_nothing);  // not performed on the reactor's report
}

TEST(dsim_edge_read, a_probe_that_finds_nothing_waits_for_the_arrival_and_reports_it) {
  edge_pair p(3);
  p.read(/*probe=*/true);
  p.write(64);
  ASSERT_EQ(p.t.w.run_until([&] { return p.got.has_value(); }), world::wait_result::met);
  EXPECT_EQ(p.got->n, 64u);
  EXPECT_TRUE(p.got->left_nothing);
}

TEST(dsim_edge_read, a_read_that_leaves_bytes_behind_does_not_say_it_left_nothing) {
  edge_pair p(4);
  p.read(/*probe=*/false);
  p.write(6000);  // more than the 4096-byte buffer
  ASSERT_EQ(p.t.w.run_until([&] { return p.got.has_value(); }), world::wait_result::met);
  EXPECT_EQ(p.got->n, 4096u);
  EXPECT_FALSE(p.got->left_nothing);
  // A read queued unprobed now would wait for good: what is left raised
  // no new edge. The probe takes it.
  p.read(/*probe=*/true);
  ASSERT_EQ(p.t.w.run_until([&] { return p.got.has_value(); }), world::wait_result::met);
  EXPECT_EQ(p.got->n, 6000u - 4096u);
}

TEST(dsim_edge_read, a_fin_is_an_arrival_and_performs_a_waiting_read) {
  edge_pair q(5);
  q.read(/*probe=*/false);
  q.write(10);
  ASSERT_EQ(q.t.w.run_until([&] { return q.got.has_value(); }), world::wait_result::met);
  EXPECT_TRUE(q.got->left_nothing);
  q.client.shutdown(asio::socket_base::shutdown_send);
  q.read(/*probe=*/false);
  ASSERT_EQ(q.t.w.run_until([&] { return q.got.has_value(); }), world::wait_result::met);
  EXPECT_EQ(q.got->ec, asio::error::eof);  // the FIN is an arrival too
}

// Bytes and the FIN behind them in one report, taken by one read: the
// socket holds no byte after it, but a FIN, so the read does not say it
// left nothing.
TEST(dsim_edge_read, a_read_that_leaves_a_fin_behind_does_not_say_it_left_nothing) {
  edge_pair p(9);
  p.read(/*probe=*/false);
  p.hold_server();
  p.send_now(10);
  p.client.shutdown(asio::socket_base::shutdown_send);  // arrives with the bytes' report
  ASSERT_EQ(p.t.w.run_until([&] { return p.got.has_value(); }), world::wait_result::met);
  EXPECT_EQ(p.got->n, 10u);
  EXPECT_FALSE(p.got->left_nothing);
}

// The same with a reset behind the bytes: the read takes them first.
TEST(dsim_edge_read, a_read_that_leaves_a_reset_behind_does_not_say_it_left_nothing) {
  edge_pair p(10);
  p.read(/*probe=*/false);
  p.hold_server();
  p.send_now(10);
  p.client.set_option(asio::socket_base::linger(true, 0));
  p.client.close();
  ASSERT_EQ(p.t.w.run_until([&] { return p.got.has_value(); }), world::wait_result::met);
  EXPECT_EQ(p.got->n, 10u);
  EXPECT_FALSE(p.got->left_nothing);
}

// A context the load model holds busy performs its reported read when it
// is free, with what arrived meanwhile, and runs the handler in the same
// step: no arrival falls between the read and its handler. (Performed at
// the first arrival, the read took 10 bytes, said it left nothing, and the
// next 10 raised an edge nobody saw.)
TEST(dsim_edge_read, what_arrives_while_the_context_is_busy_is_read_with_the_report) {
  edge_pair p(8);
  p.read(/*probe=*/false);
  p.hold_server();
  const auto busy_from = p.t.w.now();
  p.send_now(10);
  ASSERT_EQ(p.t.w.run_until([&] { return p.server.queued() == 10; }), world::wait_result::met);
  p.send_now(10);
  ASSERT_EQ(p.t.w.run_until([&] { return p.got.has_value(); }), world::wait_result::met);
  EXPECT_GE(p.t.w.now() - busy_from, 5ms);  // performed once the hiccup was over
  EXPECT_EQ(p.got->n, 20u);
  EXPECT_TRUE(p.got->left_nothing);
}

// A pending edge read cancelled by close leaves nothing behind: a read
// queued on the next socket is an ordinary one.
TEST(dsim_edge_read, a_level_read_after_an_aborted_edge_read_is_not_held_for_an_edge) {
  edge_pair p(11);
  p.read(/*probe=*/false);
  p.server.cancel();
  ASSERT_EQ(p.t.w.run_until([&] { return p.got.has_value(); }), world::wait_result::met);
  EXPECT_EQ(p.got->ec, asio::error::operation_aborted);
  p.send_now(10);
  ASSERT_EQ(p.t.w.run_until([&] { return p.server.queued() == 10; }), world::wait_result::met);
  std::size_t n = 0;
  p.server.async_read_some(asio::buffer(p.buffer), [&](std::error_code, std::size_t k) { n = k; });
  EXPECT_EQ(p.t.w.run_until([&] { return n > 0; }), world::wait_result::met);
  EXPECT_EQ(n, 10u);
}

TEST(dsim_edge_read, a_reset_that_arrives_performs_a_waiting_read) {
  edge_pair p(6);
  p.read(/*probe=*/false);
  p.client.set_option(asio::socket_base::linger(true, 0));
  p.client.close();
  ASSERT_EQ(p.t.w.run_until([&] { return p.got.has_value(); }), world::wait_result::met);
  EXPECT_EQ(p.got->ec, asio::error::connection_reset);
}

TEST(dsim_edge_read, a_read_on_a_closed_socket_ends_bad_descriptor_and_one_pending_ends_aborted) {
  edge_pair p(7);
  p.read(/*probe=*/false);
  p.server.close();
  ASSERT_EQ(p.t.w.run_until([&] { return p.got.has_value(); }), world::wait_result::met);
  EXPECT_EQ(p.got->ec, asio::error::operation_aborted);
  p.read(/*probe=*/false);
  ASSERT_EQ(p.t.w.run_until([&] { return p.got.has_value(); }), world::wait_result::met);
  EXPECT_EQ(p.got->ec, asio::error::bad_descriptor);
}

// Rule: a read that fails reads no byte and never says it left the socket
// empty: one pending when its socket closes (aborted), and one started on a
// closed socket, with the probe or without (bad_descriptor).
TEST(dsim_edge_read, a_failed_read_reads_no_byte_and_never_says_it_left_nothing) {
  edge_pair p(8);
  p.read(/*probe=*/false);
  p.server.close();
  ASSERT_EQ(p.t.w.run_until([&] { return p.got.has_value(); }), world::wait_result::met);
  EXPECT_EQ(p.got->ec, asio::error::operation_aborted);
  EXPECT_EQ(p.got->n, 0u);
  EXPECT_FALSE(p.got->left_nothing);
  for (bool probe : {true, false}) {
    p.read(probe);
    ASSERT_EQ(p.t.w.run_until([&] { return p.got.has_value(); }), world::wait_result::met);
    EXPECT_EQ(p.got->ec, asio::error::bad_descriptor) << probe;
    EXPECT_EQ(p.got->n, 0u) << "probe " << probe;
    EXPECT_FALSE(p.got->left_nothing) << probe;
  }
}

// Rule: what arrives before the step that performs an edge read is one
// report. Two arrivals while the context is busy, a read that takes 4096
// of their 6000 bytes, and a handler that queues the next read unprobed:
// the 1904 bytes left raised no edge of their own, so that read waits for
// the next arrival and then takes them with it.
TEST(dsim_edge_read, arrivals_before_the_reads_step_are_one_report) {
  edge_pair p(12);
  std::vector<edge_result> reads;
  std::function<void()> read_next = [&] {
    p.server.start_edge_read({asio::buffer(p.buffer)}, /*probe=*/false,
                             [&](std::error_code ec, std::size_t n, bool left) {
                               reads.push_back({ec, n, left});
                               if (reads.size() == 1) read_next();
                             });
  };
  read_next();
  p.hold_server();
  p.send_now(3000);
  ASSERT_EQ(p.t.w.run_until([&] { return p.server.queued() == 3000; }), world::wait_result::met);
  p.send_now(3000);
  ASSERT_EQ(p.t.w.run_until([&] { return !reads.empty(); }), world::wait_result::met);
  EXPECT_EQ(reads[0].n, 4096u);
  EXPECT_FALSE(reads[0].left_nothing) << "1904 bytes are left";
  EXPECT_EQ(p.t.w.run_until([&] { return reads.size() == 2; }), world::wait_result::idle)
      << "the bytes left were read without an arrival";
  p.send_now(10);
  ASSERT_EQ(p.t.w.run_until([&] { return reads.size() == 2; }), world::wait_result::met);
  EXPECT_EQ(reads[1].n, 1914u);
  EXPECT_TRUE(reads[1].left_nothing);
}

}  // namespace
}  // namespace faultlane::dsim
