// unprobed_read: a read queued on the reactor, with or without Asio's
// speculative recv, that says whether it left the socket empty
// (core/src/runtime/unprobed_read.hpp), on real loopback connections.
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
#include "runtime/unprobed_read.hpp"

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
  // The client's end, its FIN or a reset (a close with linger 0); true
  // once the server's socket shows it (at most 10 s).
  bool end_with_fin() {
    client.shutdown(tcp::socket::shutdown_send);
    return testing::poll_within(server.native_handle(), POLLRDHUP, std::chrono::seconds(10)) == 1;
  }
  bool end_with_reset() {
    client.set_option(asio::socket_base::linger(true, 0));
    client.close();
    return testing::poll_within(server.native_handle(), POLLERR, std::chrono::seconds(10)) == 1;
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

// A read into one 64-byte buffer: unprobed (start), probing first
// (start_probing) or Asio's (asio_read), and how it ended.
struct one_read {
  std::array<char, 64> in{};
  const std::array<asio::mutable_buffer, 1> into{asio::buffer(in)};
  unprobed_read read;
  std::optional<outcome> done;
  void start(tcp::socket& s) {
    done.reset();
    read.start(s, into, record(done), unprobed_read::probe::skip);
  }
  void start_probing(tcp::socket& s) {
    done.reset();
    read.start(s, into, record(done), unprobed_read::probe::first);
  }
  void asio_read(tcp::socket& s) {
    done.reset();
    s.async_read_some(asio::buffer(in), [this](std::error_code ec, std::size_t n) {
      done = outcome{ec, n};
    });
  }
  // Runs `c`'s handlers until the read ended (at most 10 s); whether it did.
  bool ended_on(connection& c) {
    c.run_until(done);
    return done.has_value();
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
  read.start(c.server, into, record(done), unprobed_read::probe::skip);
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
  ASSERT_TRUE(r.ended_on(c));
  EXPECT_FALSE(r.done->ec) << r.done->ec.message();
  EXPECT_EQ(r.text(), "earlylate");

  // Asio's read, in the same place, probes.
  connection d;
  d.send("early");
  ASSERT_TRUE(d.server_holds(5));
  d.context.poll();
  one_read probed;
  probed.asio_read(d.server);
  d.context.poll();
  ASSERT_TRUE(probed.done);
  EXPECT_EQ(probed.text(), "early");
}

TEST_F(unprobed_reads, end_of_file_ends_it_with_eof) {
  connection c;
  one_read r;
  r.start(c.server);
  c.client.shutdown(tcp::socket::shutdown_send);
  ASSERT_TRUE(r.ended_on(c));
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
  first.asio_read(c.server);
  c.context.poll();
  ASSERT_FALSE(first.done);
  c.send("x");
  ASSERT_TRUE(c.end_with_fin()) << "the FIN did not arrive";
  ASSERT_TRUE(first.ended_on(c));
  ASSERT_FALSE(first.done->ec) << first.done->ec.message();
  EXPECT_EQ(first.text(), "x");  // short of 64, and the FIN went with it

  one_read r;
  r.start(c.server);
  for (int i = 0; i < 3; ++i) c.context.poll();
  EXPECT_FALSE(r.done) << "the end of file raised another edge after all";
  c.server.cancel();  // ends the read (operation_aborted) so the test can finish
  ASSERT_TRUE(r.ended_on(c));
  EXPECT_EQ(r.done->ec, asio::error::operation_aborted);

  one_read probed;
  probed.asio_read(c.server);
  ASSERT_TRUE(probed.ended_on(c));
  EXPECT_EQ(probed.done->ec, asio::error::eof);
}

// What a read says it left: nothing when it took every byte (the kernel's
// word, TCP_INQ); not so when bytes stay behind, and never for a read
// that completed in its probe (its handler is posted, and the reactor may
// report the socket before it runs), nor without the kernel's word.
TEST_F(unprobed_reads, it_says_it_left_nothing_only_when_the_kernel_says_so) {
  connection c;
  ASSERT_TRUE(unprobed_read::report_bytes_left(c.server));
  one_read r;
  r.start(c.server);
  c.send("abc");
  ASSERT_TRUE(r.ended_on(c));
  EXPECT_EQ(r.text(), "abc");
  EXPECT_TRUE(r.read.left_nothing());

  r.start(c.server);
  c.send(std::string(100, 'z'));  // one segment: the reactor reports it whole
  ASSERT_TRUE(r.ended_on(c));
  EXPECT_EQ(r.done->bytes, 64u);
  EXPECT_FALSE(r.read.left_nothing()) << "36 bytes stayed behind";

  // The rest, taken by the probe: nothing is left, but the read does not
  // say so.
  r.start_probing(c.server);
  ASSERT_TRUE(r.ended_on(c));
  EXPECT_EQ(r.done->bytes, 36u);
  EXPECT_FALSE(r.read.left_nothing()) << "a read done in its probe was trusted";

  // A probing read that found nothing waits for the reactor like the
  // others, and then may say so.
  r.start_probing(c.server);
  c.context.poll();
  ASSERT_FALSE(r.done);
  c.send("d");
  ASSERT_TRUE(r.ended_on(c));
  EXPECT_EQ(r.text(), "d");
  EXPECT_TRUE(r.read.left_nothing());

  // Without the kernel's word (TCP_INQ off), never.
  connection d;
  one_read q;
  q.start(d.server);
  d.send("abc");
  ASSERT_TRUE(q.ended_on(d));
  EXPECT_EQ(q.text(), "abc");
  EXPECT_FALSE(q.read.left_nothing());
}

// A FIN behind the bytes is something left: the recv that took the bytes
// left it, its edge is gone, and only a probe would find it.
TEST_F(unprobed_reads, a_fin_behind_the_bytes_is_something_left) {
  connection c;
  ASSERT_TRUE(unprobed_read::report_bytes_left(c.server));
  one_read r;
  r.start_probing(c.server);  // finds nothing: waits for the reactor
  c.context.poll();
  ASSERT_FALSE(r.done);
  c.send("x");
  ASSERT_TRUE(c.end_with_fin()) << "the FIN did not arrive";
  ASSERT_TRUE(r.ended_on(c));
  EXPECT_EQ(r.text(), "x");
  EXPECT_FALSE(r.read.left_nothing()) << "the FIN behind the byte was not counted";
  r.start_probing(c.server);
  ASSERT_TRUE(r.ended_on(c));
  EXPECT_EQ(r.done->ec, asio::error::eof);
}

// A reset behind the bytes is not in the kernel's word: the read says it
// left nothing. What callers rely on instead: a send then fails with the
// reset, having sent nothing, so no request leaves on that connection.
TEST_F(unprobed_reads, a_reset_behind_the_bytes_is_found_by_the_next_send) {
  connection c;
  ASSERT_TRUE(unprobed_read::report_bytes_left(c.server));
  one_read r;
  r.start(c.server);
  c.send("abc");
  ASSERT_TRUE(c.end_with_reset()) << "the reset did not arrive";
  ASSERT_TRUE(r.ended_on(c));  // one report for both
  EXPECT_FALSE(r.done->ec) << r.done->ec.message();
  EXPECT_EQ(r.text(), "abc");
  EXPECT_TRUE(r.read.left_nothing());
  std::error_code ec;
  const std::size_t sent = c.server.send(asio::buffer("request", 7), 0, ec);
  EXPECT_EQ(ec, asio::error::connection_reset) << ec.message();
  EXPECT_EQ(sent, 0u);
}

TEST_F(unprobed_reads, a_reset_ends_it_with_the_reset) {
  connection c;
  one_read r;
  r.start(c.server);
  ASSERT_TRUE(c.end_with_reset());
  ASSERT_TRUE(r.ended_on(c));
  EXPECT_EQ(r.done->ec, asio::error::connection_reset) << r.done->ec.message();
}

// Closing the socket cancels the read (operation_aborted, as Asio's read);
// the object then serves the next read, on another connection.
TEST_F(unprobed_reads, a_closed_socket_cancels_it_and_the_object_is_reused) {
  connection c;
  one_read r;
  r.start(c.server);
  c.server.close();
  ASSERT_TRUE(r.ended_on(c));
  EXPECT_EQ(r.done->ec, asio::error::operation_aborted) << r.done->ec.message();

  // A read of a socket already closed ends at once, with bad_descriptor.
  r.start(c.server);
  ASSERT_TRUE(r.ended_on(c));
  EXPECT_EQ(r.done->ec, asio::error::bad_descriptor) << r.done->ec.message();

  connection d;
  r.start(d.server);
  d.send("again");
  ASSERT_TRUE(r.ended_on(d));
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
    r.read.start(
        c->server, r.into, [token, &ran](std::error_code, std::size_t) { ran = true; },
        unprobed_read::probe::skip);
    EXPECT_EQ(token.use_count(), 2);
  }  // the sockets close (the read is cancelled, not run), then the context goes
  EXPECT_FALSE(ran);
  EXPECT_EQ(token.use_count(), 1);
  EXPECT_FALSE(r.read.pending());
}

}  // namespace
}  // namespace faultlane
