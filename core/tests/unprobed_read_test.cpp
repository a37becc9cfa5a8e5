// unprobed_read: a read queued on the reactor without Asio's speculative
// recv (core/src/unprobed_read.hpp), on real loopback connections.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/write.hpp>
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "faultlane/testing/read_within.hpp"
#include "unprobed_read.hpp"

namespace faultlane {
namespace {

using asio::ip::tcp;
using detail::unprobed_read;

struct outcome {
  std::error_code ec;
  std::size_t bytes = 0;
};

// A connection on 127.0.0.1, both ends on one io_context that has work to
// wait for (so that poll() runs the reactor).
struct connection {
  asio::io_context context;
  asio::executor_work_guard<asio::io_context::executor_type> work{context.get_executor()};
  tcp::socket client{context}, server{context};
  connection() {
    tcp::acceptor acceptor(context, {asio::ip::make_address("127.0.0.1"), 0});
    client.connect(acceptor.local_endpoint());  // the listener's backlog takes it
    EXPECT_FALSE(testing::accept_within(acceptor, server));
  }
  void send(const std::string& text) { asio::write(client, asio::buffer(text)); }
  // Waits, at most 10 s, until the server's socket holds `n` bytes (loopback
  // may hand them over a little later than send() returns).
  bool server_holds(std::size_t n) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (server.available() < n) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::yield();
    }
    return true;
  }
  // Runs handlers until `done` holds a value, for at most 10 s.
  void run_until(const std::optional<outcome>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done && std::chrono::steady_clock::now() < deadline) {
      context.run_one_for(std::chrono::milliseconds(100));
    }
  }
};

// Where this Asio's reactor is not the one unprobed_read knows, nothing
// calls it (reads_skip_the_probe), and neither do these tests.
class unprobed_reads : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!detail::reads_skip_the_probe) GTEST_SKIP() << "this Asio's reads always probe";
  }
};

unprobed_read::handler record(std::optional<outcome>& into) {
  return [&into](std::error_code ec, std::size_t n) { into = outcome{ec, n}; };
}

// A read into one 64-byte buffer: unprobed (start) or Asio's (probe), and
// how it ended.
struct one_read {
  std::array<char, 64> in{};
  const std::array<asio::mutable_buffer, 1> into{asio::buffer(in)};
  unprobed_read read;
  std::optional<outcome> done;
  void start(tcp::socket& s) {
    done.reset();
    read.start(s, into, record(done));
  }
  void probe(tcp::socket& s) {
    done.reset();
    s.async_read_some(asio::buffer(in), [this](std::error_code ec, std::size_t n) {
      done = outcome{ec, n};
    });
  }
  std::string text() const { return std::string(in.data(), done ? done->bytes : 0); }
};

// Bytes sent after the start arrive through the reactor, scattered over
// the buffers in order.
TEST_F(unprobed_reads, bytes_sent_after_the_start_complete_it_scattered) {
  connection c;
  std::array<char, 3> head{};
  std::array<char, 10> rest{};
  const std::array<asio::mutable_buffer, 2> into{asio::buffer(head), asio::buffer(rest)};
  unprobed_read read;
  std::optional<outcome> done;
  read.start(c.server, into, record(done));
  EXPECT_TRUE(read.pending());
  c.send("abcdefgh");
  c.run_until(done);
  ASSERT_TRUE(done);
  EXPECT_FALSE(done->ec) << done->ec.message();
  EXPECT_EQ(done->bytes, 8u);
  EXPECT_EQ(std::string(head.data(), 3), "abc");
  EXPECT_EQ(std::string(rest.data(), 5), "defgh");
  EXPECT_FALSE(read.pending());
}

// The read does not try the socket when it starts: bytes whose edge a
// reactor turn already consumed stay unread until more bytes arrive (so
// the caller's condition in unprobed_read.hpp is a real one). Asio's own
// read, started the same way, finds them at once.
TEST_F(unprobed_reads, it_does_not_try_the_socket_when_it_starts) {
  connection c;
  c.send("early");
  ASSERT_TRUE(c.server_holds(5));
  c.context.poll();  // the reactor reports the bytes; no read is waiting
  one_read r;
  r.start(c.server);
  for (int i = 0; i < 3; ++i) c.context.poll();
  EXPECT_FALSE(r.done) << "the read tried the socket";
  c.send("late");  // a new edge: the read takes everything there
  c.run_until(r.done);
  ASSERT_TRUE(r.done);
  EXPECT_FALSE(r.done->ec) << r.done->ec.message();
  EXPECT_EQ(r.text(), "earlylate");

  // Asio's read, in the same place, probes.
  connection d;
  d.send("early");
  ASSERT_TRUE(d.server_holds(5));
  d.context.poll();
  one_read probed;
  probed.probe(d.server);
  d.context.poll();
  ASSERT_TRUE(probed.done);
  EXPECT_EQ(probed.text(), "early");
}

