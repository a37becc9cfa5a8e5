// The pipe's closes and the relay's counters (docs/faults.md): a FIN goes
// on one way while the other keeps flowing on every path (splice, write
// through, the fault chain), a dropping direction keeps its socket open,
// a downed upstream closes the client as configured, per-connection
// faults count once per connection, refuse takes its triggers, a removed
// fault keeps its count, a lasting effect holds its slot while it lasts, a
// fired stall holds while other faults change, and a direction that cannot
// splice for want of descriptors copies instead.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <optional>

#include "faultlane/testing/read_within.hpp"
#include "relay_frames.hpp"

namespace faultlane::relays {
namespace {

using namespace testing;

enum class path { splice, write_through, chain };

relay_config config_for(path p, const address& upstream) {
  switch (p) {
    case path::splice: return config_to(upstream, {});
    case path::write_through:
      // Frames are decoded for the down fault; the up direction has none.
      return config_to(upstream, {"drop_frame dir=down opcode=write"}, protocol::faultlane);
    case path::chain: {
      auto c = config_to(upstream, {}, protocol::faultlane);
      c.tap = true;
      return c;
    }
  }
  return {};
}

class relay_half_close : public ::testing::TestWithParam<path> {};

// Rule: a client's FIN goes on to the upstream while the other direction
// stays open: the answer sent after it arrives, then its FIN, and the
// connection ends once both directions did; every byte is counted.
TEST_P(relay_half_close, a_fin_goes_on_while_the_other_direction_flows) {
  const auto answer = bytes(5000, 4);
  responder upstream(responder::until_fin, answer);
  auto r = start_relay(config_for(GetParam(), upstream.where()));
  {
    client c(r->listen_endpoint());
    c.send(bytes(3000, 1));
    c.send_fin();
    auto got = c.read(answer.size() + 1, 10s);
    EXPECT_EQ(got.data, answer);
    EXPECT_EQ(got.end, asio::error::eof);
  }
  EXPECT_TRUE(eventually([&] { return r->live_connections() == 0; }));
  EXPECT_EQ(r->bytes_received(direction::up), 3000u);
  EXPECT_EQ(r->bytes_received(direction::down), answer.size());
}

INSTANTIATE_TEST_SUITE_P(paths, relay_half_close,
                         ::testing::Values(path::splice, path::write_through, path::chain),
                         [](const auto& info) {
                           switch (info.param) {
                             case path::splice: return std::string("splice");
                             case path::write_through: return std::string("write_through");
                             case path::chain: return std::string("chain");
                           }
                           return std::string();
                         });

// Rule: a dropping direction passes nothing on, not the FIN either: a
// black hole keeps the upstream's socket open after the client's FIN.
TEST(relay_pipe_rules, a_black_hole_keeps_the_fin_too) {
  plain_peer sink(plain_peer::mode::sink);
  auto r = start_relay(config_to(sink.where(), {"blackhole dir=up"}));
  client c(r->listen_endpoint());
  c.send(bytes(100));
  c.send_fin();
  ASSERT_TRUE(eventually([&] { return r->bytes_received(direction::up) == 100; }));
  // The absence of a FIN is the rule: give one every chance to arrive.
  EXPECT_FALSE(eventually([&] { return sink.saw_eof(); }, 500ms));
  EXPECT_EQ(sink.received(), 0u);
  expect_counters(*r, {{"blackhole.up", 1}}, 1);
}

// A sink behind a relay whose up direction stalls after 10 bytes (a
// fault added once the relay runs), and a client of the relay.
struct up_stall_at_10 {
  plain_peer sink{plain_peer::mode::sink};
  std::unique_ptr<relay> r = start_relay(config_to(sink.where(), {}));
  fault_id stall = r->add_fault(parse_fault("stall dir=up after_bytes=10").value());
  client c{r->listen_endpoint()};
};

// Rule: bytes that arrive with a FIN behind a stall wait with it; removing
// the stall lets the bytes and then the FIN through.
TEST(relay_pipe_rules, a_stall_holds_the_fin_behind_its_bytes_until_removed) {
  up_stall_at_10 s;
  s.c.send(bytes(100));
  s.c.send_fin();
  ASSERT_TRUE(eventually([&] { return s.sink.received() == 10; }));
  ASSERT_TRUE(s.r->remove_fault(s.stall));
  ASSERT_TRUE(eventually([&] { return s.sink.saw_eof(); }));
  EXPECT_EQ(s.sink.received_bytes(), bytes(100));
  expect_counters(*s.r, {{"stall.up", 1}}, 1);
}

address dead_port() {
  asio::io_context io;
  tcp::acceptor a(io, {asio::ip::make_address("127.0.0.1"), 0});
  return {"127.0.0.1", a.local_endpoint().port()};  // closed when `a` goes
}

// Rule: with on_upstream_failure fin, the stderr line says the client is
// closed (not reset), the client reads a FIN, and exactly one failure is
// counted with nothing else.
TEST(relay_pipe_rules, a_downed_upstream_with_fin_says_closed_and_counts_one_failure) {
  auto c = config_to(dead_port(), {});
  c.on_upstream_failure = close_mode::fin;
  auto r = start_relay(c);
  ::testing::internal::CaptureStderr();
  {
    client cl(r->listen_endpoint());
    EXPECT_EQ(cl.read(1, 10s).end, asio::error::eof);
  }
  ASSERT_TRUE(eventually([&] { return r->live_connections() == 0; }));
  auto log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("; the client is closed\n"), std::string::npos) << log;
  expect_counters(*r, {{"upstream.connect_failures", 1}}, 1);
}

// Rule: log_connect_failures off writes nothing, but the failure still counts.
TEST(relay_pipe_rules, a_quiet_relay_still_counts_a_downed_upstream) {
  auto c = config_to(dead_port(), {});
  c.log_connect_failures = false;
  auto r = start_relay(c);
  ::testing::internal::CaptureStderr();
  {
    client cl(r->listen_endpoint());
    EXPECT_EQ(cl.read(1, 10s).end, asio::error::connection_reset);
  }
  ASSERT_TRUE(eventually([&] { return r->counter("upstream.connect_failures") == 1; }));
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

// Rule: latency counts once per connection it applies to, however many
// chunks it delays; slow_close once per delayed close.
TEST(relay_pipe_rules, per_connection_faults_count_once_per_connection) {
  plain_peer echo(plain_peer::mode::echo);
  auto r =
      start_relay(config_to(echo.where(), {"latency dir=up ms=1", "slow_close dir=down ms=1"}));
  for (int conn = 0; conn < 2; ++conn) {
    client c(r->listen_endpoint());
    for (int round = 0; round < 3; ++round) {  // three chunks, each echoed before the next
      c.send(bytes(10, round));
      ASSERT_EQ(c.read(10, 10s).data, bytes(10, round));
    }
    c.send_fin();
    EXPECT_EQ(c.read(1, 10s).end, asio::error::eof);
  }
  ASSERT_TRUE(eventually([&] { return r->live_connections() == 0; }));
  expect_counters(*r, {{"latency.up", 2}, {"slow_close.down", 2}}, 2);
}

// Rule: refuse takes connection=, rail= and probability= as every fault
// does: only the connection, rail and draw it names are reset.
TEST(relay_pipe_rules, refuse_resets_only_the_connection_its_triggers_name) {
  plain_peer echo(plain_peer::mode::echo);
  auto c = config_to(echo.where(), {"refuse connection=1 name=second", "refuse rail=0 name=rail0",
                                    "refuse probability=0 name=never"});
  c.rail = 1;
  auto r = start_relay(c);
  for (int i = 0; i < 3; ++i) {
    client cl(r->listen_endpoint());
    if (i == 1) {  // no send: the reset may come first and fail it
      EXPECT_EQ(cl.read(1, 10s).end, asio::error::connection_reset);
      continue;
    }
    cl.send(bytes(10));
    EXPECT_EQ(cl.read(10, 10s).data, bytes(10)) << i;
  }
  expect_counters(*r, {{"second", 1}, {"rail0", 0}, {"never", 0}, {"connections.refused", 1}}, 3);
}

// Rule: a removed fault's firings stay in the counters (and one added back
// under the same name adds to them).
TEST(relay_pipe_rules, a_removed_fault_keeps_its_count) {
  plain_peer echo(plain_peer::mode::echo);
  auto r = start_relay(config_to(echo.where(), {}));
  for (int i = 0; i < 2; ++i) {
    auto id = r->add_fault(parse_fault("latency dir=up ms=1").value());
    client c(r->listen_endpoint());
    c.send(bytes(10));
    ASSERT_EQ(c.read(10, 10s).data, bytes(10));
    ASSERT_TRUE(r->remove_fault(id));
  }
  expect_counters(*r, {{"latency.up", 2}}, 2);
}

// Rule: corrupt flips the mask in the low-order byte of the named header field.
TEST(relay_pipe_rules, corrupt_flips_the_low_order_byte_of_its_field) {
  plain_peer sink(plain_peer::mode::sink);
  auto r = start_relay(
      config_to(sink.where(), {"corrupt dir=up field=request_id mask=0x06"}, protocol::faultlane));
  const auto sent = request(wire::opcode::read, 0x0102);
  client c(r->listen_endpoint());
  c.send(sent);
  c.send_fin();
  ASSERT_TRUE(eventually([&] { return sink.saw_eof(); }));
  auto field = wire::find_request_field("request_id");
  ASSERT_TRUE(field);
  auto expected = sent;
  expected[field->offset + field->size - 1] ^= 0x06;
  EXPECT_EQ(sink.received_bytes(), expected);
  expect_counters(*r, {{"corrupt.up", 1}}, 1);
}

// Rule: a stall that fired holds one active-fault slot until it is removed.
TEST(relay_pipe_rules, a_fired_stall_holds_a_slot_until_removed) {
  up_stall_at_10 s;
  s.c.send(bytes(100));
  ASSERT_TRUE(eventually([&] { return s.sink.received() == 10; }));
  EXPECT_EQ(s.r->active_faults(), 1u);
  ASSERT_TRUE(s.r->remove_fault(s.stall));
  ASSERT_TRUE(eventually([&] { return s.sink.received() == 100; }));
  EXPECT_TRUE(eventually([&] { return s.r->active_faults() == 0; }));
  EXPECT_EQ(s.r->active_faults_peak(), 1u);
}

// Rule: a fault replaced by one that no longer applies to a live connection
// gives back the slot it held there, as a removed one does (and what it held
// goes on).
TEST(relay_pipe_rules, a_fault_replaced_out_of_a_connection_gives_its_slot_back) {
  up_stall_at_10 s;
  s.c.send(bytes(100));
  ASSERT_TRUE(eventually([&] { return s.sink.received() == 10; }));
  ASSERT_EQ(s.r->active_faults(), 1u);
  ASSERT_TRUE(s.r->replace_fault(s.stall, parse_fault("stall dir=down after_bytes=10").value()));
  EXPECT_TRUE(eventually([&] { return s.sink.received() == 100; }));
  EXPECT_TRUE(eventually([&] { return s.r->active_faults() == 0; }))
      << s.r->active_faults() << " slot(s) still held";
  EXPECT_EQ(s.r->active_faults_peak(), 1u);
}

// Rule: a stall that fired holds its stream until it is itself removed:
// adding or removing another fault (each change rechecks every live
// connection) releases nothing.
TEST(relay_pipe_rules, a_fired_stall_holds_while_other_faults_change) {
  up_stall_at_10 s;
  s.c.send(bytes(100));
  ASSERT_TRUE(eventually([&] { return s.sink.received() == 10; }));
  auto other = s.r->add_fault(parse_fault("latency dir=down ms=1").value());
  ASSERT_TRUE(s.r->remove_fault(other));
  EXPECT_FALSE(eventually([&] { return s.sink.received() > 10; }, 300ms));
  ASSERT_TRUE(s.r->remove_fault(s.stall));
  EXPECT_TRUE(eventually([&] { return s.sink.received() == 100; }));
  EXPECT_EQ(s.sink.received_bytes(), bytes(100));
}

// Lowers RLIMIT_NOFILE, while it lives, so that exactly `left`
// descriptors can still be opened (the lowest free ones).
class descriptors_left {
 public:
  explicit descriptors_left(int left) {
    ::getrlimit(RLIMIT_NOFILE, &saved_);
    std::vector<int> lowest;
    for (int i = 0; i < left; ++i) lowest.push_back(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    for (int fd : lowest) ::close(fd);
    rlimit low = saved_;
    low.rlim_cur = static_cast<rlim_t>(lowest.back() + 1);
    lowered_ = lowest.front() >= 0 && ::setrlimit(RLIMIT_NOFILE, &low) == 0;
  }
  ~descriptors_left() { ::setrlimit(RLIMIT_NOFILE, &saved_); }
  descriptors_left(const descriptors_left&) = delete;
  descriptors_left& operator=(const descriptors_left&) = delete;
  bool lowered() const { return lowered_; }

 private:
  rlimit saved_{};
  bool lowered_ = false;
};

// 100 bytes from the client to `upstream` (read there) and back.
void expect_round_trip(client& c, tcp::socket& upstream, int salt) {
  const auto data = bytes(100, salt);
  c.send(data);
  std::vector<char> got(data.size());
  ASSERT_FALSE(faultlane::testing::read_within(upstream, asio::buffer(got))) << salt;
  EXPECT_EQ(got, data);
  asio::write(upstream, asio::buffer(got));
  EXPECT_EQ(c.read(data.size(), 10s).data, data) << salt;
}

// A relay (raw, no fault, no tap: it would splice) in front of a listener
// the test accepts from, and one connection through it. With
// `descriptors` set, only that many descriptors are left while the
// connection is made and carries its first round trip.
void expect_relayed_both_ways(std::optional<int> descriptors) {
  asio::io_context io;
  tcp::acceptor listener(io, {asio::ip::make_address("127.0.0.1"), 0});
  auto r = start_relay(config_to({"127.0.0.1", listener.local_endpoint().port()}, {}));
  client c;  // its descriptor before the limit drops
  tcp::socket upstream(io);
  {
    std::optional<descriptors_left> low;
    if (descriptors) low.emplace(*descriptors);
    ASSERT_TRUE(!low || low->lowered());
    c.connect(r->listen_endpoint());
    // The relay's own accept(2) and pipe2(2) may hold the last descriptor
    // for a moment (EMFILE here): try again.
    ASSERT_TRUE(
        eventually([&] { return !faultlane::testing::accept_within(listener, upstream, 1s); }));
    expect_round_trip(c, upstream, 1);
  }
  expect_round_trip(c, upstream, 2);  // descriptors back: it goes on
  // Not expect_counters: with no descriptor left the listener's next
  // accept(2) fails (it takes its descriptor before it looks for a
  // connection) and counts accept.errors.
  EXPECT_EQ(r->counter("connections.accepted"), 1u);
  EXPECT_EQ(r->live_connections(), 1u);
}

// Rule: a direction that cannot make its splice(2) pipe (no descriptor
// left) copies instead: every byte still goes both ways, and once
// descriptors are back the bytes go on.
TEST(relay_pipe_rules, without_a_descriptor_for_the_splice_pipe_the_bytes_are_copied) {
  // UBSan's first look at a type probes memory through a pipe, which the
  // window below could not open: every path it meets is met once before
  // (the splice path here, the copying one through a decoding relay).
  {
    plain_peer echo(plain_peer::mode::echo);
    auto copying = start_relay(config_for(path::write_through, echo.where()));
    client c(copying->listen_endpoint());
    c.send(bytes(100));
    ASSERT_EQ(c.read(100, 10s).data, bytes(100));
  }
  expect_relayed_both_ways(std::nullopt);
  // The relay's accepted socket, its upstream socket and the test's
  // accepted one: nothing is left for a pipe's two descriptors.
  expect_relayed_both_ways(3);
}

}  // namespace
}  // namespace faultlane::relays
