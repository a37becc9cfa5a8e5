// What a tap records (docs/taps.md): open and close with their addresses,
// each frame and each firing with where it was, JSON that quotes any name,
// the queries, and a tap file started afresh or appended to; each kind's
// JSON line as docs/taps.md shows it.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "relay_frames.hpp"

namespace faultlane::relays {
namespace {

using namespace testing;
using wire::opcode;

std::vector<tap_record> of_kind(relay& r, record_kind k) {
  std::vector<tap_record> out;
  for (auto& rec : r.taps().records()) {
    if (rec.kind == k) out.push_back(rec);
  }
  return out;
}

relay_config tapped(const address& upstream, std::vector<std::string> faults = {}) {
  auto c = config_to(upstream, std::move(faults), protocol::faultlane);
  c.tap = true;
  c.name = "tapper";
  c.rail = 2;
  return c;
}

bool is_loopback_address(const std::string& text) { return text.rfind("127.0.0.1:", 0) == 0; }

// Rule: open and close name the relay, its rail, the connection's index,
// the client, the relay's upstream side and the upstream.
TEST(relay_tap_rules, open_and_close_carry_the_connections_addresses) {
  plain_peer echo(plain_peer::mode::echo);
  auto r = start_relay(tapped(echo.where()));
  for (int i = 0; i < 2; ++i) {
    client c(r->listen_endpoint());
    c.send_fin();
    EXPECT_EQ(c.read(1, 10s).end, asio::error::eof);
  }
  ASSERT_TRUE(eventually([&] { return of_kind(*r, record_kind::close).size() == 2; }));
  auto opens = of_kind(*r, record_kind::open);
  auto closes = of_kind(*r, record_kind::close);
  ASSERT_EQ(opens.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    for (const auto* rec : {&opens[i], &closes[i]}) {
      EXPECT_EQ(rec->relay, "tapper");
      EXPECT_EQ(rec->rail, 2u);
      EXPECT_EQ(rec->connection, i);
      EXPECT_TRUE(is_loopback_address(rec->client_address)) << rec->client_address;
      EXPECT_TRUE(is_loopback_address(rec->upstream_local)) << rec->upstream_local;
      EXPECT_NE(rec->upstream_local, rec->client_address);
      EXPECT_EQ(rec->upstream_remote, echo.where().str());
    }
  }
}

// Rule: a frame record says where the frame was and what its header held:
// a request's registration, offset and length, a response's status and
// committed bytes, each with its op and request id.
TEST(relay_tap_rules, frame_records_carry_each_headers_fields) {
  const auto requests = joined({request(opcode::read, 1), request(opcode::write, 2, 16)});
  responder upstream(requests.size(),
                     joined({response(1, wire::wire_status::ok),
                             response(2, wire::wire_status::stale_registration, 16)}));
  auto r = start_relay(tapped(upstream.where()));
  client c(r->listen_endpoint());
  c.send(requests);
  EXPECT_EQ(c.read(1 << 16, 10s).end, asio::error::eof);
  ASSERT_TRUE(eventually([&] { return r->taps().frames({}).size() == 4; }));
  auto up = r->taps().frames([](const tap_record& f) { return f.request; });
  auto down = r->taps().frames([](const tap_record& f) { return !f.request; });
  ASSERT_EQ(up.size(), 2u);
  ASSERT_EQ(down.size(), 2u);
  EXPECT_EQ(up[1].dir, direction::up);
  EXPECT_EQ(up[1].frame_index, 1u);
  EXPECT_EQ(up[1].stream_offset, wire::request_frame_bytes);
  EXPECT_EQ(up[1].op, opcode::write);
  EXPECT_EQ(up[1].request_id, 2u);
  EXPECT_EQ(up[1].registration_id, 9u);
  EXPECT_EQ(up[1].remote_offset, 4096u);
  EXPECT_EQ(up[1].length, 16u);
  EXPECT_EQ(down[1].dir, direction::down);
  EXPECT_EQ(down[1].frame_index, 1u);
  EXPECT_EQ(down[1].stream_offset, wire::response_frame_bytes);
  EXPECT_EQ(down[1].op, opcode::write);
  EXPECT_EQ(down[1].request_id, 2u);
  EXPECT_EQ(down[1].status, static_cast<std::uint16_t>(wire::wire_status::stale_registration));
  EXPECT_EQ(down[1].length, 16u);
  EXPECT_EQ(down[0].op, opcode::read);
  EXPECT_EQ(down[0].status, 0u);
}

// Rule: a fault record names the fault, its direction, the frame it fired
// on and that frame's place in the stream; one per firing.
TEST(relay_tap_rules, a_fault_record_says_which_frame_and_where) {
  auto r = start_relay(tapped({"127.0.0.1", 9}, {"drop_frame dir=up frame=1 name=second"}));
  through(*r,
          joined({request(opcode::read, 1), request(opcode::read, 2), request(opcode::read, 3)}));
  auto faults = of_kind(*r, record_kind::fault);
  ASSERT_EQ(faults.size(), 1u);
  EXPECT_EQ(faults[0].fault, "second");
  EXPECT_EQ(faults[0].dir, direction::up);
  EXPECT_EQ(faults[0].frame_index, 1u);
  EXPECT_EQ(faults[0].stream_offset, wire::request_frame_bytes);
  EXPECT_EQ(faults[0].connection, 0u);
  EXPECT_EQ(faults[0].relay, "tapper");
}

// Rule: names in JSON lines are quoted with `"` and `\` escaped and control
// characters as \u00XX, so every line parses.
TEST(relay_tap_rules, json_quotes_every_name) {
  tap_record r;
  r.kind = record_kind::fault;
  r.relay = "a\"b\\c\n";
  r.fault = "f";
  EXPECT_NE(to_json(r).find(R"("relay": "a\"b\\c\u000a")"), std::string::npos) << to_json(r);
}

tap_record record_of(record_kind k, std::uint64_t t_us, const char* relay_name, std::size_t rail,
                     std::uint64_t conn) {
  return {.kind = k, .time_us = t_us, .relay = relay_name, .rail = rail, .connection = conn};
}

// `r` with the addresses of the docs' open and close examples.
tap_record with_docs_addresses(tap_record r) {
  r.client_address = "127.0.0.2:40112";
  r.upstream_local = "127.0.0.2:51290";
  r.upstream_remote = "127.0.0.2:41877";
  return r;
}

// Rule: each kind of record is one JSON line with the fields docs/taps.md
// gives it, in that order: a request frame its registration, offset and
// length, a response frame its status and committed bytes (the lines are
// the docs' examples).
TEST(relay_tap_rules, each_kind_of_record_is_the_json_line_the_docs_show) {
  EXPECT_EQ(to_json(with_docs_addresses(record_of(record_kind::open, 812, "rail1", 1, 0))),
            R"({"kind": "open", "t_us": 812, "relay": "rail1", "rail": 1, "conn": 0, )"
            R"("client": "127.0.0.2:40112", "upstream_local": "127.0.0.2:51290", )"
            R"("upstream_remote": "127.0.0.2:41877"})");
  auto request = record_of(record_kind::frame, 955, "rail1", 1, 0);
  request.request_id = 17;
  request.registration_id = 1523452311;
  request.remote_offset = 2109497;
  request.length = 2097153;
  EXPECT_EQ(to_json(request),
            R"({"kind": "frame", "t_us": 955, "relay": "rail1", "rail": 1, "conn": 0, )"
            R"("dir": "up", "frame": 0, "stream_offset": 0, "type": "request", "op": "read", )"
            R"("request_id": 17, "registration": 1523452311, "offset": 2109497, )"
            R"("length": 2097153})");
  auto answer = record_of(record_kind::frame, 960, "rail1", 1, 0);
  answer.dir = direction::down;
  answer.frame_index = 2;
  answer.stream_offset = 64;
  answer.request = false;
  answer.op = opcode::write;
  answer.request_id = 18;
  answer.status = static_cast<std::uint16_t>(wire::wire_status::stale_registration);
  answer.length = 16;
  answer.registration_id = 5;  // a request's fields are not an answer's
  EXPECT_EQ(to_json(answer),
            R"({"kind": "frame", "t_us": 960, "relay": "rail1", "rail": 1, "conn": 0, )"
            R"("dir": "down", "frame": 2, "stream_offset": 64, "type": "response", )"
            R"("op": "write", "request_id": 18, "status": "stale_registration", )"
            R"("committed": 16})");
  auto fault = record_of(record_kind::fault, 1210, "rail0", 0, 0);
  fault.dir = direction::down;
  fault.fault = "drop_frame.down";
  EXPECT_EQ(to_json(fault),
            R"({"kind": "fault", "t_us": 1210, "relay": "rail0", "rail": 0, "conn": 0, )"
            R"("dir": "down", "fault": "drop_frame.down", "frame": 0, "stream_offset": 0})");
  auto write = record_of(record_kind::write, 4390, "relay", 0, 0);
  write.dir = direction::down;
  write.stream_offset = 1000;
  write.length = 97;
  write.due_us = 4388;
  EXPECT_EQ(to_json(write),
            R"({"kind": "write", "t_us": 4390, "relay": "relay", "rail": 0, "conn": 0, )"
            R"("dir": "down", "stream_offset": 1000, "bytes": 97, "due_us": 4388})");
}

// Rule: close carries open's addresses and the bytes each way, how long
// the connection lived and why it closed; connect_failed where it went and
// the error; decode_error its direction and the error (the docs' examples).
TEST(relay_tap_rules, close_connect_failed_and_decode_error_lines_carry_their_fields) {
  auto close = with_docs_addresses(record_of(record_kind::close, 9120, "rail1", 1, 0));
  close.bytes_up = 2097201;
  close.bytes_down = 2097185;
  close.duration_us = 8308;
  close.reason = "both directions ended";
  EXPECT_EQ(to_json(close),
            R"({"kind": "close", "t_us": 9120, "relay": "rail1", "rail": 1, "conn": 0, )"
            R"("client": "127.0.0.2:40112", "upstream_local": "127.0.0.2:51290", )"
            R"("upstream_remote": "127.0.0.2:41877", "bytes_up": 2097201, )"
            R"("bytes_down": 2097185, "duration_us": 8308, "reason": "both directions ended"})");
  auto failed = record_of(record_kind::connect_failed, 9544, "rail1", 1, 1);
  failed.client_address = "127.0.0.2:40120";
  failed.upstream_remote = "127.0.0.2:41877";
  failed.reason = "Connection refused";
  EXPECT_EQ(to_json(failed),
            R"({"kind": "connect_failed", "t_us": 9544, "relay": "rail1", "rail": 1, "conn": 1, )"
            R"("client": "127.0.0.2:40120", "upstream_remote": "127.0.0.2:41877", )"
            R"("error": "Connection refused"})");
  auto decode = record_of(record_kind::decode_error, 5, "r", 0, 2);
  decode.fault = "request 1 at byte 48: bad_magic (byte 0 of the header)";
  EXPECT_EQ(to_json(decode),
            R"({"kind": "decode_error", "t_us": 5, "relay": "r", "rail": 0, "conn": 2, )"
            R"x("dir": "up", "error": "request 1 at byte 48: bad_magic (byte 0 of the header)"})x");
}

tap_record frame_record(std::size_t rail, bool is_request, opcode op) {
  tap_record r;
  r.kind = record_kind::frame;
  r.rail = rail;
  r.request = is_request;
  r.op = op;
  return r;
}

// Rule: frames() keeps frame records (through a filter), READ requests are
// grouped by rail (not responses, not WRITEs), count() counts one kind,
// take_records() hands over every record in order and leaves none, and
// clear() forgets everything.
TEST(relay_tap_rules, queries_see_what_they_name_and_clear_forgets) {
  tap t;
  t.record(frame_record(0, true, opcode::read));
  t.record(frame_record(1, true, opcode::read));
  t.record(frame_record(1, true, opcode::write));
  t.record(frame_record(1, false, opcode::read));
  tap_record fault;
  fault.kind = record_kind::fault;
  t.record(fault);
  EXPECT_EQ(t.frames({}).size(), 4u);
  EXPECT_EQ(t.frames([](const tap_record& f) { return f.rail == 1; }).size(), 3u);
  auto by_rail = t.read_requests_by_rail();
  ASSERT_EQ(by_rail.size(), 2u);
  EXPECT_EQ(by_rail[0].size(), 1u);
  EXPECT_EQ(by_rail[1].size(), 1u);
  EXPECT_EQ(t.count(record_kind::fault), 1u);
  EXPECT_EQ(t.count(record_kind::frame), 4u);
  const auto before = t.records();
  const auto taken = t.take_records();
  ASSERT_EQ(taken.size(), 5u);
  for (std::size_t i = 0; i < taken.size(); ++i) {
    EXPECT_EQ(taken[i].kind, before[i].kind);
    EXPECT_EQ(taken[i].rail, before[i].rail);
    EXPECT_EQ(taken[i].op, before[i].op);
  }
  EXPECT_TRUE(t.records().empty());
  t.record(fault);
  t.clear();
  EXPECT_TRUE(t.records().empty());
  EXPECT_EQ(t.count(record_kind::frame), 0u);
}

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Rule: a tap file starts afresh unless tap_append asks to add to it.
TEST(relay_tap_rules, a_tap_file_starts_afresh_unless_appended_to) {
  plain_peer echo(plain_peer::mode::echo);
  const auto path = ::testing::TempDir() + "faultlane_tap_rules_" + std::to_string(::getpid());
  for (bool append : {false, true}) {
    std::ofstream(path) << "{\"kind\": \"before\"}\n";
    auto c = tapped(echo.where());
    c.tap_path = path;
    c.tap_append = append;
    auto r = start_relay(c);
    {
      client cl(r->listen_endpoint());
      cl.send_fin();
      EXPECT_EQ(cl.read(1, 10s).end, asio::error::eof);
    }
    ASSERT_TRUE(eventually([&] { return r->taps().count(record_kind::close) == 1; }));
    r.reset();
    auto lines = lines_of(path);
    ASSERT_FALSE(lines.empty());
    EXPECT_EQ(lines.front() == "{\"kind\": \"before\"}", append) << lines.front();
    EXPECT_NE(lines.back().find("\"kind\": \"close\""), std::string::npos) << lines.back();
  }
  std::remove(path.c_str());
}

}  // namespace
}  // namespace faultlane::relays