TEST_F(unprobed_reads, end_of_file_ends_it_with_eof) {
  connection c;
  one_read r;
  r.start(c.server);
  c.client.shutdown(tcp::socket::shutdown_send);
  c.run_until(r.done);
  ASSERT_TRUE(r.done);
  EXPECT_EQ(r.done->ec, asio::error::eof) << r.done->ec.message();
  EXPECT_EQ(r.done->bytes, 0u);
}

// Why a read that stopped short is no sign the socket is quiet: the recv
// that takes the last bytes takes the FIN queued behind them as well, and
// the reactor reported both at once. An unprobed read after it waits for
// nothing; Asio's read, which probes, finds the end of file at once.
TEST_F(unprobed_reads, a_short_read_can_take_the_fin_whose_edge_was_the_last) {
  connection c;
  one_read first;
  // Waiting before the bytes come: the reactor's report performs it.
  first.probe(c.server);
  c.context.poll();
  ASSERT_FALSE(first.done);
  c.send("x");
  c.client.shutdown(tcp::socket::shutdown_send);
  ASSERT_EQ(testing::poll_within(c.server.native_handle(), POLLRDHUP, std::chrono::seconds(10)), 1)
      << "the FIN did not arrive";
  c.run_until(first.done);
  ASSERT_TRUE(first.done);
  ASSERT_FALSE(first.done->ec) << first.done->ec.message();
  EXPECT_EQ(first.text(), "x");  // short of 64, and the FIN went with it

  one_read r;
  r.start(c.server);
  for (int i = 0; i < 3; ++i) c.context.poll();
  EXPECT_FALSE(r.done) << "the end of file raised another edge after all";
  c.server.cancel();  // ends the read (operation_aborted) so the test can finish
  c.run_until(r.done);
  ASSERT_TRUE(r.done);
  EXPECT_EQ(r.done->ec, asio::error::operation_aborted);

  one_read probed;
  probed.probe(c.server);
  c.run_until(probed.done);
  ASSERT_TRUE(probed.done);
  EXPECT_EQ(probed.done->ec, asio::error::eof);
}

TEST_F(unprobed_reads, a_reset_ends_it_with_the_reset) {
  connection c;
  one_read r;
  r.start(c.server);
  c.client.set_option(asio::socket_base::linger(true, 0));  // close sends RST
  c.client.close();
  c.run_until(r.done);
  ASSERT_TRUE(r.done);
  EXPECT_EQ(r.done->ec, asio::error::connection_reset) << r.done->ec.message();
}

// Closing the socket cancels the read (operation_aborted, as Asio's read);
// the object then serves the next read, on another connection.
TEST_F(unprobed_reads, a_closed_socket_cancels_it_and_the_object_is_reused) {
  connection c;
  one_read r;
  r.start(c.server);
  c.server.close();
  c.run_until(r.done);
  ASSERT_TRUE(r.done);
  EXPECT_EQ(r.done->ec, asio::error::operation_aborted) << r.done->ec.message();

  // A read of a socket already closed ends at once, with bad_descriptor.
  r.start(c.server);
  c.run_until(r.done);
  ASSERT_TRUE(r.done);
  EXPECT_EQ(r.done->ec, asio::error::bad_descriptor) << r.done->ec.message();

  connection d;
  r.start(d.server);
  d.send("again");
  d.run_until(r.done);
  ASSERT_TRUE(r.done);
  EXPECT_FALSE(r.done->ec) << r.done->ec.message();
  EXPECT_EQ(r.text(), "again");
}

// A handler the read never ran is dropped when the io_context goes: what
// it holds (the read's owner, in faultlane) is released.
TEST_F(unprobed_reads, a_destroyed_context_drops_the_handler_unrun) {
  auto token = std::make_shared<int>(0);
  bool ran = false;
  one_read r;
  {
    auto c = std::make_unique<connection>();
    r.read.start(c->server, r.into, [token, &ran](std::error_code, std::size_t) { ran = true; });
    EXPECT_EQ(token.use_count(), 2);
  }  // the sockets close (the read is cancelled, not run), then the context goes
  EXPECT_FALSE(ran);
  EXPECT_EQ(token.use_count(), 1);
  EXPECT_FALSE(r.read.pending());
}

}  // namespace
}  // namespace faultlane
