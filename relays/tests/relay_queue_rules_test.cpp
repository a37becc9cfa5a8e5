// A direction's send queue and the relay's stop (relays/src/send_queue.cpp,
// relay.cpp; limits.hpp): reading pauses while more than queued_bytes_max
// waits to leave, goes on at exactly that much, resumes as the queue
// drains; stopping a relay with connections open closes them with a FIN.
#include <gtest/gtest.h>

#include <functional>
#include <future>
#include <thread>

#include "faultlane/relays/limits.hpp"
#include "faultlane/testing/read_within.hpp"
#include "relay_fixture.hpp"

namespace faultlane::relays::testing {
namespace {

// A client whose sends, like its reads, end at a deadline: a relay that
// stopped reading must fail the test, not hang it.
class bounded_sender {
 public:
  explicit bounded_sender(const address& a) : socket_(context_) {
    socket_.connect({asio::ip::make_address(a.address), a.port});
    socket_.non_blocking(true);
  }
  // True once all of `data` went into the socket within `timeout`.
  bool send(const std::vector<char>& data, std::chrono::milliseconds timeout = 30s) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    std::size_t done = 0;
    while (done < data.size()) {
      std::error_code ec;
      done += socket_.write_some(asio::buffer(data.data() + done, data.size() - done), ec);
      if (ec && ec != asio::error::would_block) return false;
      if (ec && faultlane::testing::poll_until(socket_.native_handle(), POLLOUT, deadline) <= 0)
        return false;
    }
    return true;
  }

 private:
  asio::io_context context_;
  tcp::socket socket_;
};

// Rule: reading stops only while MORE than queued_bytes_max waits in the
// send queue: with exactly that much queued the relay still reads (one
// more byte), and with one byte more it reads nothing further. The 60 s
// latency keeps every byte queued for the whole test.
TEST(relay_queue_rules, reading_pauses_only_above_queued_bytes_max) {
  plain_peer sink(plain_peer::mode::sink);
  auto r = start_relay(config_to(sink.where(), {"latency dir=up ms=60000"}));
  ASSERT_TRUE(r);
  bounded_sender c(r->listen_endpoint());
  auto queued = [&] { return r->bytes_received(direction::up); };
  ASSERT_TRUE(c.send(bytes(queued_bytes_max)));
  ASSERT_TRUE(eventually([&] { return queued() == queued_bytes_max; }, 60s)) << queued();
  ASSERT_TRUE(c.send({'x'}));  // at the bound, not above it: still read
  ASSERT_TRUE(eventually([&] { return queued() == queued_bytes_max + 1; }, 30s)) << queued();
  ASSERT_TRUE(c.send(bytes(buffer_bytes_min)));  // above the bound: paused
  EXPECT_FALSE(eventually([&] { return queued() > queued_bytes_max + 1; }, 500ms)) << queued();
  EXPECT_EQ(sink.received(), 0u);  // the latency still holds every byte
}

// True once `value` has not changed for `quiet` (checked until `timeout`).
bool settles(const std::function<std::uint64_t()>& value, std::chrono::milliseconds quiet,
             std::chrono::milliseconds timeout) {
  auto last = value();
  auto since = std::chrono::steady_clock::now();
  return eventually(
      [&] {
        auto now = value();
        if (now != last) {
          last = now;
          since = std::chrono::steady_clock::now();
        }
        return std::chrono::steady_clock::now() - since >= quiet;
      },
      timeout);
}

// Rule: a paused direction reads again once its queue drained to
// queued_bytes_max or below. The upstream does not accept until the relay
// has stopped reading (the kernel's buffers and the queue are full: a
// pause), then reads three times the bound: it arrives whole, in order.
TEST(relay_queue_rules, reading_resumes_as_the_queue_drains) {
  asio::io_context io;
  tcp::acceptor upstream(io, {asio::ip::make_address("127.0.0.1"), 0});
  auto config = config_to({"127.0.0.1", upstream.local_endpoint().port()}, {"latency dir=up ms=1"});
  // Reads of a size that does not divide the bound: the queue drains past
  // it (below it), not onto it exactly.
  config.buffer_bytes = 1'000'000;
  auto r = start_relay(config);
  ASSERT_TRUE(r);
  const auto sent = bytes(3 * queued_bytes_max + 1, 5);
  bounded_sender c(r->listen_endpoint());
  auto sending = std::async(std::launch::async, [&] { return c.send(sent, 60s); });
  auto received = [&] { return r->bytes_received(direction::up); };
  ASSERT_TRUE(eventually([&] { return received() > queued_bytes_max; }, 30s)) << received();
  EXPECT_TRUE(settles(received, 300ms, 30s));  // paused
  tcp::socket s(io);
  ASSERT_FALSE(faultlane::testing::accept_within(upstream, s));
  std::vector<char> got(sent.size());
  auto ec = faultlane::testing::read_within(s, asio::buffer(got), 30s);
  EXPECT_FALSE(ec) << ec.message() << " after " << received() << " bytes read by the relay";
  EXPECT_TRUE(sending.get());
  EXPECT_TRUE(got == sent);
}

// Stops the relay on another thread, failing the test (not hanging it) if
// stop() does not return within `bound`.
void stop_within(relay& r, std::chrono::seconds bound) {
  std::promise<void> stopped;
  auto done = stopped.get_future();
  std::thread stopper([&r, &stopped] {
    r.stop();
    stopped.set_value();
  });
  if (done.wait_for(bound) != std::future_status::ready) {
    ADD_FAILURE() << "stop() did not return within " << bound.count() << " s";
    std::_Exit(1);
  }
  stopper.join();
}

// Rule: stop() with connections open closes each with a FIN (not a reset)
// on both sides, even one whose bytes a stall holds, and returns.
TEST(relay_queue_rules, stop_closes_open_connections_with_a_fin_and_returns) {
  plain_peer echo(plain_peer::mode::echo);
  auto r = start_relay(config_to(echo.where(), {"stall dir=up after_bytes=1 connection=1"}));
  ASSERT_TRUE(r);
  client relayed(r->listen_endpoint());
  relayed.send({'a'});
  ASSERT_EQ(relayed.read(1, 10s).data.size(), 1u);
  client held(r->listen_endpoint());
  held.send({'b', 'c'});
  ASSERT_EQ(held.read(1, 10s).data.size(), 1u);  // b went on, c is held
  ASSERT_TRUE(eventually([&] { return r->counter("stall.up") == 1; }));
  stop_within(*r, 30s);
  EXPECT_EQ(relayed.read(1, 10s).end, asio::error::eof);
  EXPECT_EQ(held.read(1, 10s).end, asio::error::eof);  // c never came
  EXPECT_TRUE(eventually([&] { return echo.saw_eof(); }));
}

}  // namespace
}  // namespace faultlane::relays::testing
