// Each fault against a plain TCP peer: its observable effect and its exact
// counter, zeros included for everything that did not fire.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "faultlane/core/frame.hpp"
#include "faultlane/relays/fault.hpp"
#include "faultlane/relays/limits.hpp"
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
  auto r = start_relay(
      config_to(echo.where(), {"latency dir=up ms=60", "reset dir=down after_bytes=999999999"}));
  client c(r->listen_endpoint());
  auto start = std::chrono::steady_clock::now();
  c.send(bytes(100));
  auto back = c.read(100, 10s);
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(back.data, bytes(100));
  EXPECT_GE(took, 60ms);
  expect_counters(*r, {{"latency.up", 1}, {"reset.down", 0}}, 1);
}

// The writes the relay made, in order (the tap records each one).
std::vector<tap_record> writes_of(relay& r) {
  std::vector<tap_record> out;
  for (auto& w : r.taps().records()) {
    if (w.kind == record_kind::write) out.push_back(std::move(w));
  }
  return out;
}

TEST(relay, bandwidth_paces_the_direction_at_the_rate) {
  constexpr std::uint64_t rate = 2'000'000;
  constexpr std::uint64_t total = 3 * rate;
  constexpr std::uint64_t piece_max = rate / 200;  // 1/200 s of the budget
  plain_peer source(plain_peer::mode::source, total);
  auto c = config_to(source.where(), {"bandwidth dir=down bytes_per_s=2000000"});
  c.tap = true;
  auto r = start_relay(c);
  client cl(r->listen_endpoint());
  auto start = std::chrono::steady_clock::now();
  auto got = cl.read(total, 60s);
  auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_EQ(got.data.size(), total);
  // What the relay did: the stream in order, in pieces of at most
  // piece_max, each due no sooner than the one before it plus that one's
  // size at the rate, and none written before it was due.
  auto writes = writes_of(*r);
  ASSERT_FALSE(writes.empty());
  std::uint64_t offset = 0;
  for (std::size_t i = 0; i < writes.size(); ++i) {
    const auto& w = writes[i];
    ASSERT_EQ(w.stream_offset, offset) << i;
    ASSERT_LE(w.length, piece_max) << i;
    ASSERT_GE(w.time_us, w.due_us) << i;
    if (i > 0) {
      const auto& before = writes[i - 1];
      // + 1: both times are truncated to microseconds
      ASSERT_GE(w.due_us + 1, before.due_us + before.length * 1'000'000 / rate) << i;
    }
    offset += w.length;
  }
  EXPECT_EQ(offset, total);
  // The relay read ahead, so its schedule ran at the rate, not slower.
  const std::uint64_t ideal_us = (total - writes.back().length) * 1'000'000 / rate;
  EXPECT_LE(writes.back().due_us - writes.front().due_us, ideal_us * 115 / 100);
  // And so no reader, however fast, could have had the bytes sooner.
  EXPECT_GE(elapsed + 1ms, std::chrono::microseconds(ideal_us));
  expect_counters(*r, {{"bandwidth.down", 1}}, 1);
}

TEST(relay, slicer_fragments_into_small_writes) {
  plain_peer source(plain_peer::mode::source, 2000);
  auto c = config_to(source.where(), {"slicer dir=down size=100 variation=20 delay_us=3000"});
  c.tap = true;  // records every write the relay makes
  auto r = start_relay(c);
  client cl(r->listen_endpoint());
  auto got = cl.read(2000, 10s);
  ASSERT_EQ(got.data.size(), 2000u);
  EXPECT_EQ(got.data, [] {
    std::vector<char> v(2000);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<char>(i * 131 + 7);
    return v;
  }());
  // What the relay wrote, not what a reader happened to see at once: the
  // stream in order, in writes of at most size + variation bytes, so at
  // least 2000 / 120 of them (a write shorter than 80 ends a read).
  std::uint64_t offset = 0;
  auto writes = writes_of(*r);
  for (const auto& w : writes) {
    EXPECT_EQ(w.dir, direction::down);
    EXPECT_EQ(w.stream_offset, offset);
    EXPECT_GE(w.length, 1u);
    EXPECT_LE(w.length, 120u);
    offset += w.length;
  }
  EXPECT_EQ(offset, 2000u);
  EXPECT_GE(writes.size(), (2000u + 119) / 120);
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
  auto first = c.read(500, 10s);
  EXPECT_EQ(first.data.size(), 500u);
  EXPECT_EQ(r->counter("stall.down"), 1u);  // it fired before byte 500 went out
  auto held = c.read(1, 200ms);
  EXPECT_EQ(held.data.size(), 0u);
  EXPECT_EQ(held.end, asio::error::would_block);  // held, socket still open
  ASSERT_TRUE(r->remove_fault(stall));
  auto rest = c.read(4500, 10s);
  EXPECT_EQ(rest.data.size(), 4500u);
  expect_counters(*r, {{"stall.down", 1}}, 1);
}

