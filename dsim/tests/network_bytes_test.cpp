// How the simulated network moves bytes, each rule on a small connection:
// arrival one latency after the write, each chunk of an instant one tick
// after the one before, a FIN and a reset too; a latency drawn in its
// bounds; a writer on a tiny buffer takes any room there is and no more;
// a read asking less than the watermark, or with a watermark of zero;
// a cut read never below its watermark; zero-byte reads and writes done
// at once; gathered writes and scattered reads in order; a read that
// makes room wakes the held writer; readiness on a reset; the bytes
// waiting, counted for FIONREAD and the idle lane's check; and a connect
// answered one drawn latency after it starts.
#include <gtest/gtest.h>

#include <asio/error.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>

#include <array>
#include <chrono>
#include <set>
#include <vector>

#include "network_fixture.hpp"

namespace faultlane::dsim {
namespace {

using namespace std::chrono_literals;
using namespace testing;

// The virtual times (after `since`) of the trace's events of `kind`.
std::vector<std::int64_t> times_of(const world& w, std::string_view kind, clock::time_point since) {
  std::vector<std::int64_t> out;
  for (const auto& e : w.trace()) {
    if (e.kind == kind) out.push_back(e.time_ns - since.time_since_epoch().count());
  }
  return out;
}

// Five writes at one instant arrive one latency later, each one tick (a
// nanosecond, the clock's unit) after the one before and no later; the
// FIN, and on another connection the reset, one tick after the last.
TEST(dsim_network_bytes, writes_of_one_instant_arrive_a_latency_later_one_tick_apart) {
  for (bool reset : {false, true}) {
    network_options o = whole(64 << 10);
    o.latency_min = o.latency_max = 50us;
    connected_nodes t(81, o);
    const auto t0 = t.w.now();
    const auto bytes = pattern(50, 81);
    std::error_code ec;
    for (int i = 0; i < 5; ++i) {
      ASSERT_EQ(t.client.write_some(asio::buffer(bytes.data() + 10 * i, 10), ec), 10u);
    }
    if (reset) t.client.set_option(asio::socket_base::linger(true, 0));
    reset ? t.client.close() : t.client.shutdown(socket::shutdown_send, ec);
    settle(t);
    const std::int64_t l = 50000;
    EXPECT_EQ(times_of(t.w, "deliver", t0),
              (std::vector<std::int64_t>{l, l + 1, l + 2, l + 3, l + 4}));
    EXPECT_EQ(times_of(t.w, reset ? "rst_arrived" : "fin_arrived", t0),
              (std::vector<std::int64_t>{l + 5}));
    EXPECT_EQ(t.server.queued(), 50u);
  }
}

// A write after the last chunk arrived pays the latency again, not a tick.
TEST(dsim_network_bytes, a_write_after_the_last_arrival_pays_a_whole_latency) {
  network_options o = whole(64 << 10);
  o.latency_min = o.latency_max = 30us;
  connected_nodes t(82, o);
  const auto bytes = pattern(2, 82);
  std::error_code ec;
  ASSERT_EQ(t.client.write_some(asio::buffer(bytes.data(), 1), ec), 1u);
  settle(t);
  const auto t1 = t.w.now();
  ASSERT_EQ(t.client.write_some(asio::buffer(bytes.data() + 1, 1), ec), 1u);
  settle(t);
  EXPECT_EQ(times_of(t.w, "deliver", t1).back(), 30000);
}

// Each connection draws its one-way latency in [min, max], and the seeds
// reach more than one value.
TEST(dsim_network_bytes, each_connection_draws_its_latency_within_the_bounds) {
  std::set<std::int64_t> seen;
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    network_options o = whole(64 << 10);
    o.latency_min = 10us;
    o.latency_max = 20us;
    connected_nodes t(seed, o);
    const auto t0 = t.w.now();
    const std::byte one[1] = {};
    std::error_code ec;
    ASSERT_EQ(t.client.write_some(asio::buffer(one), ec), 1u);
    ASSERT_EQ(t.w.run_until([&] { return t.server.queued() == 1; }), world::wait_result::met);
    const auto took = (t.w.now() - t0).count();
    EXPECT_GE(took, 10000) << "seed " << seed;
    EXPECT_LE(took, 20000) << "seed " << seed;
    seen.insert(took);
  }
  EXPECT_GE(seen.size(), 2u);
}

// A buffer of two bytes: a third of it is nothing, so any room takes a
// write; a full one takes none, and is not writable.
TEST(dsim_network_bytes, a_tiny_buffer_takes_any_room_there_is_and_none_when_full) {
  connected_nodes t(83, whole(2));
  auto& client = t.client;
  auto& server = t.server;
  const auto bytes = pattern(8, 83);
  std::error_code ec;
  ASSERT_EQ(client.write_some(asio::buffer(bytes), ec), 2u);
  settle(t);
  client.write_some(asio::buffer(bytes.data(), 1), ec);
  EXPECT_EQ(ec, asio::error::would_block) << "a full buffer took a byte";
  bool writable = false;
  client.async_wait(socket::wait_write, [&](std::error_code) { writable = true; });
  settle(t);
  EXPECT_FALSE(writable) << "a full buffer was writable";
  std::byte got[1];
  ASSERT_EQ(server.read_some(asio::buffer(got), ec), 1u);
  settle(t);
  EXPECT_TRUE(writable) << "one byte of room, a write would not wait";
  EXPECT_EQ(client.write_some(asio::buffer(bytes), ec), 1u) << ec.message();
}

// The watermark holds a read for what it asks at most: a read of 10 bytes
// under a watermark of 100 completes on 10.
TEST(dsim_network_bytes, a_read_asking_less_than_the_watermark_completes_on_what_it_asks) {
  connected_nodes t(84, whole(64 << 10));
  t.server.set_option(asio::socket_base::receive_low_watermark(100));
  std::vector<std::byte> got(10);
  std::size_t read = 0;
  t.server.async_read_some(asio::buffer(got), [&](std::error_code, std::size_t k) { read = k; });
  const auto bytes = pattern(10, 84);
  std::error_code ec;
  ASSERT_EQ(t.client.write_some(asio::buffer(bytes.data(), 9), ec), 9u);
  settle(t);
  EXPECT_EQ(read, 0u) << "9 of 10 asked";
  ASSERT_EQ(t.client.write_some(asio::buffer(bytes.data() + 9, 1), ec), 1u);
  settle(t);
  EXPECT_EQ(read, 10u);
}

// A watermark of zero is a watermark of one: a lone byte completes a read,
// as it does with no watermark set.
TEST(dsim_network_bytes, a_watermark_of_zero_or_none_is_met_by_one_byte) {
  for (bool set : {false, true}) {
    connected_nodes t(85, whole(64 << 10));
    if (set) t.server.set_option(asio::socket_base::receive_low_watermark(0));
    std::vector<std::byte> got(100);
    std::size_t read = 0;
    t.server.async_read_some(asio::buffer(got), [&](std::error_code, std::size_t k) { read = k; });
    const std::byte one[1] = {std::byte{9}};
    std::error_code ec;
    ASSERT_EQ(t.client.write_some(asio::buffer(one), ec), 1u);
    settle(t);
    EXPECT_EQ(read, 1u) << (set ? "watermark 0" : "no watermark");
  }
}

// With every read cut, a read under a watermark of 300 still returns at
// least 300 bytes and no more than wait; some are cut short of that.
TEST(dsim_network_bytes, a_cut_read_never_returns_less_than_its_watermark) {
  int cut = 0;
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    network_options o = whole(64 << 10);
    o.partial_read = 1;
    connected_nodes t(seed, o);
    auto& server = t.server;
    server.set_option(asio::socket_base::receive_low_watermark(300));
    const auto bytes = pattern(3000, seed);
    std::error_code ec;
    ASSERT_EQ(t.client.write_some(asio::buffer(bytes), ec), 3000u);
    settle(t);
    std::vector<std::byte> got(4000);
    while (server.queued() >= 300) {
      const auto waiting = server.queued();
      const auto n = server.read_some(asio::buffer(got), ec);
      ASSERT_FALSE(ec) << ec.message();
      EXPECT_GE(n, 300u) << "seed " << seed;
      EXPECT_LE(n, waiting);
      cut += n < waiting ? 1 : 0;
    }
  }
  EXPECT_GT(cut, 0);
}

