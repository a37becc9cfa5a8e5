// Clients and upstreams that hang up at random points mid-transfer, in both
// directions, on the splice(2) path and on the user-space path: the relay
// survives every one (SIGPIPE included: this process does not ignore it, so
// a splice into a closed socket on an unblocked thread would end the test
// binary), keeps accepting, and its counters and tap records add up.
#include <gtest/gtest.h>

#include <poll.h>

#include <asio/post.hpp>
#include <asio/write.hpp>

#include <random>

#include "relay_fixture.hpp"

namespace faultlane::relays {
namespace {

using namespace testing;

constexpr std::size_t storm_connections = 200;
constexpr std::size_t stream_bytes = 4u << 20;  // far more than any side reads before hanging up

// How one side hangs up: after `after` bytes, with a FIN (shutdown, then
// close) or a reset (close with linger 0).
struct hang_up {
  std::size_t after = 0;
  bool reset = false;
};

void close_socket(tcp::socket& s, bool reset) {
  std::error_code ignored;
  if (reset) {
    s.set_option(asio::socket_base::linger(true, 0), ignored);
  } else {
    s.shutdown(tcp::socket::shutdown_send, ignored);
  }
  s.close(ignored);
}

// An upstream on one io thread. Connection n follows plan(n): with
// `sends`, it writes stream_bytes and reads until the relay ends it; else
// it reads `how.after` bytes and hangs up as `how` says.
class rude_upstream {
 public:
  struct plan {
    bool sends = false;
    hang_up how;
  };
  explicit rude_upstream(std::function<plan(std::size_t)> plan_for)
      : plan_for_(std::move(plan_for)),
        acceptor_(io_, {asio::ip::make_address("127.0.0.1"), 0}),
        payload_(bytes(stream_bytes, 5)) {
    accept();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~rude_upstream() {
    asio::post(io_, [this] { io_.stop(); });
    thread_.join();
  }
  address where() const { return {"127.0.0.1", acceptor_.local_endpoint().port()}; }
  std::size_t accepted() const { return accepted_.load(); }

 private:
  struct conn {
    explicit conn(tcp::socket s) : socket(std::move(s)) {}
    tcp::socket socket;
    plan p;
    std::vector<char> buf = std::vector<char>(64 << 10);
    std::size_t got = 0;
  };
  void accept() {
    acceptor_.async_accept([this](std::error_code ec, tcp::socket s) {
      if (ec) return;
      auto c = std::make_shared<conn>(std::move(s));
      c->p = plan_for_(accepted_++);
      if (c->p.sends) {
        asio::async_write(c->socket, asio::buffer(payload_),
                          [c](std::error_code, std::size_t) {});  // ends when the relay resets
      }
      read_more(c);
      accept();
    });
  }
  void read_more(const std::shared_ptr<conn>& c) {
    if (!c->p.sends && c->got >= c->p.how.after) return close_socket(c->socket, c->p.how.reset);
    std::size_t want = c->buf.size();
    if (!c->p.sends) want = std::min(want, c->p.how.after - c->got);
    c->socket.async_read_some(asio::buffer(c->buf.data(), want),
                              [this, c](std::error_code ec, std::size_t n) {
                                if (ec) return close_socket(c->socket, true);
                                c->got += n;
                                read_more(c);
                              });
  }

  std::function<plan(std::size_t)> plan_for_;
  asio::io_context io_;
  tcp::acceptor acceptor_;
  std::vector<char> payload_;
  std::thread thread_;
  std::atomic<std::size_t> accepted_{0};
};

constexpr auto side_deadline = 20s;

// Waits (poll(2)) until the socket is readable or writable; false at the
// deadline.
bool ready(tcp::socket& s, short events, std::chrono::steady_clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  if (left.count() <= 0) return false;
  pollfd p{s.native_handle(), events, 0};
  return ::poll(&p, 1, static_cast<int>(left.count())) > 0;
}

tcp::socket connect_non_blocking(asio::io_context& io, const address& relay) {
  tcp::socket s(io);
  s.connect({asio::ip::make_address(relay.address), relay.port});
  s.non_blocking(true);
  return s;
}

// Reads `how.after` bytes (or until the stream ends), then hangs up.
std::size_t read_then_hang_up(const address& relay, hang_up how) {
  asio::io_context io;
  auto s = connect_non_blocking(io, relay);
  const auto deadline = std::chrono::steady_clock::now() + side_deadline;
  std::vector<char> buf(64 << 10);
  std::size_t got = 0;
  while (got < how.after) {
    std::error_code ec;
    got += s.read_some(asio::buffer(buf.data(), std::min(buf.size(), how.after - got)), ec);
    if (ec == asio::error::would_block && ready(s, POLLIN, deadline)) continue;
    if (ec) break;
  }
  EXPECT_LT(std::chrono::steady_clock::now(), deadline) << "a read stalled";
  close_socket(s, how.reset);
  return got;
}

// Sends until the relay passes the upstream's hang-up on (a reset or a
// failed write).
void send_until_refused(const address& relay) {
  asio::io_context io;
  auto s = connect_non_blocking(io, relay);
  const auto deadline = std::chrono::steady_clock::now() + side_deadline;
  auto data = bytes(64 << 10, 3);
  std::error_code ec;
  while (!ec || (ec == asio::error::would_block && ready(s, POLLOUT, deadline))) {
    ec = {};
    s.write_some(asio::buffer(data), ec);
  }
  EXPECT_NE(ec, asio::error::would_block) << "the relay never passed the hang-up on";
  close_socket(s, false);
}

struct storm_result {
  std::vector<std::size_t> client_got;  // per connection, when the client hung up
};

// Runs storm_connections connections through a relay: even ones have the
// client hang up on a downstream stream, odd ones have the upstream hang up
// on an upstream stream; points and kinds drawn from `seed`.
storm_result run_storm(relay& r, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto draw = [&] { return hang_up{static_cast<std::size_t>(rng() % (2u << 20)), rng() % 2 == 0}; };
  std::vector<hang_up> upstream_plan(storm_connections);
  for (auto& h : upstream_plan) h = draw();
  rude_upstream upstream([&](std::size_t n) {
    return rude_upstream::plan{n % 2 == 0, upstream_plan.at(n)};
  });
  EXPECT_TRUE(r.set_upstream(upstream.where()).ok());
  storm_result out;
  out.client_got.resize(storm_connections);
  for (std::size_t i = 0; i < storm_connections; ++i) {
    if (i % 2 == 0) {
      out.client_got[i] = read_then_hang_up(r.listen_endpoint(), draw());
    } else {
      send_until_refused(r.listen_endpoint());
    }
  }
  EXPECT_TRUE(eventually([&] { return r.live_connections() == 0; }, 20s))
      << r.live_connections() << " connections still live";
  EXPECT_EQ(upstream.accepted(), storm_connections);
  return out;
}

// After the storm the relay still relays, and its counters add up.
void expect_still_relaying(relay& r) {
  plain_peer echo(plain_peer::mode::echo);
  ASSERT_TRUE(r.set_upstream(echo.where()).ok());
  client c(r.listen_endpoint());
  auto data = bytes(10000, 9);
  c.send(data);
  EXPECT_EQ(c.read(data.size(), 10s).data, data);
  expect_counters(r, {}, storm_connections + 1);
}

TEST(relay_early_close, the_splice_path_survives_hang_ups_at_random_points_both_ways) {
  plain_peer first_upstream(plain_peer::mode::sink);            // run_storm re-points the relay
  auto r = start_relay(config_to(first_upstream.where(), {}));  // raw, no fault, no tap: splice
  ASSERT_TRUE(r);
  run_storm(*r, 11);
  expect_still_relaying(*r);
}

TEST(relay_early_close, the_user_space_path_survives_them_and_taps_every_close) {
  plain_peer first_upstream(plain_peer::mode::sink);  // run_storm re-points the relay
  auto c = config_to(first_upstream.where(), {});
  c.tap = true;  // a tap takes every byte through the fault chain and the send queue
  auto r = start_relay(c);
  ASSERT_TRUE(r);
  auto storm = run_storm(*r, 12);
  auto records = r->taps().records();
  std::map<std::uint64_t, tap_record> closes;
  std::size_t opens = 0;
  for (const auto& rec : records) {
    if (rec.kind == record_kind::open) ++opens;
    if (rec.kind == record_kind::close) closes[rec.connection] = rec;
  }
  EXPECT_EQ(opens, storm_connections);
  ASSERT_EQ(closes.size(), storm_connections);
  for (std::size_t i = 0; i < storm_connections; ++i) {
    const auto& close = closes.at(i);
    EXPECT_FALSE(close.reason.empty()) << i;
    // What a client read came from the upstream through the relay.
    if (i % 2 == 0) {
      EXPECT_GE(close.bytes_down, storm.client_got[i]) << i;
    }
  }
  expect_still_relaying(*r);
}

}  // namespace
}  // namespace faultlane::relays