// reset_connections drops what a stall holds: the client sees a reset, the
// held bytes never arrive, and the relay goes on accepting.
TEST(relay, reset_connections_drops_held_bytes_and_keeps_accepting) {
  plain_peer source(plain_peer::mode::source, 5000);
  auto r = start_relay(config_to(source.where(), {}));
  auto stall = r->add_fault(parse_fault("stall dir=down after_bytes=500").value());
  client c(r->listen_endpoint());
  EXPECT_EQ(c.read(500, 10s).data.size(), 500u);
  ASSERT_TRUE(r->reset_connections(10s));
  ASSERT_TRUE(r->remove_fault(stall));
  auto rest = c.read(4500, 10s);
  EXPECT_EQ(rest.data.size(), 0u);
  EXPECT_EQ(rest.end, asio::error::connection_reset);
  client again(r->listen_endpoint());
  EXPECT_EQ(again.read(5000, 10s).data.size(), 5000u);  // a new connection, unharmed
}

TEST(relay, blackhole_swallows_and_keeps_the_connection) {
  plain_peer sink(plain_peer::mode::sink);
  auto r = start_relay(config_to(sink.where(), {"blackhole dir=up"}));
  client c(r->listen_endpoint());
  c.send(bytes(10000));
  ASSERT_TRUE(eventually([&] { return r->counter("blackhole.up") == 1; }));
  auto got = c.read(1, 200ms);
  EXPECT_EQ(got.end, asio::error::would_block);  // not closed
  EXPECT_EQ(sink.received(), 0u);                // it fired at byte 0: nothing went on
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
  EXPECT_EQ(r->active_faults_peak(), 1u);  // the overflowing attempt never counted as held
}

TEST(relay, set_upstream_sends_new_connections_to_the_new_upstream_only) {
  plain_peer first(plain_peer::mode::echo);
  plain_peer second(plain_peer::mode::echo);
  auto r = start_relay(config_to(first.where(), {}));
  client before(r->listen_endpoint());
  before.send(bytes(100));
  ASSERT_EQ(before.read(100, 10s).data.size(), 100u);

  ASSERT_TRUE(r->set_upstream(second.where()).ok());
  EXPECT_EQ(r->upstream(), second.where());
  EXPECT_EQ(r->config().upstream, first.where());  // the start configuration stays
  client after(r->listen_endpoint());
  after.send(bytes(200));
  ASSERT_EQ(after.read(200, 10s).data.size(), 200u);
  before.send(bytes(10));  // the old connection keeps its upstream
  ASSERT_EQ(before.read(10, 10s).data.size(), 10u);
  EXPECT_EQ(first.connections(), 1u);
  EXPECT_EQ(second.connections(), 1u);

  auto remote = r->set_upstream({"10.1.2.3", 80});
  ASSERT_FALSE(remote.ok());
  EXPECT_NE(remote.error().message.find("not a loopback address"), std::string::npos);
  EXPECT_FALSE(r->set_upstream({"127.0.0.1", 0}).ok());
  EXPECT_EQ(r->upstream(), second.where());  // a refused change changes nothing
}

TEST(relay, only_loopback_unless_allowed) {
  relay_config c;
  c.upstream = {"10.1.2.3", 80};
  auto r = relay::start(c);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("not a loopback address"), std::string::npos);
}

TEST(relay_fault_parsing, every_problem_is_named) {
  struct bad_case {
    const char* text;
    const char* names;
  };
  for (const auto& b :
       {bad_case{"", "empty"}, bad_case{"teleport dir=up", "unknown fault type"},
        bad_case{"latency ms=5", "needs dir"}, bad_case{"latency dir=sideways ms=5", "dir must be"},
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
        bad_case{"reset dir=up after_bytes", "key=value"},
        bad_case{"corrupt dir=up field=payload mask=0", "mask=0 is not a byte"},
        bad_case{"corrupt dir=up field=flags payload_byte=3", "needs field=payload"}}) {
    auto f = parse_fault(b.text);
    ASSERT_FALSE(f.ok()) << b.text;
    EXPECT_NE(f.error().message.find(b.names), std::string::npos)
        << b.text << " -> " << f.error().message;
  }
  auto ok = parse_fault("stall dir=up frame=3 header_byte=7 name=hold");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->name, "hold");
  EXPECT_EQ(*ok->when.frame, 3u);
  EXPECT_EQ(*ok->when.header_byte, 7u);
}