// Reads and writes of no bytes complete at once, with no error: a read
// with nothing arrived, a write into a full buffer.
TEST(dsim_network_bytes, reads_and_writes_of_no_bytes_complete_at_once) {
  connected_nodes t(86, whole(9000));
  auto& client = t.client;
  const auto fill = pattern(9000, 86);
  ASSERT_NO_FATAL_FAILURE(write_all_now(t, client, fill));
  std::error_code ec;
  EXPECT_EQ(client.write_some(asio::buffer(fill.data(), 0), ec), 0u);
  EXPECT_FALSE(ec) << "an empty write into a full buffer: " << ec.message();
  std::byte none[1];
  EXPECT_EQ(client.read_some(asio::buffer(none, 0), ec), 0u);
  EXPECT_FALSE(ec) << "an empty read with nothing arrived: " << ec.message();
  int done = 0;
  std::error_code read_end = asio::error::in_progress, write_end = asio::error::in_progress;
  client.async_read_some(asio::buffer(none, 0), [&](std::error_code e, std::size_t n) {
    read_end = e;
    done += n == 0 ? 1 : 0;
  });
  client.async_write_some(asio::buffer(fill.data(), 0), [&](std::error_code e, std::size_t n) {
    write_end = e;
    done += n == 0 ? 1 : 0;
  });
  settle(t);
  EXPECT_EQ(done, 2);
  EXPECT_FALSE(read_end) << read_end.message();
  EXPECT_FALSE(write_end) << write_end.message();
}

