// Pipelined lanes (docs/architecture.md, "Pipelined lanes"): requests leave
// before earlier answers, answers are matched in order, and when the
// connection breaks every exchange in flight ends as the ambiguity rule
// says. Most tests talk to a scripted target that reads requests and
// writes answers (right or wrong) exactly when the test says, so each
// ordering is certain rather than likely.
#include <gtest/gtest.h>

#include "faultlane/core/failpoint.hpp"
#include "faultlane/core/frame.hpp"
#include "faultlane/testing/transport_fixture.hpp"
#include "pipeline_peers.hpp"

namespace faultlane {
namespace {

using namespace testing;
using namespace pipeline_testing;
using namespace std::chrono_literals;

// Requests leave before the first answer, at most lane_inflight_max of
// them; answers in order complete their own exchanges, payloads included.
TEST(transport_pipeline, requests_leave_before_answers_up_to_the_bound) {
  scripted_peer peer;
  auto initiator = start(one_lane(3));
  auto seg = initiator->open_segment(peer.descriptor()).value();
  batch_of work(*initiator, seg, "rrrrr");
  ASSERT_TRUE(peer.accept());
  std::vector<wire::request_frame> got;
  for (int i = 0; i < 3; ++i) {
    auto r = peer.next_request();
    ASSERT_TRUE(r) << "request " << i << " did not leave before any answer";
    got.push_back(*r);
  }
  // Bounded wait for something that must not happen: a fourth request
  // while three are unanswered.
  EXPECT_FALSE(peer.next_request(200ms)) << "more than lane_inflight_max in flight";
  for (int i = 0; i < 5; ++i) {
    peer.answer_ok(got[static_cast<std::size_t>(i)], sixteen);
    if (i + 3 < 5) {
      auto r = peer.next_request();
      ASSERT_TRUE(r) << "an answer did not free a slot";
      got.push_back(*r);
    }
  }
  EXPECT_EQ(work.codes(), std::vector<status>(5, status::ok));
  for (auto& b : work.buffers) EXPECT_EQ(b, sixteen);
  auto stats = initiator->stats();
  EXPECT_EQ(stats.connects, 1u);
  EXPECT_EQ(stats.requests_pipelined, 4u);  // requests 2, 3 at once; 4 and 5 behind 2 others
  EXPECT_EQ(stats.request_sends, 3u);       // 1 to 3 in one write; 4 and 5 one per answer
  EXPECT_TRUE(initiator->shutdown().ok());
}

// With lane_inflight_max 1 the next request waits for the answer.
TEST(transport_pipeline, one_in_flight_waits_for_each_answer) {
  scripted_peer peer;
  auto initiator = start(one_lane(1));
  auto seg = initiator->open_segment(peer.descriptor()).value();
  batch_of work(*initiator, seg, "rr");
  ASSERT_TRUE(peer.accept());
  auto first = peer.next_request();
  ASSERT_TRUE(first);
  EXPECT_FALSE(peer.next_request(200ms));
  peer.answer_ok(*first, sixteen);
  auto second = peer.next_request();
  ASSERT_TRUE(second);
  peer.answer_ok(*second, sixteen);
  EXPECT_EQ(work.codes(), std::vector<status>(2, status::ok));
  EXPECT_EQ(initiator->stats().requests_pipelined, 0u);
  EXPECT_TRUE(initiator->shutdown().ok());
}

// A refusal names its request and keeps the connection: the exchanges
// behind it go on, and the refused WRITE is definite.
TEST(transport_pipeline, a_refusal_ends_only_its_own_exchange) {
  scripted_peer peer;
  auto initiator = start(one_lane(4));
  auto seg = initiator->open_segment(peer.descriptor()).value();
  batch_of work(*initiator, seg, "wrw");
  ASSERT_TRUE(peer.accept());
  std::vector<wire::request_frame> got;
  for (int i = 0; i < 3; ++i) got.push_back(peer.next_request().value());
  peer.answer(wire::wire_status::range_rejected, got[0].request_id, 0);
  peer.answer_ok(got[1], sixteen);
  peer.answer_ok(got[2]);
  EXPECT_EQ(work.codes(), (std::vector<status>{status::range_rejected, status::ok, status::ok}));
  EXPECT_EQ(work.buffers[1], sixteen);
  EXPECT_EQ(initiator->stats().connects, 1u);
  EXPECT_TRUE(initiator->shutdown().ok());
}

// A lone READ reads its answer and payload in one scatter read. Requests
// that leave behind it meanwhile are answered right after it: when its
// answer is a refusal (no payload), that read takes the next answers'
// bytes too, and they must still reach their own exchanges.
TEST(transport_pipeline, answers_read_past_a_refused_lone_read_reach_their_exchanges) {
  scripted_peer peer;
  auto initiator = start(one_lane(4));
  auto seg = initiator->open_segment(peer.descriptor()).value();
  std::vector<std::byte> wide(64);
  auto lone_request = read_req(seg, 1, 0, wide.data(), wide.size());
  auto lone = initiator->submit(std::span(&lone_request, 1)).value();
  ASSERT_TRUE(peer.accept());
  auto first = peer.next_request();  // its answer's read is waiting now
  ASSERT_TRUE(first);
  batch_of behind(*initiator, seg, "rr");
  auto second = peer.next_request();
  auto third = peer.next_request();
  ASSERT_TRUE(second && third);
  // All three answers at once: the lone READ's 96-byte read takes the
  // refusal (32), the second answer (32 + 16) and half the third header.
  const auto other = pattern(16, 6);
  std::vector<std::byte> all;
  auto append = [&all](auto&& bytes) { all.insert(all.end(), bytes.begin(), bytes.end()); };
  append(
      wire::encode(wire::response_frame{wire::wire_status::range_rejected, first->request_id, 0}));
  append(wire::encode(wire::response_frame{wire::wire_status::ok, second->request_id, 16}));
  append(sixteen);
  append(wire::encode(wire::response_frame{wire::wire_status::ok, third->request_id, 16}));
  append(other);
  peer.send_raw(all);
  ASSERT_TRUE(lone->wait(20s));
  EXPECT_EQ(lone->status(0).code, status::range_rejected);
  EXPECT_EQ(behind.codes(), std::vector<status>(2, status::ok));
  EXPECT_EQ(behind.buffers[0], sixteen);
  EXPECT_EQ(behind.buffers[1], other);
  EXPECT_EQ(initiator->stats().connects, 1u);
  EXPECT_TRUE(initiator->shutdown().ok());
}

// A carried answer can be the one of a WRITE still leaving: when its last
// bytes go, the lane reads that answer from the carried bytes, breaks and
// settles at once, and must not go on as if still connected.
TEST(transport_pipeline, a_carried_rejection_of_a_write_still_leaving_settles_cleanly) {
  scripted_peer peer;
  auto initiator = start(one_lane(4));
  auto seg = initiator->open_segment(peer.descriptor()).value();
  std::vector<std::byte> wide(64);
  auto lone_request = read_req(seg, 1, 0, wide.data(), wide.size());
  auto lone = initiator->submit(std::span(&lone_request, 1)).value();
  ASSERT_TRUE(peer.accept());
  auto first = peer.next_request();
  ASSERT_TRUE(first);
  std::vector<std::byte> big(16u << 20);  // far more than the socket buffers take
  auto big_request = write_req(seg, 1, 0, big.data(), big.size());
  auto write = initiator->submit(std::span(&big_request, 1)).value();
  ASSERT_TRUE(peer.next_header());
  // The READ's refusal and a header rejection in one write: the lone READ's
  // 96-byte read takes both, and the rejection waits, carried, for the
  // WRITE whose body is still leaving.
  std::vector<std::byte> both;
  auto refusal =
      wire::encode(wire::response_frame{wire::wire_status::range_rejected, first->request_id, 0});
  auto rejection = wire::encode(wire::response_frame{wire::wire_status::bad_checksum, 0, 0});
  both.insert(both.end(), refusal.begin(), refusal.end());
  both.insert(both.end(), rejection.begin(), rejection.end());
  peer.send_raw(both);
  ASSERT_TRUE(lone->wait(20s));
  EXPECT_EQ(lone->status(0).code, status::range_rejected);
  ASSERT_TRUE(peer.drain(big.size()));  // the body leaves; the carried answer is read
  ASSERT_TRUE(write->wait(20s));
  EXPECT_EQ(write->status(0).code, status::protocol_error);  // alone: definite
  EXPECT_TRUE(initiator->shutdown().ok());
}

// An answer for another request (here the first answer was lost on the
// way) is a protocol error: the lane closes and every exchange in flight
// ends: WRITEs that left are ambiguous, READs get the connection's status.
// Nothing is sent again.
// docs/protocol.md: an ok answer commits exactly the requested length;
// more or less is a protocol error that closes the lane. A WRITE answered
// so ends ambiguous (the answer proves nothing about what ran); a READ,
// whose bytes are not trusted, fails.
TEST(transport_pipeline, an_ok_answer_committing_more_or_less_than_asked_is_a_protocol_error) {
  scripted_peer peer;
  auto initiator = start(one_lane(4));
  auto seg = initiator->open_segment(peer.descriptor()).value();
  {
    batch_of w(*initiator, seg, "w");
    ASSERT_TRUE(peer.accept());
    auto r = peer.next_request().value();
    peer.answer(wire::wire_status::ok, r.request_id, r.length + 1);
    EXPECT_EQ(w.codes(), std::vector<status>{status::ambiguous_write});
  }
  {
    batch_of rd(*initiator, seg, "r");
    ASSERT_TRUE(peer.accept());
    auto r = peer.next_request().value();
    peer.answer(wire::wire_status::ok, r.request_id, r.length - 8,
                std::span(sixteen).first(8));
    EXPECT_EQ(rd.codes(), std::vector<status>{status::protocol_error});
  }
  EXPECT_EQ(initiator->stats().connects, 2u);
  EXPECT_TRUE(initiator->shutdown().ok());
}

TEST(transport_pipeline, a_mismatched_answer_ends_everything_in_flight) {
  scripted_peer peer;
  auto initiator = start(one_lane(4));
  auto seg = initiator->open_segment(peer.descriptor()).value();
  batch_of work(*initiator, seg, "wrw");
  ASSERT_TRUE(peer.accept());
  std::vector<wire::request_frame> got;
  for (int i = 0; i < 3; ++i) got.push_back(peer.next_request().value());
  peer.answer_ok(got[1], sixteen);  // the first answer went missing
  EXPECT_EQ(work.codes(), (std::vector<status>{status::ambiguous_write, status::connection_failed,
                                               status::ambiguous_write}));
  EXPECT_FALSE(peer.accept(200ms)) << "a cut-off exchange was sent again";
  EXPECT_TRUE(initiator->shutdown().ok());
}

// A header rejection without an id says "not run" for the only exchange
// in flight; with more in flight, an earlier answer lost on the way could
// make it a later request's, so every WRITE that left is ambiguous.
TEST(transport_pipeline, a_header_rejection_is_definite_only_for_a_lone_exchange) {
  scripted_peer peer;
  auto initiator = start(one_lane(4));
  auto seg = initiator->open_segment(peer.descriptor()).value();
  {
    batch_of lone(*initiator, seg, "w");
    ASSERT_TRUE(peer.accept());
    ASSERT_TRUE(peer.next_request());
    peer.answer(wire::wire_status::bad_checksum, 0, 0);
    EXPECT_EQ(lone.codes(), std::vector<status>{status::protocol_error});
    peer.hang_up();
  }
  batch_of two(*initiator, seg, "ww");
  ASSERT_TRUE(peer.accept());
  ASSERT_TRUE(peer.next_request());
  ASSERT_TRUE(peer.next_request());
  peer.answer(wire::wire_status::bad_checksum, 0, 0);
  EXPECT_EQ(two.codes(), std::vector<status>(2, status::ambiguous_write));
  EXPECT_TRUE(initiator->shutdown().ok());
}

// A connection that breaks with WRITEs in flight and more queued: the ones
// that left are ambiguous, the queued ones never left and run on the next
// connection.
TEST(transport_pipeline, a_broken_connection_cuts_what_left_and_keeps_what_is_queued) {
  scripted_peer peer;
  auto initiator = start(one_lane(2));
  auto seg = initiator->open_segment(peer.descriptor()).value();
  batch_of work(*initiator, seg, "wwww");
  ASSERT_TRUE(peer.accept());
  ASSERT_TRUE(peer.next_request());
  ASSERT_TRUE(peer.next_request());
  peer.hang_up();
  ASSERT_TRUE(peer.accept()) << "the queued WRITEs did not reconnect";
  auto third = peer.next_request();
  auto fourth = peer.next_request();
  ASSERT_TRUE(third && fourth);
  peer.answer_ok(*third);
  peer.answer_ok(*fourth);
  EXPECT_EQ(work.codes(), (std::vector<status>{status::ambiguous_write, status::ambiguous_write,
                                               status::ok, status::ok}));
  EXPECT_TRUE(initiator->shutdown().ok());
}

// A target that answers the first of three READs and closes, the FIN in
// the answer's segment: the lane's read of that answer takes the FIN as
// well, and the next read must still see the end of file (the reactor
// reported both together, and no edge comes after). The two READs behind
// end with the connection at once, long before the progress deadline.
TEST(transport_pipeline, a_close_right_behind_an_answer_ends_the_exchanges_behind_it) {
  scripted_peer peer;
  auto config = one_lane(3);
  config.progress_timeout_ms = 60000;  // a lane that missed the end would wait for this
  auto initiator = start(config);
  auto seg = initiator->open_segment(peer.descriptor()).value();
  ASSERT_NO_FATAL_FAILURE(connect_lane(peer, *initiator, seg));
  batch_of work(*initiator, seg, "rrr");
  auto first = peer.next_request();
  ASSERT_TRUE(first);
  ASSERT_TRUE(peer.next_request());
  ASSERT_TRUE(peer.next_request());
  peer.answer_ok_then_close(*first, sixteen);
  const auto codes = work.codes(std::chrono::seconds(10));
  EXPECT_EQ(codes[0], status::ok);
  EXPECT_EQ(codes[1], status::connection_failed);
  EXPECT_EQ(codes[2], status::connection_failed);
  EXPECT_TRUE(initiator->shutdown().ok());
}

// A stalled exchange holds back only its own lane: its progress deadline
// fires and ends everything in flight there, while the other lane, on the
// same initiator, completes its work.
TEST(transport_pipeline, a_stall_holds_back_only_its_lane_and_its_deadline_fires) {
  scripted_peer stalled(0x5c1);
  scripted_peer healthy(0x5c2);
  auto config = one_lane(4);
  config.progress_timeout_ms = 300;
  auto initiator = start(config);
  auto stuck = initiator->open_segment(stalled.descriptor()).value();
  auto fine = initiator->open_segment(healthy.descriptor()).value();
  const auto submitted = std::chrono::steady_clock::now();
  batch_of held(*initiator, stuck, "rrr");
  batch_of served(*initiator, fine, "rrr");
  ASSERT_TRUE(stalled.accept());
  ASSERT_TRUE(healthy.accept());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(stalled.next_request());  // never answered
  for (int i = 0; i < 3; ++i) healthy.answer_ok(healthy.next_request().value(), sixteen);
  EXPECT_EQ(served.codes(), std::vector<status>(3, status::ok));
  EXPECT_EQ(held.codes(), std::vector<status>(3, status::timeout));
  EXPECT_GE(std::chrono::steady_clock::now() - submitted, 300ms);  // the deadline, not sooner
  EXPECT_TRUE(initiator->shutdown().ok());
}

// Shutdown with exchanges in flight ends them all: the WRITE that left is
// ambiguous, the READ shutting_down.
TEST(transport_pipeline, shutdown_ends_every_exchange_in_flight) {
  scripted_peer peer;
  auto initiator = start(one_lane(4));
  auto seg = initiator->open_segment(peer.descriptor()).value();
  batch_of work(*initiator, seg, "wr");
  ASSERT_TRUE(peer.accept());
  ASSERT_TRUE(peer.next_request());
  ASSERT_TRUE(peer.next_request());
  (void)initiator->shutdown();
  EXPECT_EQ(work.codes(), (std::vector<status>{status::ambiguous_write, status::shutting_down}));
}

// Against the real target, a refused WRITE no longer closes the
// connection: pipelined WRITEs to a stale registration each get their own
// answer, and the connection stays.
TEST(transport_pipeline, the_target_serves_requests_behind_a_refused_write) {
  auto target = start(loopback_config());
  auto initiator = start(one_lane(8));
  std::vector<std::byte> memory(64);
  auto id =
      target->register_buffer(memory.data(), memory.size(), permission::remote_read_write).value();
  auto seg = initiator->open_segment(target->descriptor()).value();
  std::vector<std::byte> data = pattern(16, 9);
  std::vector<transfer_request> requests{
      write_req(seg, id + 100, 0, data.data(), 16), write_req(seg, id, 0, data.data(), 16),
      write_req(seg, id, 64, data.data(), 16), write_req(seg, id, 16, data.data(), 16)};
  auto batch = initiator->submit(requests).value();
  ASSERT_TRUE(batch->wait(20s));
  EXPECT_EQ(batch->status(0).code, status::stale_registration);
  EXPECT_EQ(batch->status(1).code, status::ok);
  EXPECT_EQ(batch->status(2).code, status::range_rejected);
  EXPECT_EQ(batch->status(3).code, status::ok);
  EXPECT_EQ(initiator->stats().connects, 1u);
  EXPECT_EQ(target->stats().sessions_accepted, 1u);
  EXPECT_TRUE(initiator->shutdown().ok());
  EXPECT_TRUE(target->shutdown().ok());
}

}  // namespace
}  // namespace faultlane
