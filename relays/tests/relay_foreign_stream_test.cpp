// What the relay does with streams and peers that are not what it expects:
// bytes that are not faultlane frames pass through untouched (counted and
// tapped as decode errors, never held), an upstream that is down is counted,
// logged once per burst and tapped, and every close record says how many
// bytes went each way, for how long, and why it ended.
#include <gtest/gtest.h>

#include <cstring>

#include "faultlane/core/frame.hpp"
#include "faultlane/relays/config.hpp"
#include "relay_fixture.hpp"

namespace faultlane::relays {
namespace {

using namespace testing;

std::vector<char> text(const char* s) { return std::vector<char>(s, s + std::strlen(s)); }

std::vector<char> request_header(std::uint64_t id) {
  wire::request_frame f;
  f.op = wire::opcode::read;
  f.request_id = id;
  f.registration_id = 1;
  f.length = 8;
  auto h = wire::encode(f);
  std::vector<char> out(h.size());
  std::memcpy(out.data(), h.data(), h.size());
  return out;
}

std::vector<tap_record> of_kind(relay& r, record_kind k) {
  std::vector<tap_record> out;
  for (auto& rec : r.taps().records()) {
    if (rec.kind == k) out.push_back(rec);
  }
  return out;
}

std::unique_ptr<relay> tapped_relay(const address& upstream, std::vector<std::string> faults = {}) {
  auto c = config_to(upstream, std::move(faults), protocol::faultlane);
  c.tap = true;
  return start_relay(c);
}

// A redis PING is 14 bytes: far short of a 48-byte header. The decoder sees
// it cannot be one at its first byte, in both directions, and the answer
// arrives.
TEST(relay_foreign_stream, a_short_request_response_passes_a_tapped_relay_at_once) {
  plain_peer echo(plain_peer::mode::echo);
  auto r = tapped_relay(echo.where());
  ASSERT_TRUE(r);
  client c(r->listen_endpoint());
  auto ping = text("*1\r\n$4\r\nPING\r\n");
  c.send(ping);
  EXPECT_EQ(c.read(ping.size(), 10s).data, ping);
  EXPECT_EQ(r->counter("frames.decode_errors"), 2u);
  auto errors = of_kind(*r, record_kind::decode_error);
  ASSERT_EQ(errors.size(), 2u);
  for (const auto& e : errors) {
    EXPECT_NE(e.fault.find("bad_magic (byte 0 of the header)"), std::string::npos) << e.fault;
  }
}

// A valid request header, then bytes that are not a second one. Upstream:
// frame 1 fails at its byte 0. Downstream, the echoed request is not a
// response: "FLR" matches a response's magic, 'Q' does not.
TEST(relay_foreign_stream, a_bad_header_after_a_good_one_passes_the_rest_untouched) {
  plain_peer echo(plain_peer::mode::echo);
  auto r = tapped_relay(echo.where());
  ASSERT_TRUE(r);
  client c(r->listen_endpoint());
  auto data = request_header(7);
  auto tail = text("hello, not a header");
  data.insert(data.end(), tail.begin(), tail.end());
  c.send(data);
  EXPECT_EQ(c.read(data.size(), 10s).data, data);
  auto errors = of_kind(*r, record_kind::decode_error);
  ASSERT_EQ(errors.size(), 2u);
  std::map<direction, std::string> by_dir;
  for (const auto& e : errors) by_dir[e.dir] = e.fault;
  EXPECT_NE(by_dir[direction::up].find("request 1 at byte 48: bad_magic (byte 0"),
            std::string::npos)
      << by_dir[direction::up];
  EXPECT_NE(by_dir[direction::down].find("response 0 at byte 0: bad_magic (byte 3"),
            std::string::npos)
      << by_dir[direction::down];
  EXPECT_EQ(r->taps().frames().size(), 1u);  // the one good request
}

// Bytes that could still begin a header are held until the stream ends;
// then they go on, before the FIN.
TEST(relay_foreign_stream, a_stream_ending_inside_a_header_hands_its_bytes_over_before_the_fin) {
  plain_peer echo(plain_peer::mode::echo);
  auto r = tapped_relay(echo.where());
  ASSERT_TRUE(r);
  client c(r->listen_endpoint());
  auto data = text("FLR");  // a prefix of both magics
  c.send(data);
  c.send_fin();
  auto got = c.read(data.size() + 1, 10s);
  EXPECT_EQ(got.data, data);
  EXPECT_EQ(got.end, asio::error::eof);
  auto errors = of_kind(*r, record_kind::decode_error);
  ASSERT_EQ(errors.size(), 2u);
  for (const auto& e : errors) {
    EXPECT_NE(e.fault.find("ended 3 bytes into its header"), std::string::npos) << e.fault;
  }
}

// A header split across reads, with the chain changing from pass-through
// to faulted between the parts (and back): its bytes leave once each.
TEST(relay_foreign_stream, a_header_split_across_a_fault_change_leaves_once) {
  for (bool fault_first : {false, true}) {
    SCOPED_TRACE(fault_first ? "faulted, then pass-through" : "pass-through, then faulted");
    plain_peer sink(plain_peer::mode::sink);
    // Decoding is on (a frame-aware fault exists) but nothing applies.
    auto c = config_to(sink.where(), {"drop_frame dir=up connection=99"}, protocol::faultlane);
    auto r = start_relay(c);
    ASSERT_TRUE(r);
    auto latency = parse_fault("latency dir=up ms=1").value();
    std::optional<fault_id> added;
    if (fault_first) added = r->add_fault(latency);
    client cl(r->listen_endpoint());
    // A whole header, then 20 bytes of the next, in one write: once the
    // first reached the sink, the relay has read the 20.
    auto first = request_header(2);
    auto header = request_header(3);
    auto part = first;
    part.insert(part.end(), header.begin(), header.begin() + 20);
    cl.send(part);
    const std::size_t seen = fault_first ? first.size() : part.size();
    ASSERT_TRUE(eventually([&] { return sink.received() == seen; }));
    if (fault_first) {
      ASSERT_TRUE(r->remove_fault(*added));  // the 20 bytes are held for their header
    } else {
      r->add_fault(latency);  // the 20 bytes already left
    }
    cl.send(std::vector<char>(header.begin() + 20, header.end()));
    cl.send_fin();
    ASSERT_TRUE(eventually([&] { return sink.saw_eof(); }));
    auto expected = first;
    expected.insert(expected.end(), header.begin(), header.end());
    EXPECT_EQ(sink.received_bytes(), expected);
  }
}

address dead_port() {
  asio::io_context io;
  tcp::acceptor a(io, {asio::ip::make_address("127.0.0.1"), 0});
  return {"127.0.0.1", a.local_endpoint().port()};  // closed when `a` goes
}

TEST(relay_foreign_stream, a_downed_upstream_is_counted_logged_once_tapped_and_reset) {
  auto r = tapped_relay(dead_port());
  ASSERT_TRUE(r);
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 3; ++i) {
    client c(r->listen_endpoint());
    EXPECT_EQ(c.read(1, 10s).end, asio::error::connection_reset);
  }
  ASSERT_TRUE(eventually([&] { return r->live_connections() == 0; }));
  auto log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(r->counter("upstream.connect_failures"), 3u);
  std::size_t lines = 0;
  for (auto at = log.find("cannot connect to upstream"); at != std::string::npos;
       at = log.find("cannot connect to upstream", at + 1)) {
    ++lines;
  }
  EXPECT_EQ(lines, 1u) << log;  // one burst, one message
  auto failed = of_kind(*r, record_kind::connect_failed);
  ASSERT_EQ(failed.size(), 3u);
  EXPECT_EQ(failed[0].upstream_remote, r->config().upstream.str());
  EXPECT_NE(failed[0].reason.find("refused"), std::string::npos) << failed[0].reason;
  EXPECT_NE(to_json(failed[0]).find(R"("error": "Connection refused")"), std::string::npos)
      << to_json(failed[0]);
  EXPECT_TRUE(of_kind(*r, record_kind::open).empty());
  EXPECT_TRUE(of_kind(*r, record_kind::close).empty());
}

TEST(relay_foreign_stream, a_downed_upstream_can_close_its_clients_with_a_fin) {
  auto c = config_to(dead_port(), {});
  c.on_upstream_failure = close_mode::fin;
  c.log_connect_failures = false;
  auto r = start_relay(c);
  ASSERT_TRUE(r);
  client cl(r->listen_endpoint());
  EXPECT_EQ(cl.read(1, 10s).end, asio::error::eof);
  EXPECT_TRUE(eventually([&] { return r->counter("upstream.connect_failures") == 1; }));
}

TEST(relay_foreign_stream, on_upstream_failure_reads_from_yaml) {
  auto fin = parse_relays_yaml(
      "relays:\n  - upstream: 127.0.0.1:9\n    on_upstream_failure: fin\n  - upstream: "
      "127.0.0.1:9\n");
  ASSERT_TRUE(fin.ok()) << fin.error().message;
  EXPECT_EQ(fin.value()[0].on_upstream_failure, close_mode::fin);
  EXPECT_EQ(fin.value()[1].on_upstream_failure, close_mode::reset);  // the default
  auto bad =
      parse_relays_yaml("relays:\n  - upstream: 127.0.0.1:9\n    on_upstream_failure: hang\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find(
                ":3:26: relays[0].on_upstream_failure: must be reset or fin, got hang"),
            std::string::npos)
      << bad.error().message;
}