// Bytes gathered from several buffers arrive in order and are scattered
// over several buffers in order, empty buffers skipped.
TEST(dsim_network_bytes, gathered_writes_and_scattered_reads_keep_the_bytes_in_order) {
  connected_nodes t(87, whole(64 << 10));
  const auto bytes = pattern(1010, 87);
  const std::array<asio::const_buffer, 3> out = {asio::buffer(bytes.data(), 3),
                                                 asio::buffer(bytes.data() + 3, 0),
                                                 asio::buffer(bytes.data() + 3, 1007)};
  std::error_code ec;
  ASSERT_EQ(t.client.write_some(out, ec), 1010u);
  settle(t);
  std::vector<std::byte> a1(7), a2(0), a3(2000);
  const std::array<asio::mutable_buffer, 3> in = {asio::buffer(a1), asio::buffer(a2),
                                                  asio::buffer(a3)};
  ASSERT_EQ(t.server.read_some(in, ec), 1010u) << ec.message();
  std::vector<std::byte> got(a1);
  got.insert(got.end(), a3.begin(), a3.begin() + 1003);
  EXPECT_TRUE(got == bytes);
}

// A writer held by a full buffer is woken by a non-blocking read that
// frees a third of it, not by one that frees less.
TEST(dsim_network_bytes, a_read_that_frees_a_third_of_the_buffer_wakes_a_held_writer) {
  connected_nodes t(88, whole(9000));
  auto& server = t.server;
  const auto big = pattern(12000, 88);
  bool written = false;
  asio::async_write(t.client, asio::buffer(big),
                    [&](std::error_code, std::size_t) { written = true; });
  settle(t);
  ASSERT_EQ(server.queued(), 9000u);
  std::vector<std::byte> got(3000);
  std::error_code ec;
  ASSERT_EQ(server.read_some(asio::buffer(got.data(), 2999), ec), 2999u);
  settle(t);
  EXPECT_FALSE(written) << "2999 bytes of room took the last 3000";
  ASSERT_EQ(server.read_some(asio::buffer(got.data(), 1), ec), 1u);
  settle(t);
  EXPECT_TRUE(written) << "the read that freed a third woke nobody";
}

