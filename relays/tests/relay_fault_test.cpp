// Each fault against a plain TCP peer: its observable effect and its exact
// counter, zeros included for everything that did not fire.
#include <gtest/gtest.h>

#include "faultlane/relays/fault.hpp"
#include "relay_fixture.hpp"

namespace faultlane::relays {
namespace {

using namespace testing;

TEST(relay, passes_bytes_through_untouched) {
  plain_peer echo(plain_peer::mode::echo);
  auto r = start_relay(config_to(echo.where(), {}));
  client c(r->listen_endpoint());
  auto data = bytes(3u << 20);
  c.send(data);
  auto back = c.read(data.size(), 10s);
  EXPECT_EQ(back.data, data);
  expect_counters(*r, {}, 1);
}

TEST(relay, latency_delays_each_chunk_by_at_least_ms) {
  plain_peer echo(plain_peer::mode::echo);
  auto r = start_relay(config_to(echo.where(), {"latency dir=up ms=60", "reset dir=down after_bytes=999999999"}));
  client c(r->listen_endpoint());
  auto start = std::chrono::steady_clock::now();
  c.send(bytes(100));
  auto back = c.read(100, 10s);
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(back.data, bytes(100));
  EXPECT_GE(took, 60ms);
  expect_counters(*r, {{"latency.up", 1}, {"reset.down", 0}}, 1);
}

TEST(relay, bandwidth_caps_the_rate_within_15_percent) {
  constexpr std::uint64_t rate = 2'000'000;
  plain_peer source(plain_peer::mode::source, 3 * rate);
  auto r = start_relay(config_to(source.where(), {"bandwidth dir=down bytes_per_s=2000000"}));
  client c(r->listen_endpoint());
  auto start = std::chrono::steady_clock::now();
  auto got = c.read(3 * rate, 30s);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(got.data.size(), 3 * rate);
  double measured = static_cast<double>(got.data.size()) / seconds;
  EXPECT_GT(measured, rate * 0.85) << measured;
  EXPECT_LT(measured, rate * 1.15) << measured;
  expect_counters(*r, {{"bandwidth.down", 1}}, 1);
}

TEST(relay, slicer_fragments_into_small_writes) {
  plain_peer source(plain_peer::mode::source, 2000);
  auto r = start_relay(config_to(source.where(), {"slicer dir=down size=100 variation=20 delay_us=3000"}));
  client c(r->listen_endpoint());
  auto got = c.read(2000, 10s);
  ASSERT_EQ(got.data.size(), 2000u);
  EXPECT_EQ(got.data, [] {
    std::vector<char> v(2000);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<char>(i * 131 + 7);
    return v;
  }());
  // Pieces of 80..120 bytes, 3 ms apart: a reader sees them one by one
  // (rarely two at once), never the whole burst.
  EXPECT_GE(got.chunks.size(), 9u);
  for (auto n : got.chunks) EXPECT_LE(n, 240u);
  expect_counters(*r, {{"slicer.down", 1}}, 1);
}

TEST(relay, truncate_forwards_exactly_n_bytes_then_fin) {
  plain_peer source(plain_peer::mode::source, 5000);
  auto r = start_relay(config_to(source.where(), {"truncate dir=down bytes=1000"}));
  client c(r->listen_endpoint());
  auto got = c.read(5000, 10s);
  EXPECT_EQ(got.data.size(), 1000u);
  EXPECT_EQ(got.end, asio::error::eof);
  expect_counters(*r, {{"truncate.down", 1}}, 1);
}

TEST(relay, reset_aborts_with_rst_at_the_trigger) {
  plain_peer source(plain_peer::mode::source, 5000);
  auto r = start_relay(config_to(source.where(), {"reset dir=down after_bytes=1000"}));
  client c(r->listen_endpoint());
  auto got = c.read(5000, 10s);
  EXPECT_LE(got.data.size(), 1000u);
  EXPECT_EQ(got.end, asio::error::connection_reset);
  expect_counters(*r, {{"reset.down", 1}}, 1);
}

TEST(relay, stall_holds_and_releases_when_removed) {
  plain_peer source(plain_peer::mode::source, 5000);
  auto c0 = config_to(source.where(), {});
  auto r = start_relay(c0);
  auto stall = r->add_fault(parse_fault("stall dir=down after_bytes=500").value());
  client c(r->listen_endpoint());
  auto first = c.read(5000, 300ms);
  EXPECT_EQ(first.data.size(), 500u);
  EXPECT_EQ(first.end, asio::error::would_block);  // held, socket still open
  EXPECT_EQ(r->counter("stall.down"), 1u);
  ASSERT_TRUE(r->remove_fault(stall));
  auto rest = c.read(4500, 10s);
  EXPECT_EQ(rest.data.size(), 4500u);
  expect_counters(*r, {{"stall.down", 1}}, 1);
}

TEST(relay, blackhole_swallows_and_keeps_the_connection) {
  plain_peer sink(plain_peer::mode::sink);
  auto r = start_relay(config_to(sink.where(), {"blackhole dir=up"}));
  client c(r->listen_endpoint());
  c.send(bytes(10000));
  auto got = c.read(1, 200ms);
  EXPECT_EQ(got.end, asio::error::would_block);  // not closed
  EXPECT_EQ(sink.received(), 0u);
  expect_counters(*r, {{"blackhole.up", 1}}, 1);
}

TEST(relay, refuse_resets_new_connections) {
  plain_peer echo(plain_peer::mode::echo);
  auto r = start_relay(config_to(echo.where(), {"refuse count=1"}));
  {
    client c(r->listen_endpoint());
    auto got = c.read(1, 5s);
    EXPECT_EQ(got.end, asio::error::connection_reset);
  }
  client second(r->listen_endpoint());  // count=1: the next one goes through
  second.send(bytes(10));
  EXPECT_EQ(second.read(10, 10s).data, bytes(10));
  expect_counters(*r, {{"refuse", 1}, {"connections.refused", 1}}, 2);
  EXPECT_EQ(echo.connections(), 1u);
}

TEST(relay, half_close_fins_one_direction_and_keeps_the_other) {
  plain_peer echo(plain_peer::mode::echo);
  auto r = start_relay(config_to(echo.where(), {"half_close dir=up after_bytes=10"}));
  client c(r->listen_endpoint());
  c.send(bytes(10));
  auto back = c.read(10, 10s);  // the 10 bytes before the trigger still echo back
  EXPECT_EQ(back.data, bytes(10));
  ASSERT_TRUE(eventually([&] { return echo.saw_eof(); }));
  expect_counters(*r, {{"half_close.up", 1}}, 1);
}

TEST(relay, slow_close_holds_the_fin) {
  plain_peer source(plain_peer::mode::source, 100);
  auto r = start_relay(config_to(source.where(), {"slow_close dir=down ms=250"}));
  client c(r->listen_endpoint());
  auto start = std::chrono::steady_clock::now();
  auto got = c.read(100, 10s);
  EXPECT_EQ(got.data.size(), 100u);
  auto eof = c.read(1, 10s);
  EXPECT_EQ(eof.end, asio::error::eof);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 250ms);
  expect_counters(*r, {{"slow_close.down", 1}}, 1);
}

TEST(relay, lasting_faults_over_the_cap_are_skipped_and_counted) {
  plain_peer echo(plain_peer::mode::echo);
  auto c = config_to(echo.where(), {"latency dir=up ms=1"});
  c.active_faults_max = 1;
  auto r = start_relay(c);
  client first(r->listen_endpoint());
  first.send(bytes(10));
  EXPECT_EQ(first.read(10, 10s).data, bytes(10));  // holds the one slot while open
  client second(r->listen_endpoint());
  second.send(bytes(10));
  EXPECT_EQ(second.read(10, 10s).data, bytes(10));  // relayed, without the fault
  expect_counters(*r, {{"latency.up", 1}, {"faults.overflow", 1}}, 2);
}

TEST(relay, only_loopback_unless_allowed) {
  relay_config c;
  c.upstream = {"10.1.2.3", 80};
  auto r = relay::start(c);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("not a loopback address"), std::string::npos);
}

