// How a fault's trigger picks what it fires on (docs/faults.md, Triggers):
// each key on its own, against faultlane frames sent straight through a
// relay to a sink, with the exact counters, zeros included.
#include <gtest/gtest.h>

#include "relay_frames.hpp"

namespace faultlane::relays {
namespace {

using namespace testing;
using wire::opcode;
using wire::wire_status;

// A relay that decodes frames; `through` points it at a fresh sink.
std::unique_ptr<relay> frame_relay(std::vector<std::string> faults, std::size_t rail = 0) {
  auto c = config_to({"127.0.0.1", 9}, std::move(faults), protocol::faultlane);
  c.rail = rail;
  return start_relay(c);
}

// Functions, not globals: encoding needs the codec's tables initialised.
std::vector<char> read1() { return request(opcode::read, 1); }
std::vector<char> write2() { return request(opcode::write, 2, 16); }
std::vector<char> read3() { return request(opcode::read, 3); }

// Rule: frame=N is frame N of the direction, counted from 0 on each connection.
TEST(relay_trigger, frame_n_is_that_frame_of_every_connection) {
  auto r = frame_relay({"drop_frame dir=up frame=1"});
  EXPECT_EQ(through(*r, joined({read1(), write2(), read3()})), joined({read1(), read3()}));
  EXPECT_EQ(through(*r, joined({read1(), write2(), read3()})), joined({read1(), read3()}));
  expect_counters(*r, {{"drop_frame.up", 2}}, 2);
}

// Rule: opcode= matches frames of that opcode only.
TEST(relay_trigger, opcode_matches_frames_of_that_opcode_only) {
  auto r = frame_relay({"drop_frame dir=up opcode=write"});
  EXPECT_EQ(through(*r, joined({read1(), write2(), read3()})), joined({read1(), read3()}));
  expect_counters(*r, {{"drop_frame.up", 1}}, 1);
}

// Rule: request_id= matches the frame with that id only.
TEST(relay_trigger, request_id_matches_that_id_only) {
  auto r = frame_relay({"drop_frame dir=up request_id=3"});
  EXPECT_EQ(through(*r, joined({read1(), write2(), read3()})), joined({read1(), write2()}));
  expect_counters(*r, {{"drop_frame.up", 1}}, 1);
}

// Rule: a fault acts on its own direction only: dir=down never sees requests.
TEST(relay_trigger, a_fault_of_the_other_direction_never_fires) {
  auto r = frame_relay({"drop_frame dir=down", "half_close dir=down"});
  const auto all = joined({read1(), write2(), read3()});
  EXPECT_EQ(through(*r, all), all);
  expect_counters(*r, {{"drop_frame.down", 0}, {"half_close.down", 0}}, 1);
}

// Rule: count=N is relay-wide: N firings over all connections, then none.
TEST(relay_trigger, count_is_spent_across_connections) {
  auto r = frame_relay({"drop_frame dir=up count=2"});
  EXPECT_EQ(through(*r, joined({read1(), write2(), read3()})), read3());
  EXPECT_EQ(through(*r, joined({read1(), write2()})), joined({read1(), write2()}));
  expect_counters(*r, {{"drop_frame.up", 2}}, 2);
}

// Rule: connection=N applies only to the N-th accepted connection, from 0.
TEST(relay_trigger, connection_n_applies_to_that_connection_only) {
  auto r = frame_relay({"drop_frame dir=up connection=1"});
  EXPECT_EQ(through(*r, joined({read1(), read3()})), joined({read1(), read3()}));
  EXPECT_EQ(through(*r, joined({read1(), read3()})), std::vector<char>{});
  EXPECT_EQ(through(*r, joined({read1(), read3()})), joined({read1(), read3()}));
  expect_counters(*r, {{"drop_frame.up", 2}}, 3);
}

// Rule: rail=R applies only if the relay's rail is R.
TEST(relay_trigger, rail_applies_on_the_relays_own_rail_only) {
  auto r = frame_relay(
      {"drop_frame dir=up rail=0 name=rail0", "drop_frame dir=up opcode=write rail=1 name=rail1"},
      1);
  EXPECT_EQ(through(*r, joined({read1(), write2(), read3()})), joined({read1(), read3()}));
  expect_counters(*r, {{"rail0", 0}, {"rail1", 1}}, 1);
}

// Rule: probability=0 never fires (frame faults draw per frame, the others
// per connection) and probability=1 always does.
TEST(relay_trigger, probability_zero_never_fires_and_one_always_does) {
  auto r = frame_relay({"drop_frame dir=up probability=0 name=never",
                        "latency dir=up ms=1 probability=0 name=never_latency",
                        "drop_frame dir=up opcode=write probability=1 name=always"});
  EXPECT_EQ(through(*r, joined({read1(), write2(), read3()})), joined({read1(), read3()}));
  expect_counters(*r, {{"never", 0}, {"never_latency", 0}, {"always", 1}}, 1);
}

// Rule: a positional fault with frame= and header_byte=K fires after K
// bytes of that frame's header; with a frame filter alone, at its header.
TEST(relay_trigger, a_positional_fault_fires_at_its_frame_and_header_byte) {
  auto at_byte = frame_relay({"half_close dir=up frame=1 header_byte=7"});
  auto expected = read1();
  const auto write = write2();
  expected.insert(expected.end(), write.begin(), write.begin() + 7);
  EXPECT_EQ(through(*at_byte, joined({read1(), write2(), read3()})), expected);
  expect_counters(*at_byte, {{"half_close.up", 1}}, 1);
  auto at_header = frame_relay({"half_close dir=up request_id=3"});
  EXPECT_EQ(through(*at_header, joined({read1(), write2(), read3()})), joined({read1(), write2()}));
  expect_counters(*at_header, {{"half_close.up", 1}}, 1);
}

// What a client reads back from a responder that answers `reply` once it
// has heard `wait_bytes`.
std::vector<char> answers(relay& r, responder& upstream, const std::vector<char>& requests) {
  EXPECT_TRUE(r.set_upstream(upstream.where()).ok());
  client c(r.listen_endpoint());
  c.send(requests);
  auto got = c.read(1 << 16, 10s);
  EXPECT_EQ(got.end, asio::error::eof);
  return got.data;
}

// Rule: a response matches its request's opcode (opcode= on dir=down).
TEST(relay_trigger, a_response_takes_its_requests_opcode) {
  auto r = frame_relay({"drop_frame dir=down opcode=write"});
  responder upstream(read1().size() + write2().size(), joined({response(1), response(2)}));
  EXPECT_EQ(answers(*r, upstream, joined({read1(), write2()})), response(1));
  expect_counters(*r, {{"drop_frame.down", 1}}, 1);
}

// Rule: a dropped request expects no response: the next response pairs
// with the next request that went on.
TEST(relay_trigger, a_dropped_request_is_skipped_when_responses_pair) {
  auto r = frame_relay({"drop_frame dir=up request_id=1 name=up_reads",
                        "drop_frame dir=down opcode=read name=down_reads"});
  responder upstream(write2().size(), response(2));
  EXPECT_EQ(answers(*r, upstream, joined({read1(), write2()})), response(2));
  expect_counters(*r, {{"up_reads", 1}, {"down_reads", 0}}, 1);
}

// Rule: status= matches responses with that status, by name or by number.
TEST(relay_trigger, status_matches_by_name_or_number) {
  auto r = frame_relay({"drop_frame dir=down status=stale_registration name=by_name",
                        "drop_frame dir=down status=6 name=by_code"});
  const auto reads = joined({read1(), request(opcode::read, 2), read3()});
  responder upstream(
      reads.size(),
      joined({response(1), response(2, wire_status::stale_registration), response(3)}));
  EXPECT_EQ(answers(*r, upstream, reads), joined({response(1), response(3)}));
  expect_counters(*r, {{"by_name", 1}, {"by_code", 1}}, 1);
}

}  // namespace
}  // namespace faultlane::relays