// A write wait completes on a reset, the buffer full or not.
TEST(dsim_network_bytes, a_reset_makes_a_full_socket_writable) {
  connected_nodes t(89, whole(9000));
  const auto fill = pattern(9000, 89);
  std::error_code ec;
  ASSERT_EQ(t.client.write_some(asio::buffer(fill), ec), 9000u);
  bool writable = false;
  t.client.async_wait(socket::wait_write, [&](std::error_code) { writable = true; });
  settle(t);
  ASSERT_FALSE(writable);
  t.server.set_option(asio::socket_base::linger(true, 0));
  t.server.close();
  settle(t);
  EXPECT_TRUE(writable) << "a write would fail at once, and waits";
}

// The bytes waiting are what FIONREAD says and what the idle lane's check
// sees, a byte or more.
TEST(dsim_network_bytes, bytes_waiting_are_counted_and_make_a_peer_ready) {
  connected_nodes t(90, whole(64 << 10));
  auto& server = t.server;
  asio::socket_base::bytes_readable readable;
  std::error_code ec;
  server.io_control(readable, ec);
  EXPECT_EQ(readable.get(), 0u);
  EXPECT_FALSE(server.peer_gone_or_ready());
  const auto bytes = pattern(7, 90);
  ASSERT_EQ(t.client.write_some(asio::buffer(bytes), ec), 7u);
  settle(t);
  server.io_control(readable, ec);
  EXPECT_FALSE(ec);
  EXPECT_EQ(readable.get(), 7u);
  EXPECT_EQ(server.available(ec), 7u);
  EXPECT_TRUE(server.peer_gone_or_ready()) << "seven bytes waiting";
}

// Each direction of a connection draws its own buffer in [min, max]: a
// write into an empty one, whole, takes exactly the buffer.
TEST(dsim_network_bytes, each_direction_draws_its_own_buffer_within_the_bounds) {
  int differ = 0;
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    network_options o = whole(0);
    o.buffer_min = 1000;
    o.buffer_max = 60000;
    connected_nodes t(seed, o);
    const auto big = pattern(70000, seed);
    std::error_code ec;
    const auto up = t.client.write_some(asio::buffer(big), ec);
    const auto down = t.server.write_some(asio::buffer(big), ec);
    EXPECT_GE(up, 1000u);
    EXPECT_LE(up, 60000u);
    EXPECT_GE(down, 1000u);
    EXPECT_LE(down, 60000u);
    differ += up != down ? 1 : 0;
    settle(t);
    EXPECT_EQ(t.server.queued(), up);
    EXPECT_EQ(t.client.queued(), down);
  }
  EXPECT_GT(differ, 0) << "both directions always drew one buffer";
}

// Rule: a connect is answered one latency drawn in the network's bounds
// after it starts, never at once: refused where nobody listens, connected
// where a listener is.
TEST(dsim_network_bytes, a_connect_is_answered_one_drawn_latency_after_it_starts) {
  std::set<std::chrono::nanoseconds::rep> took;
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    network_options o = whole(64 << 10);
    o.latency_min = 40us;
    o.latency_max = 60us;
    two_nodes t(seed, o);
    acceptor a(t.server_ctx);
    const auto at = t.listen(a);
    for (bool listening : {false, true}) {
      socket s(t.client_ctx);
      const endpoint to{server_node, static_cast<unsigned short>(at.port() + (listening ? 0 : 1))};
      const auto start = t.w.now();
      const auto end = completion_code(t, [&](auto done) { s.async_connect(to, done); });
      EXPECT_EQ(end, listening ? std::error_code() : code(asio::error::connection_refused));
      EXPECT_GE(t.w.now() - start, 40us) << "seed " << seed << ", listening " << listening;
      EXPECT_LE(t.w.now() - start, 60us) << "seed " << seed << ", listening " << listening;
      const auto delay = t.w.now() - start;
      took.insert(std::chrono::duration_cast<std::chrono::nanoseconds>(delay).count());
    }
  }
  EXPECT_GT(took.size(), 1u) << "every connect took the same time: not drawn";
}

}  // namespace
}  // namespace faultlane::dsim
