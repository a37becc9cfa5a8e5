// The simulated network's flow control: the receive watermark (capped at
// half the buffer, as Linux caps it), a writer held by a full buffer, and
// a socket whose io_context is gone (what was pending is dropped, as Asio
// drops it).
#include <gtest/gtest.h>

#include <asio/read.hpp>
#include <asio/write.hpp>

#include <array>
#include <memory>
#include <vector>

#include "network_fixture.hpp"

namespace faultlane::dsim {
namespace {

using namespace std::chrono_literals;
using namespace testing;

// A watermark above half the connection's buffer is met by half a buffer,
// as Linux caps SO_RCVLOWAT at half the receive buffer: not never.
TEST(dsim_network, a_watermark_above_half_the_buffer_is_met_by_half_a_buffer) {
  network_options o;
  o.buffer_min = o.buffer_max = 8192;
  o.partial_write = 0;
  o.partial_read = 0;
  two_nodes t(11, o);
  acceptor a(t.server_ctx);
  auto pair = t.connect_pair(a, t.listen(a));
  auto& client = pair.first;
  auto& server = pair.second;
  server.set_option(asio::socket_base::receive_low_watermark(256 << 10));
  std::vector<std::byte> got(1 << 20);
  std::size_t read = 0;
  server.async_read_some(asio::buffer(got), [&](std::error_code, std::size_t k) { read = k; });
  const auto big = pattern(1 << 20, 11);
  bool written = false;
  asio::async_write(client, asio::buffer(big),
                    [&](std::error_code, std::size_t) { written = true; });
  EXPECT_EQ(t.w.run_until([&] { return read > 0; }), world::wait_result::met);
  EXPECT_GE(read, 4096u);
}

// A buffer filled to a few bytes short, with the writer holding the rest
// until a third of the buffer is free (silly-window avoidance), and a
// reader whose watermark is above what is there: with the watermark capped
// at the whole buffer each waited for the other for good.
TEST(dsim_network, a_watermark_reader_and_a_held_writer_never_wait_on_each_other) {
  network_options o;
  o.buffer_min = o.buffer_max = 9000;
  o.partial_write = 0;
  o.partial_read = 0;
  two_nodes t(13, o);
  acceptor a(t.server_ctx);
  auto pair = t.connect_pair(a, t.listen(a));
  auto& client = pair.first;
  auto& server = pair.second;
  const auto first = pattern(8990, 13);
  bool first_written = false;
  asio::async_write(client, asio::buffer(first),
                    [&](std::error_code, std::size_t) { first_written = true; });
  std::error_code ec;
  ASSERT_EQ(t.w.run_until([&] { return first_written && server.available(ec) == 8990; }),
            world::wait_result::met);
  const auto rest = pattern(5000, 14);
  bool rest_written = false;
  asio::async_write(client, asio::buffer(rest),
                    [&](std::error_code, std::size_t) { rest_written = true; });
  server.set_option(asio::socket_base::receive_low_watermark(256 << 10));
  std::vector<std::byte> got(1 << 20);
  std::size_t read = 0;
  server.async_read_some(asio::buffer(got), [&](std::error_code, std::size_t k) { read = k; });
  EXPECT_EQ(t.w.run_until([&] { return read > 0 && rest_written; }), world::wait_result::met)
      << "read " << read << ", rest written " << rest_written;
  EXPECT_EQ(read, 8990u);
}

// A read pending on a socket whose io_context is destroyed is dropped when
// bytes come, as Asio destroys what is pending on a context it shuts down:
// nothing is copied into its buffer, and nothing posted to the context
// that is gone.
TEST(dsim_network, a_completion_for_a_context_that_is_gone_is_dropped_not_posted) {
  two_nodes t(15);
  acceptor a(t.server_ctx);
  const auto at = t.listen(a);
  auto gone = std::make_unique<asio::io_context>();
  t.w.add_context(*gone, "gone");
  t.net.place(*gone, server_node);
  socket client(t.client_ctx);
  socket server(*gone);
  bool connected = false, accepted = false;
  client.async_connect(at, [&](std::error_code ec) { connected = !ec; });
  a.async_accept(*gone, [&](std::error_code ec, socket s) {
    accepted = !ec;
    server = std::move(s);
  });
  ASSERT_EQ(t.w.run_until([&] { return connected && accepted; }), world::wait_result::met);
  // The read's buffer goes with its owner: nothing may be copied into it.
  auto got = std::make_unique<std::array<std::byte, 16>>();
  auto held = std::make_shared<int>(0);  // what the handler holds is released
  bool ran = false;
  server.async_read_some(asio::buffer(*got),
                         [&, held](std::error_code, std::size_t) { ran = true; });
  t.w.remove_context(*gone);
  const std::weak_ptr<int> watch = held;
  held.reset();
  gone.reset();  // the context shuts down; the socket's read is still pending
  got.reset();
  const auto bytes = pattern(16, 15);
  std::error_code ec;
  EXPECT_EQ(client.write_some(asio::buffer(bytes), ec), 16u);
  EXPECT_EQ(t.w.run_until([] { return false; }), world::wait_result::idle);
  EXPECT_FALSE(ran);
  EXPECT_TRUE(watch.expired());
}

TEST(dsim_network, a_receive_watermark_holds_a_read_until_that_many_bytes_wait) {
  network_options o;
  o.partial_write = 0;  // writes of 1000 bytes arrive as 1000
  two_nodes t(8, o);
  acceptor a(t.server_ctx);
  auto pair = t.connect_pair(a, t.listen(a));
  auto& client = pair.first;
  auto& server = pair.second;
  server.set_option(asio::socket_base::receive_low_watermark(2500));
  std::vector<std::byte> got(4000);
  std::size_t read = 0;
  server.async_read_some(asio::buffer(got), [&](std::error_code, std::size_t k) { read = k; });
  const auto chunk = pattern(1000, 8);
  for (int i = 0; i < 2; ++i) {
    std::size_t n = 0;
    asio::async_write(client, asio::buffer(chunk), [&](std::error_code, std::size_t k) { n = k; });
    EXPECT_EQ(t.w.run_until([&] { return n == chunk.size(); }), world::wait_result::met);
  }
  EXPECT_EQ(t.w.run_until([&] { return read > 0; }), world::wait_result::idle);
  EXPECT_EQ(server.queued(), 2000u);  // below the watermark: the read waits
  std::size_t n = 0;
  asio::async_write(client, asio::buffer(chunk), [&](std::error_code, std::size_t k) { n = k; });
  EXPECT_EQ(t.w.run_until([&] { return read > 0; }), world::wait_result::met);
  EXPECT_GE(read, 2500u);
}

TEST(dsim_network, a_writer_waits_while_the_reader_leaves_its_buffer_full) {
  network_options o;
  o.buffer_min = o.buffer_max = 8192;
  two_nodes t(9, o);
  acceptor a(t.server_ctx);
  auto pair = t.connect_pair(a, t.listen(a));
  auto& client = pair.first;
  auto& server = pair.second;
  const auto big = pattern(20000, 9);
  std::size_t written = 0;
  bool done = false;
  asio::async_write(client, asio::buffer(big), [&](std::error_code, std::size_t k) {
    written = k;
    done = true;
  });
  EXPECT_EQ(t.w.run_until([&] { return done; }), world::wait_result::idle);
  EXPECT_EQ(server.queued(), 8192u);
  std::vector<std::byte> got(big.size());
  bool read_all = false;
  asio::async_read(server, asio::buffer(got),
                   [&](std::error_code, std::size_t) { read_all = true; });
  EXPECT_EQ(t.w.run_until([&] { return done && read_all; }), world::wait_result::met);
  EXPECT_EQ(written, big.size());
  EXPECT_TRUE(got == big);
}

}  // namespace
}  // namespace faultlane::dsim