TEST(relay_foreign_stream, close_records_carry_bytes_each_way_duration_and_reason) {
  plain_peer echo(plain_peer::mode::echo);
  auto r = tapped_relay(echo.where(), {"reset dir=up after_bytes=100 connection=1"});
  ASSERT_TRUE(r);
  {
    client c(r->listen_endpoint());
    auto data = bytes(3000, 1);
    c.send(data);
    EXPECT_EQ(c.read(data.size(), 10s).data, data);
    c.send_fin();
    EXPECT_EQ(c.read(1, 10s).end, asio::error::eof);
  }
  {
    client c(r->listen_endpoint());
    c.send(bytes(500, 2));
    // The echo of the 100 bytes that went on may come back before the reset.
    auto got = c.read(1000, 10s);
    EXPECT_EQ(got.end, asio::error::connection_reset);
    EXPECT_LE(got.data.size(), 100u);
  }
  ASSERT_TRUE(eventually([&] { return of_kind(*r, record_kind::close).size() == 2; }));
  auto closes = of_kind(*r, record_kind::close);
  std::sort(closes.begin(), closes.end(),
            [](const auto& a, const auto& b) { return a.connection < b.connection; });
  EXPECT_EQ(closes[0].bytes_up, 3000u);
  EXPECT_EQ(closes[0].bytes_down, 3000u);
  EXPECT_EQ(closes[0].reason, "both directions ended");
  EXPECT_GE(closes[1].bytes_up, 100u);  // read (only 100 went on before the reset)
  EXPECT_LE(closes[1].bytes_up, 500u);
  EXPECT_EQ(closes[1].reason, "a reset fault fired");
  auto opens = of_kind(*r, record_kind::open);
  ASSERT_EQ(opens.size(), 2u);
  EXPECT_EQ(closes[0].duration_us, closes[0].time_us - opens[0].time_us);
  EXPECT_NE(to_json(closes[0]).find(R"("bytes_up": 3000, "bytes_down": 3000)"), std::string::npos)
      << to_json(closes[0]);
}

}  // namespace
}  // namespace faultlane::relays