TEST(fault_parsing, every_problem_is_named) {
  struct bad_case {
    const char* text;
    const char* names;
  };
  for (const auto& b : {bad_case{"", "empty"}, bad_case{"teleport dir=up", "unknown fault type"},
                        bad_case{"latency ms=5", "needs dir"},
                        bad_case{"latency dir=sideways ms=5", "dir must be"},
                        bad_case{"latency dir=up", "needs ms"},
                        bad_case{"latency dir=up ms=five", "not a non-negative integer"},
                        bad_case{"bandwidth dir=up", "bytes_per_s"},
                        bad_case{"slicer dir=up size=10 variation=10", "variation"},
                        bad_case{"stall dir=up header_byte=3", "header_byte needs frame"},
                        bad_case{"corrupt dir=up", "field"},
                        bad_case{"corrupt dir=down field=registration_id", "no field"},
                        bad_case{"drop_frame dir=down opcode=erase", "opcode"},
                        bad_case{"reset dir=up probability=2", "probability"},
                        bad_case{"reset dir=up colour=red", "unknown key"},
                        bad_case{"reset dir=up after_bytes", "key=value"}}) {
    auto f = parse_fault(b.text);
    ASSERT_FALSE(f.ok()) << b.text;
    EXPECT_NE(f.error().message.find(b.names), std::string::npos) << b.text << " -> " << f.error().message;
  }
  auto ok = parse_fault("stall dir=up frame=3 header_byte=7 name=hold");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->name, "hold");
  EXPECT_EQ(*ok->when.frame, 3u);
  EXPECT_EQ(*ok->when.header_byte, 7u);
}

}  // namespace
}  // namespace faultlane::relays