TEST(relay_fault_parsing, corrupt_payload_byte_is_bounded) {
  auto at = parse_fault(
      fmt::format("corrupt dir=up field=payload payload_byte={}", corrupt_payload_byte_max));
  ASSERT_TRUE(at.ok()) << at.error().message;
  EXPECT_EQ(at->payload_byte, corrupt_payload_byte_max);
  auto past = parse_fault(
      fmt::format("corrupt dir=up field=payload payload_byte={}", corrupt_payload_byte_max + 1));
  ASSERT_FALSE(past.ok());
  EXPECT_NE(past.error().message.find(fmt::format("payload_byte={} is past the last byte of the "
                                                  "longest payload ({})",
                                                  corrupt_payload_byte_max + 1,
                                                  corrupt_payload_byte_max)),
            std::string::npos)
      << past.error().message;
}

TEST(relay, start_holds_a_spec_built_in_code_to_the_payload_byte_bound) {
  plain_peer sink(plain_peer::mode::sink);
  auto c = config_to(sink.where(), {}, protocol::faultlane);
  fault_spec f;
  f.kind = fault_kind::corrupt;
  f.field = "payload";
  f.name = "corrupt.up";
  f.payload_byte = corrupt_payload_byte_max;
  c.faults = {f};
  EXPECT_TRUE(relay::start(c).ok());
  c.faults[0].payload_byte = corrupt_payload_byte_max + 1;
  auto refused = relay::start(c);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("is past the last byte"), std::string::npos)
      << refused.error().message;
}

TEST(relay_fault_parsing, corrupt_mask_is_a_byte_in_hex_or_decimal) {
  struct mask_case {
    const char* text;
    std::uint8_t mask;
  };
  for (const auto& m : {mask_case{"0x06", 0x06}, mask_case{"0X06", 0x06}, mask_case{"6", 6},
                        mask_case{"0xff", 0xff}, mask_case{"0xFF", 0xff}, mask_case{"255", 255},
                        mask_case{"0x1", 1}}) {
    auto f = parse_fault(std::string("corrupt dir=up field=flags mask=") + m.text);
    ASSERT_TRUE(f.ok()) << m.text << ": " << f.error().message;
    EXPECT_EQ(f->mask, m.mask) << m.text;
  }
  for (const char* text :
       // "06": decimal with a leading zero, which no number of any file takes
       // (docs/faults.md); hex is written 0x06.
       {"0", "0x0", "0x00", "256", "0x100", "0x", "0xg1", "-1", "6x", "0x-1", "1.5", "", "06",
        "+6"}) {
    auto f = parse_fault(std::string("corrupt dir=up field=flags mask=") + text);
    ASSERT_FALSE(f.ok()) << text;
    EXPECT_NE(f.error().message.find("is not a byte with a bit set (0x01 to 0xff, or 1 to 255)"),
              std::string::npos)
        << text << " -> " << f.error().message;
  }
  auto yaml = parse_fault(YAML::Load("{type: corrupt, dir: up, field: payload, mask: 0x06}"));
  ASSERT_TRUE(yaml.ok()) << yaml.error().message;
  EXPECT_EQ(yaml->mask, 0x06);
  EXPECT_EQ(describe(yaml.value()), "corrupt dir=up field=payload payload_byte=0 mask=0x06");
}

TEST(relay, corrupt_flips_payload_bytes_with_a_hex_mask) {
  plain_peer sink(plain_peer::mode::sink);
  constexpr std::size_t payload = 4096;
  auto r = start_relay(
      config_to(sink.where(),
                {"corrupt dir=up field=payload payload_byte=0 mask=0x06 name=first",
                 "corrupt dir=up field=payload payload_byte=4095 mask=0xff name=last",
                 "corrupt dir=up field=payload payload_byte=4096 mask=0x01 name=past_the_payload"},
                protocol::faultlane));
  auto header = wire::encode(wire::request_frame{wire::opcode::write, 0, 1, 7, 0, payload});
  auto sent = std::vector<char>(reinterpret_cast<const char*>(header.data()),
                                reinterpret_cast<const char*>(header.data()) + header.size());
  auto body = bytes(payload, 3);
  sent.insert(sent.end(), body.begin(), body.end());
  client c(r->listen_endpoint());
  c.send(sent);
  ASSERT_TRUE(eventually([&] { return sink.received() == sent.size(); }));
  auto expected = sent;
  expected[wire::request_frame_bytes] ^= 0x06;
  expected[wire::request_frame_bytes + payload - 1] ^= static_cast<char>(0xff);
  EXPECT_EQ(sink.received_bytes(), expected);
  // Each fault fired on the frame; the one past its payload changed nothing.
  expect_counters(*r, {{"first", 1}, {"last", 1}, {"past_the_payload", 1}}, 1);
}

}  // namespace
}  // namespace faultlane::relays
